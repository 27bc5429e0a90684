"""torchrl's path ``torchrl.trainers.algorithms.configs.utils``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.utils`.
"""

from rl_trainers.configs.utils import (
    AdamConfig,
    AdamWConfig,
    LRSchedulerConfig,
    RMSpropConfig,
    SGDConfig,
)

__all__ = [
    "AdamConfig",
    "AdamWConfig",
    "LRSchedulerConfig",
    "RMSpropConfig",
    "SGDConfig",
]
