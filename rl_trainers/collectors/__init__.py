"""Data collectors: play a policy in environments and yield ``[num_envs, T]`` batches."""

from rl_trainers.collectors.collectors import DataCollectorBase, SyncDataCollector
from rl_trainers.collectors.multi import MultiaSyncDataCollector, MultiSyncDataCollector
from rl_trainers.collectors.utils import split_trajectories

__all__ = [
    "DataCollectorBase",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "SyncDataCollector",
    "split_trajectories",
]
