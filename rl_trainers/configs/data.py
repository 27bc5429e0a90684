"""Replay buffer config nodes: the root ``replay_buffer`` node of the algorithm configs
(:class:`ReplayBufferConfig`, storage and sampler by name) and torchrl's nested nodes
(:class:`TensorDictReplayBufferConfig` with storage, sampler and writer nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import config_field


@dataclass
class ReplayBufferConfig:
    """A TensorDict replay buffer: its storage, sampler and writer."""

    _target_: str = "rl_trainers.algorithms.components.make_replay_buffer"
    size: int = config_field(1_000_000, "capacity in transitions")
    batch_size: int = config_field(256, "transitions per optimisation step")
    storage: str = config_field("lazy_tensor", "lazy_tensor (RAM) | lazy_memmap (disk) | list")
    sampler: str = config_field(
        "random", "random (uniform) | without_replacement | prioritized (sum tree)"
    )
    writer: str = config_field("round_robin", "round_robin (overwrite the oldest when full)")
    alpha: float = config_field(0.6, "priority exponent (prioritized only)")
    beta: float = config_field(0.4, "importance-weight exponent (prioritized only)")
    scratch_dir: str | None = config_field(None, "directory of a lazy_memmap storage")
    device: str | None = config_field(
        None, "where a lazy_tensor storage keeps the transitions (null: the root device)"
    )


# ------------------------------------------------------------------ torchrl's buffer nodes
# The nodes torchrl's ``configs.data`` names, each targeting the rl_trainers class of the same
# name with its constructor's arguments, nested as in torchrl:
# TensorDictReplayBufferConfig(storage=LazyTensorStorageConfig(max_size=...), sampler=...).


@dataclass
class LazyTensorStorageConfig:
    """Storage in RAM, allocated from the first written batch."""

    _target_: str = "rl_trainers.data.LazyTensorStorage"
    max_size: int = config_field(1_000_000, "capacity in items")
    device: str = config_field("cpu", "device the items are stored on")
    ndim: int = config_field(1, "leading dims of written batches that index items")


@dataclass
class LazyMemmapStorageConfig:
    """Storage in memory-mapped files on disk, allocated from the first written batch."""

    _target_: str = "rl_trainers.data.LazyMemmapStorage"
    max_size: int = config_field(1_000_000, "capacity in items")
    scratch_dir: str | None = config_field(None, "directory of the files (None: a temp dir)")
    existsok: bool = config_field(False, "reuse files already in scratch_dir")
    device: str = config_field("cpu", "device sampled items are returned on")
    ndim: int = config_field(1, "leading dims of written batches that index items")


@dataclass
class ListStorageConfig:
    """Storage of arbitrary items in a Python list."""

    _target_: str = "rl_trainers.data.ListStorage"
    max_size: int = config_field(1_000_000, "capacity in items")


@dataclass
class TensorStorageConfig:
    """Storage in preallocated tensors (allocated from the first written batch here)."""

    _target_: str = "rl_trainers.data.TensorStorage"
    max_size: int | None = config_field(1_000_000, "capacity in items")
    device: str = config_field("cpu", "device the items are stored on")
    ndim: int = config_field(1, "leading dims of written batches that index items")


@dataclass
class RandomSamplerConfig:
    """Uniform sampling with replacement."""

    _target_: str = "rl_trainers.data.RandomSampler"


@dataclass
class SamplerWithoutReplacementConfig:
    """Each item once per pass over the storage."""

    _target_: str = "rl_trainers.data.SamplerWithoutReplacement"
    drop_last: bool = config_field(False, "drop a pass's last, incomplete sample")
    shuffle: bool = config_field(True, "random order within a pass (False: storage order)")


@dataclass
class PrioritizedSamplerConfig:
    """Sampling proportional to priority^alpha (sum tree), with importance weights."""

    _target_: str = "rl_trainers.data.PrioritizedSampler"
    max_capacity: int = config_field(1_000_000, "capacity: the storage's max_size")
    alpha: float = config_field(0.6, "priority exponent (0: uniform)")
    beta: float = config_field(0.4, "importance-weight exponent (1: full correction)")
    eps: float = config_field(1e-8, "added to every priority")
    reduction: str = config_field("max", "how a sample's priorities reduce: max|min|mean|median")


@dataclass
class SliceSamplerConfig:
    """Contiguous slices of stored trajectories, with replacement."""

    _target_: str = "rl_trainers.data.SliceSampler"
    num_slices: int | None = config_field(None, "slices per sample (or give slice_len)")
    slice_len: int | None = config_field(None, "length of each slice (or give num_slices)")
    end_key: str | None = config_field(None, "key marking trajectory ends (None: next/done)")
    traj_key: str | None = config_field(None, "key of trajectory ids (None: use end_key)")
    strict_length: bool = config_field(True, "drop trajectories shorter than a slice")


@dataclass
class SliceSamplerWithoutReplacementConfig(SliceSamplerConfig):
    """Contiguous slices of stored trajectories, each start once per pass."""

    _target_: str = "rl_trainers.data.SliceSamplerWithoutReplacement"
    drop_last: bool = config_field(False, "drop a pass's last, incomplete sample")
    shuffle: bool = config_field(True, "random order within a pass (False: storage order)")


@dataclass
class PrioritizedSliceSamplerConfig(SliceSamplerConfig, PrioritizedSamplerConfig):
    """Slices starting at steps drawn by priority (sum tree): the fields of both."""

    _target_: str = "rl_trainers.data.PrioritizedSliceSampler"


@dataclass
class RoundRobinWriterConfig:
    """Writes at the next index, overwriting the oldest items when full."""

    _target_: str = "rl_trainers.data.RoundRobinWriter"


@dataclass
class TensorDictRoundRobinWriterConfig:
    """Round-robin writer that also records each item's index in the TensorDict."""

    _target_: str = "rl_trainers.data.TensorDictRoundRobinWriter"


@dataclass
class TensorDictMaxValueWriterConfig:
    """Keeps the items of highest rank when full (e.g. the best episodes)."""

    _target_: str = "rl_trainers.data.TensorDictMaxValueWriter"
    rank_key: str | None = config_field(None, "key ranking items (None: next/reward)")
    reduction: str = config_field("sum", "how an item's ranks reduce: sum|mean|max|min|median")


@dataclass
class ImmutableDatasetWriterConfig:
    """A writer that refuses writes (a fixed dataset)."""

    _target_: str = "rl_trainers.data.ImmutableDatasetWriter"


@dataclass
class TensorDictReplayBufferConfig:
    """torchrl's ``TensorDictReplayBuffer`` node: nested storage, sampler and writer nodes.

    Example: ``TensorDictReplayBufferConfig(storage=LazyTensorStorageConfig(max_size=10_000),
    sampler=PrioritizedSamplerConfig(max_capacity=10_000), batch_size=256)``.
    """

    _target_: str = "rl_trainers.data.TensorDictReplayBuffer"
    storage: Any = config_field(None, "storage node (None: a ListStorage of 1000 items)")
    sampler: Any = config_field(None, "sampler node (None: RandomSampler)")
    writer: Any = config_field(None, "writer node (None: RoundRobinWriter)")
    batch_size: int | None = config_field(None, "items per sample() (None: give it to sample)")
    prefetch: int | None = config_field(None, "samples prepared ahead in a thread (None: none)")
    transform: Any = config_field(None, "transform node applied to each sample (None: none)")
    priority_key: str = config_field("td_error", "key read by update_tensordict_priority")
    pin_memory: bool = config_field(False, "accepted for torchrl compatibility (CPU only)")
