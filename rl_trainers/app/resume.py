"""Continuing a run: loading its checkpoint, and the command that resumes a stopped run."""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig

from .launch import app_words


def load_resume_checkpoint(cfg: DictConfig, trainer, ckpt: Path, out: Path) -> Path:
    """Load ``ckpt`` into ``trainer``; returns the checkpoint loaded.

    With ``trainer.resume=true`` (single process), a newest checkpoint that cannot be read
    (truncated or corrupted: a crash or a full disk while it was copied...) is skipped for
    the newest readable rotated one, with one ``Warning:`` line naming both. A checkpoint
    that reads but does not fit the run still fails (as does ``trainer.resume_from``).
    """
    from rl_trainers.core.checkpoint import (
        CheckpointError,
        list_checkpoints,
        load_checkpoint,
        unreadable,
    )
    from rl_trainers.core.distributed import is_distributed

    if cfg.trainer.get("resume_from") or is_distributed():
        trainer.load_from_file(ckpt)
        return ckpt
    older = [p for _, p in reversed(list_checkpoints(out / "checkpoints" / "trainer.pt"))]
    candidates = [ckpt, *(p for p in older if p != ckpt)]
    bad: list[tuple[Path, CheckpointError]] = []
    for path in candidates:
        try:
            state = load_checkpoint(path)
        except CheckpointError as err:
            if not unreadable(err):
                raise
            bad.append((path, err))
            continue
        trainer.load_state_dict(state, source=f"Checkpoint {path}")
        trainer.last_checkpoint = Path(path)
        if bad:
            skipped = ", ".join(str(p) for p, _ in bad)
            print(
                f"Warning: trainer.resume=true: skipped {skipped} (truncated or corrupted); "
                f"resuming from {path}, the newest readable checkpoint.",
                file=sys.stderr,
            )
        return Path(path)
    raise bad[0][1]


def resume_command(out: Path) -> str:
    """The command line that continues this run: the app's command (:func:`app_words`:
    ``rl-trainers ppo``, or the ``train.py`` script run) and the run's own overrides
    (inside ``@hydra.main``), then ``trainer.resume=true hydra.run.dir=<out>``.

    A job of a sweep (``-m``) gets the sweep's command line instead, with
    ``trainer.resume=true hydra.sweep.dir=<sweep dir>``: it resumes the interrupted job,
    and runs the jobs that had not started yet.
    """
    import shlex

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rl_trainers.core.distributed import get_world_size

    app = app_words(get_world_size())
    words = ["trainer.resume=true", f"hydra.run.dir={out}"]
    if not HydraConfig.initialized():
        return " ".join(shlex.quote(w) for w in words)
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        sweep_dir = Path(hydra_cfg.runtime.cwd) / str(hydra_cfg.sweep.dir)
        skip = ("trainer.resume", "trainer.resume_from", "hydra.sweep.dir")
        own = [
            a
            for a in sys.argv[1:]
            if a not in ("-m", "--multirun") and a.lstrip("+~").partition("=")[0] not in skip
        ]
        words = [*app, "-m", *own, "trainer.resume=true"]
        words.append(f"hydra.sweep.dir={sweep_dir}")
        return " ".join(shlex.quote(w) for w in words)
    own = [
        o
        for o in hydra_cfg.overrides.task
        if o.lstrip("+~").partition("=")[0] not in ("trainer.resume", "trainer.resume_from")
    ]
    words = [*app, *own, *words]
    return " ".join(shlex.quote(w) for w in words)
