"""torchrl's path ``torchrl.trainers.algorithms.a2c``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.trainers`.
"""

from rl_trainers.compat.torchrl.trainers import (
    A2CTrainer,
)

__all__ = [
    "A2CTrainer",
]
