"""torchrl's ``torchrl.data.datasets.openx`` path: ``OpenXExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import OpenXExperienceReplay

__all__ = ["OpenXExperienceReplay"]
