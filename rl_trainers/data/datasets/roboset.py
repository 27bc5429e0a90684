"""torchrl's ``torchrl.data.datasets.roboset`` path: ``RobosetExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import RobosetExperienceReplay

__all__ = ["RobosetExperienceReplay"]
