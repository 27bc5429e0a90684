"""Replay buffers, laid out as ``torchrl.data.replay_buffers``: ``replay_buffers`` (the
buffer classes), ``storages``, ``samplers`` and ``writers``; ``ensemble`` holds the
ensembles of buffers and of their components.

``from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement`` works as
torchrl's path does; everything is also importable from :mod:`rl_trainers.data`.
"""

from rl_trainers.data.replay_buffers.ensemble import (
    ReplayBufferEnsemble,
    SamplerEnsemble,
    StorageEnsemble,
    WriterEnsemble,
)
from rl_trainers.data.replay_buffers.replay_buffers import (
    PrioritizedReplayBuffer,
    ReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers.samplers import (
    PrioritizedSampler,
    RandomSampler,
    Sampler,
    SamplerWithoutReplacement,
)
from rl_trainers.data.replay_buffers.slice_sampler import (
    PrioritizedSliceSampler,
    SliceSampler,
    SliceSamplerWithoutReplacement,
)
from rl_trainers.data.replay_buffers.storages import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    Storage,
    TensorStorage,
)
from rl_trainers.data.replay_buffers.writers import (
    ImmutableDatasetWriter,
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictRoundRobinWriter,
    Writer,
)

__all__ = [
    "ImmutableDatasetWriter",
    "LazyMemmapStorage",
    "LazyTensorStorage",
    "ListStorage",
    "PrioritizedReplayBuffer",
    "PrioritizedSampler",
    "PrioritizedSliceSampler",
    "RandomSampler",
    "ReplayBuffer",
    "ReplayBufferEnsemble",
    "RoundRobinWriter",
    "Sampler",
    "SamplerEnsemble",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
    "Storage",
    "StorageEnsemble",
    "TensorDictMaxValueWriter",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorDictRoundRobinWriter",
    "TensorStorage",
    "Writer",
    "WriterEnsemble",
]
