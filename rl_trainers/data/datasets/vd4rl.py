"""torchrl's ``torchrl.data.datasets.vd4rl`` path: ``VD4RLExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import VD4RLExperienceReplay

__all__ = ["VD4RLExperienceReplay"]
