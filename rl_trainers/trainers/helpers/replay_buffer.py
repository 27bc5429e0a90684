"""torchrl's path ``torchrl.trainers.helpers.replay_buffer``: an alias, no logic.

The builders, in torchrl's call form, are in :mod:`rl_trainers.compat.torchrl.helpers`.
"""

from rl_trainers.compat.torchrl.helpers import (
    make_replay_buffer,
)

__all__ = [
    "make_replay_buffer",
]
