"""torchrl's path ``torchrl.trainers.helpers.collectors``: an alias, no logic.

The builders, in torchrl's call form, are in :mod:`rl_trainers.compat.torchrl.helpers`.
"""

from rl_trainers.compat.torchrl.helpers import (
    make_collector_offpolicy,
    make_collector_onpolicy,
    sync_async_collector,
    sync_sync_collector,
)

__all__ = [
    "make_collector_offpolicy",
    "make_collector_onpolicy",
    "sync_async_collector",
    "sync_sync_collector",
]
