"""Helpers for the resume tests: tiny Hydra configs, interrupted runs, checkpoint comparison."""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from app.conftest import REPO, TINY, compose_config  # tests/ is on sys.path (rootdir packages)

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer, resume_checkpoint
from rl_trainers.core.checkpoint import load_checkpoint

__all__ = [
    "REPO",
    "TINY",
    "compose_config",
    "csv_curves",
    "interrupted_run",
    "assert_same_state",
    "tiny",
]


def tiny(algorithm: str, *overrides: str):
    """The tiny config of ``tests/app`` plus ``overrides``."""
    return compose_config(algorithm, [*TINY[algorithm], *overrides])


def interrupted_run(cfg, out: Path, stop_at: int) -> int:
    """Train like the app does, but stop (as on SIGTERM) once ``stop_at`` frames were collected.

    Returns the frame count at the stop.
    """
    trainer = build_trainer(cfg, out)
    try:
        ckpt = resume_checkpoint(cfg, out)
        if ckpt is not None:
            trainer.load_from_file(ckpt)

        def stop() -> None:
            if trainer.collected_frames >= stop_at:
                trainer.request_stop("test")

        trainer.register_op("post_steps", stop)
        trainer.train()
        assert trainer.interrupted == "test"
        return trainer.collected_frames
    finally:
        close_trainer(trainer)


def assert_same_state(a: Path, b: Path, skip=("logger",)) -> None:
    """Two final checkpoints hold bitwise identical modules, counters and RNG states."""
    sa, sb = load_checkpoint(a), load_checkpoint(b)
    assert sa["counters"] == sb["counters"]
    assert set(sa["modules"]) == set(sb["modules"])
    for name in sa["modules"]:
        if name not in skip:
            _assert_equal(sa["modules"][name], sb["modules"][name], name)
    _assert_equal(sa["rng"], sb["rng"], "rng")
    _assert_equal(sa["collector"], sb["collector"], "collector")


def _assert_equal(x, y, where: str) -> None:
    if isinstance(x, torch.Tensor):
        assert isinstance(y, torch.Tensor) and x.shape == y.shape, where
        assert torch.equal(x, y), f"{where} differs"
    elif isinstance(x, dict):
        assert isinstance(y, dict) and set(x) == set(y), f"{where}: keys differ"
        for k in x:
            _assert_equal(x[k], y[k], f"{where}.{k}")
    elif isinstance(x, list | tuple):
        assert len(x) == len(y), where
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _assert_equal(u, v, f"{where}[{i}]")
    elif hasattr(x, "keys") and hasattr(x, "get"):  # TensorDict
        _assert_equal(x.to_dict(), y.to_dict(), where)
    elif hasattr(x, "shape") and hasattr(x, "dtype"):  # numpy
        assert (x == y).all(), f"{where} differs"
    else:
        assert x == y, f"{where}: {x!r} != {y!r}"


def csv_curves(run_dir: Path) -> dict[str, list[list[str]]]:
    """Every scalar series of the CSV logger under ``run_dir``: relative name -> rows."""
    out = {}
    for path in sorted(run_dir.glob("logs/*/scalars/**/*.csv")):
        with open(path, newline="") as f:
            out[str(path.relative_to(run_dir))] = list(csv.reader(f))
    return out
