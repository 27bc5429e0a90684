"""torchrl's ``torchrl.data.datasets.openml`` path: ``OpenMLExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import OpenMLExperienceReplay

__all__ = ["OpenMLExperienceReplay"]
