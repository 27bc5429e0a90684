"""torchrl's path ``torchrl.trainers.algorithms.reinforce``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import ReinforceTrainer

__all__ = ["ReinforceTrainer"]
