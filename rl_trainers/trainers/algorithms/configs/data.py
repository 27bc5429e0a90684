"""torchrl's path ``torchrl.trainers.algorithms.configs.data``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.data`.
"""

from rl_trainers.configs.data import (
    ImmutableDatasetWriterConfig,
    LazyMemmapStorageConfig,
    LazyTensorStorageConfig,
    ListStorageConfig,
    PrioritizedSamplerConfig,
    PrioritizedSliceSamplerConfig,
    RandomSamplerConfig,
    ReplayBufferConfig,
    RoundRobinWriterConfig,
    SamplerWithoutReplacementConfig,
    SliceSamplerConfig,
    SliceSamplerWithoutReplacementConfig,
    TensorDictMaxValueWriterConfig,
    TensorDictReplayBufferConfig,
    TensorDictRoundRobinWriterConfig,
    TensorStorageConfig,
)

__all__ = [
    "ImmutableDatasetWriterConfig",
    "LazyMemmapStorageConfig",
    "LazyTensorStorageConfig",
    "ListStorageConfig",
    "PrioritizedSamplerConfig",
    "PrioritizedSliceSamplerConfig",
    "RandomSamplerConfig",
    "ReplayBufferConfig",
    "RoundRobinWriterConfig",
    "SamplerWithoutReplacementConfig",
    "SliceSamplerConfig",
    "SliceSamplerWithoutReplacementConfig",
    "TensorDictMaxValueWriterConfig",
    "TensorDictReplayBufferConfig",
    "TensorDictRoundRobinWriterConfig",
    "TensorStorageConfig",
]
