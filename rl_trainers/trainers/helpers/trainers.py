"""torchrl's path ``torchrl.trainers.helpers.trainers``: an alias, no logic.

The builders, in torchrl's call form, are in :mod:`rl_trainers.compat.torchrl.helpers`.
"""

from rl_trainers.compat.torchrl.helpers import (
    make_trainer,
)

__all__ = [
    "make_trainer",
]
