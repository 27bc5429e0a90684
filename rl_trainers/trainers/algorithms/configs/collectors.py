"""torchrl's path ``torchrl.trainers.algorithms.configs.collectors``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.collectors` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_sync_collector_with_cross_references,
)
from rl_trainers.configs.collectors import (
    MultiaSyncDataCollectorConfig,
    MultiSyncDataCollectorConfig,
    SyncDataCollectorConfig,
)

__all__ = [
    "MultiSyncDataCollectorConfig",
    "MultiaSyncDataCollectorConfig",
    "SyncDataCollectorConfig",
    "_make_sync_collector_with_cross_references",
]
