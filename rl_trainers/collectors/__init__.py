"""Data collectors: play a policy in environments and yield ``[num_envs, T]`` batches."""

from rl_trainers.collectors.collectors import DataCollectorBase, SyncDataCollector
from rl_trainers.collectors.multi import (
    MultiaSyncDataCollector,
    MultiSyncDataCollector,
    aSyncDataCollector,
)
from rl_trainers.collectors.utils import split_trajectories
from rl_trainers.envs.utils import RandomPolicy

# torchrl's newer names of the same classes (its configs target torchrl.collectors.Collector...)
BaseCollector = DataCollectorBase
Collector = SyncDataCollector
AsyncCollector = aSyncDataCollector
MultiSyncCollector = MultiSyncDataCollector
MultiAsyncCollector = MultiaSyncDataCollector

__all__ = [
    "AsyncCollector",
    "BaseCollector",
    "Collector",
    "DataCollectorBase",
    "MultiAsyncCollector",
    "MultiSyncCollector",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "RandomPolicy",
    "SyncDataCollector",
    "aSyncDataCollector",
    "split_trajectories",
]
