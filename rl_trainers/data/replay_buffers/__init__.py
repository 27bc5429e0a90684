"""Replay buffers, laid out as ``torchrl.data.replay_buffers``: ``replay_buffers`` (the
buffer classes), ``storages``, ``samplers`` and ``writers``.

``from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement`` works as
torchrl's path does; everything is also importable from :mod:`rl_trainers.data`.
"""

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
    "RandomSampler",
    "ReplayBuffer",
    "RoundRobinWriter",
    "Sampler",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
    "Storage",
    "TensorDictMaxValueWriter",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorDictRoundRobinWriter",
    "TensorStorage",
    "Writer",
]
