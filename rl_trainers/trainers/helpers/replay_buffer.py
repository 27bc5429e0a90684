"""torchrl's path ``torchrl.trainers.helpers.replay_buffer``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.helpers`.
"""

from rl_trainers.compat.torchrl.helpers import (
    make_replay_buffer,
)

__all__ = [
    "make_replay_buffer",
]
