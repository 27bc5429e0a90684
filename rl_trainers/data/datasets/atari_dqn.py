"""torchrl's ``torchrl.data.datasets.atari_dqn`` path: ``AtariDQNExperienceReplay`` (not included, see the package)."""

from rl_trainers.data.datasets import AtariDQNExperienceReplay

__all__ = ["AtariDQNExperienceReplay"]
