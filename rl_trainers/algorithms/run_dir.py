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
        raise ConfigError(
            "hydra.run.dir",
            str(out),
            f"it holds a previous run (checkpoints/{previous[-1].name}), which a new run "
            "would overwrite: add trainer.resume=true to continue that run, or choose "
            "another hydra.run.dir",
        )
