"""torchrl's path ``torchrl.trainers.algorithms.dqn``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import DQNTrainer

__all__ = ["DQNTrainer"]
