"""torchrl's ``torchrl.data.datasets.gen_dgrl`` path: ``GenDGRLExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import GenDGRLExperienceReplay

__all__ = ["GenDGRLExperienceReplay"]
