"""torchrl's ``torchrl.data.datasets.minari_data`` path: ``MinariExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import MinariExperienceReplay

__all__ = ["MinariExperienceReplay"]
