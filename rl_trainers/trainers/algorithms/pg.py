"""torchrl's path ``torchrl.trainers.algorithms.pg``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import PGTrainer, ReinforceTrainer

__all__ = ["PGTrainer", "ReinforceTrainer"]
