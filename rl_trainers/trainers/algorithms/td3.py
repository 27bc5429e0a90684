"""torchrl's path ``torchrl.trainers.algorithms.td3``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import TD3Trainer

__all__ = ["TD3Trainer"]
