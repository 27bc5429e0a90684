"""torchrl's module path ``torchrl.trainers.helpers.collectors`` (the builders live in
:mod:`rl_trainers.trainers.helpers.builders`)."""

from rl_trainers.trainers.helpers.builders import (
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
