"""torchrl's path ``torchrl.trainers.algorithms.on_policy``: an alias, no logic.

The trainer in torchrl's constructor form, from :mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import OnPolicyTrainer

__all__ = ["OnPolicyTrainer"]
