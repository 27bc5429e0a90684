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
        key = "hydra.sweep.dir" if _in_a_sweep() else "hydra.run.dir"
        where = str(out.parent) if key == "hydra.sweep.dir" else str(out)
        raise ConfigError(
            key,
            where,
            f"it holds a previous run (checkpoints/{previous[-1].name}), which a new run "
            f"would overwrite: add trainer.resume=true to continue that run, or choose "
            f"another {key}",
        )


def _in_a_sweep() -> bool:
    """Whether Hydra runs this job as one of a sweep's (``-m``)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    except Exception:  # noqa: BLE001 - no Hydra run: a plain run
        return False
