"""Replay buffers (storages, samplers, writers) and collector post-processing.

The tensor specs are importable from here too, as from ``torchrl.data``; they are defined
once, in :mod:`rl_trainers.envs.specs`.
"""

from rl_trainers.data.postprocs import MultiStep
from rl_trainers.data.replay_buffers import (
    PrioritizedReplayBuffer,
    ReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
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
    "Storage",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorStorage",
    "Writer",
]
