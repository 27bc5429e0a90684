"""The run directory's own check: a new run never writes over a previous run's checkpoints."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.errors import ConfigError


def check_fresh_run_dir(cfg: DictConfig, out: Path) -> None:
    """Refuse to start a new run in a directory holding a previous run's checkpoints (its
    logs would be appended to and its checkpoints replaced), unless it is resumed."""
    loop = cfg.trainer
    if loop.get("resume") or loop.get("resume_from"):
        return
    previous = sorted((out / "checkpoints").glob("trainer*"))
    if previous:
        key = "hydra.sweep.dir" if in_sweep() else "hydra.run.dir"
        where = str(out.parent) if key == "hydra.sweep.dir" else str(out)
        raise ConfigError(
            key,
            where,
            f"it holds a previous run (checkpoints/{previous[-1].name}), which a new run "
            f"would overwrite: add trainer.resume=true to continue that run, or choose "
            f"another {key}",
        )


def in_sweep() -> bool:
    """Whether this runs as a job of a Hydra sweep (``-m``)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
