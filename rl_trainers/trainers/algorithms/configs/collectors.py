"""torchrl's path ``torchrl.trainers.algorithms.configs.collectors``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.collectors`.
"""

from rl_trainers.configs.collectors import (
    MultiaSyncDataCollectorConfig,
    MultiSyncDataCollectorConfig,
    SyncDataCollectorConfig,
)

__all__ = [
    "MultiSyncDataCollectorConfig",
    "MultiaSyncDataCollectorConfig",
    "SyncDataCollectorConfig",
]
