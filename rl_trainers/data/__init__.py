"""Replay buffers (storages, samplers, writers) and collector post-processing.

The tensor specs are importable from here too, as from ``torchrl.data``; they are defined
once, in :mod:`rl_trainers.envs.specs`.
"""

from rl_trainers.data.postprocs import MultiStep
from rl_trainers.data.replay_buffers import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    PrioritizedReplayBuffer,
    PrioritizedSampler,
    RandomSampler,
    ReplayBuffer,
    RoundRobinWriter,
    Sampler,
    SamplerWithoutReplacement,
    SliceSampler,
    Storage,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
    TensorStorage,
    Writer,
)
from rl_trainers.envs.specs import (
    Binary,
    BinaryDiscreteTensorSpec,
    Bounded,
    BoundedTensorSpec,
    Categorical,
    Composite,
    CompositeSpec,
    DiscreteTensorSpec,
    MultiCategorical,
    MultiDiscreteTensorSpec,
    OneHot,
    OneHotDiscreteTensorSpec,
    TensorSpec,
    Unbounded,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
)

__all__ = [
    # specs (defined in rl_trainers.envs.specs)
    "Binary",
    "BinaryDiscreteTensorSpec",
    "Bounded",
    "BoundedTensorSpec",
    "Categorical",
    "Composite",
    "CompositeSpec",
    "DiscreteTensorSpec",
    "MultiCategorical",
    "MultiDiscreteTensorSpec",
    "OneHot",
    "OneHotDiscreteTensorSpec",
    "TensorSpec",
    "Unbounded",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
    # replay buffers
    "LazyMemmapStorage",
    "LazyTensorStorage",
    "ListStorage",
    "MultiStep",
    "PrioritizedReplayBuffer",
    "PrioritizedSampler",
    "RandomSampler",
    "ReplayBuffer",
    "RoundRobinWriter",
    "Sampler",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "Storage",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorStorage",
    "Writer",
]
