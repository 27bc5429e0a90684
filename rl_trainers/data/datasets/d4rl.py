"""torchrl's ``torchrl.data.datasets.d4rl`` path: ``D4RLExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import D4RLExperienceReplay

__all__ = ["D4RLExperienceReplay"]
