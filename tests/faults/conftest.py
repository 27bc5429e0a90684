"""Helpers of the fault matrix: runs of ``train.py`` in a subprocess with a fault injected.

The process helpers are those of ``tests/resume/test_faults.py``; the faulty envs live in
``faults/envs.py`` (``env.env_name=faults.envs:<Class>``; ``tests/`` is on the subprocess's
``PYTHONPATH``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from app.conftest import TINY  # noqa: F401
from resume.test_faults import (  # noqa: F401 - re-exported for the tests
    SCRIPT,
    _assert_gone,
    _children,
    _env,
    _StreamCollector,
    _wait_for,
)

#: A PPO run of 64-frame batches long enough to be interrupted, checkpointing every batch.
LONG = [
    *TINY["ppo"],
    "trainer.total_frames=10000000",
    "trainer.save_trainer_interval=64",
]


def spawn(args: list[str], cwd: Path, **env: str) -> subprocess.Popen:
    """``python <args>`` with the tests' ``PYTHONPATH`` and ``env`` added to its environment."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env={**_env(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_to_end(args: list[str], cwd: Path, timeout: float, **env: str):
    """Run ``python args...`` (see :func:`spawn`) to its end, killed past ``timeout``;
    returns ``(returncode, stderr, seconds)``."""
    start = time.monotonic()
    proc = spawn(args, cwd, **env)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stderr, time.monotonic() - start


def train(overrides: list[str], cwd: Path, timeout: float, **env: str):
    """Run ``train.py`` to its end; returns ``(returncode, stderr, seconds)``."""
    return run_to_end([str(SCRIPT), *overrides], cwd, timeout, **env)


def error_lines(stderr: str) -> list[str]:
    """The ``Error:`` lines of ``stderr``."""
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def faults_env(**values: int | str) -> dict[str, str]:
    """Environment variables for ``faults.envs`` (``FAULT_AFTER=...``)."""
    return {f"FAULT_{k.upper()}": str(v) for k, v in values.items()}


__all__ = ["LONG", "error_lines", "faults_env", "spawn", "train", "os"]
