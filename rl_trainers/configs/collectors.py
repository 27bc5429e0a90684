"""Collector config nodes (group ``collector``)."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class SyncDataCollectorConfig:
    """Steps the batched env with the policy in the training process."""

    _target_: str = "rl_trainers.collectors.SyncDataCollector"
    frames_per_batch: int = config_field(256, "frames per collected batch (all envs together)")
    init_random_frames: int = config_field(0, "first frames taken with uniformly random actions")
    reset_at_each_iter: bool = config_field(False, "reset the envs at the start of every batch")
    device: str | None = config_field(None, "device the policy acts on (None: cpu)")
    storing_device: str | None = config_field(None, "device batches are delivered on")
    step_timeout_s: float | None = config_field(
        None,
        "seconds an env step or reset may block before the run ends naming the env "
        "(multi-process: and the worker); None or 0: no limit",
    )
    check_finite: bool = config_field(
        True, "stop on NaN/inf in a collected batch, naming the entry, sub-env and frame"
    )


@dataclass
class MultiSyncDataCollectorConfig(SyncDataCollectorConfig):
    """Several worker processes, each with its own envs; batches are gathered from all."""

    _target_: str = "rl_trainers.collectors.MultiSyncDataCollector"
    num_workers: int = config_field(2, "worker processes, each running one batched env")


@dataclass
class MultiaSyncDataCollectorConfig(MultiSyncDataCollectorConfig):
    """Several worker processes; each batch comes from whichever worker is ready first."""

    _target_: str = "rl_trainers.collectors.MultiaSyncDataCollector"
