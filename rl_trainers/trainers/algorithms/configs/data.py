"""Replay buffer config nodes (group ``replay_buffer``)."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class ReplayBufferConfig:
    """A TensorDict replay buffer: its storage, sampler and writer."""

    _target_: str = "rl_trainers.trainers.helpers.make_replay_buffer"
    size: int = config_field(1_000_000, "capacity in transitions")
    batch_size: int = config_field(256, "transitions per optimisation step")
    storage: str = config_field("lazy_tensor", "lazy_tensor (RAM) | lazy_memmap (disk) | list")
    prioritized: bool = config_field(False, "prioritized sampling (sum tree) instead of uniform")
    alpha: float = config_field(0.6, "priority exponent (prioritized only)")
    beta: float = config_field(0.4, "importance-weight exponent (prioritized only)")
    scratch_dir: str | None = config_field(None, "directory of a lazy_memmap storage")
