"""Replay buffers (storages, samplers, writers) and collector post-processing."""

from rl_trainers.data.postprocs import MultiStep
from rl_trainers.data.replay_buffers import ReplayBuffer, TensorDictReplayBuffer
from rl_trainers.data.samplers import (
    PrioritizedSampler,
    RandomSampler,
    Sampler,
    SamplerWithoutReplacement,
)
from rl_trainers.data.storages import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    Storage,
    TensorStorage,
)
from rl_trainers.data.writers import RoundRobinWriter, Writer

__all__ = [
    "LazyMemmapStorage",
    "LazyTensorStorage",
    "ListStorage",
    "MultiStep",
    "PrioritizedSampler",
    "RandomSampler",
    "ReplayBuffer",
    "RoundRobinWriter",
    "Sampler",
    "SamplerWithoutReplacement",
    "Storage",
    "TensorDictReplayBuffer",
    "TensorStorage",
    "Writer",
]
