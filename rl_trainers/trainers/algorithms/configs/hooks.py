"""torchrl's path ``torchrl.trainers.algorithms.configs.hooks``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_log_scalar,
)

__all__ = [
    "_make_log_scalar",
]
