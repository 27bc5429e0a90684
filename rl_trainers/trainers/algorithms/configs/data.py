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
    sampler: str = config_field(
        "random", "random (uniform) | without_replacement | prioritized (sum tree)"
    )
    writer: str = config_field("round_robin", "round_robin (overwrite the oldest when full)")
    alpha: float = config_field(0.6, "priority exponent (prioritized only)")
    beta: float = config_field(0.4, "importance-weight exponent (prioritized only)")
    scratch_dir: str | None = config_field(None, "directory of a lazy_memmap storage")
