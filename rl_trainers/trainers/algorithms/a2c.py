"""torchrl's path ``torchrl.trainers.algorithms.a2c``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import A2CTrainer

__all__ = ["A2CTrainer"]
