"""torchrl's path ``torchrl.trainers.algorithms.ppo``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import PPOTrainer

__all__ = ["PPOTrainer"]
