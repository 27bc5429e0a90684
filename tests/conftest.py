"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_python() -> Callable[[str], str]:
    """Runs ``code`` in a fresh interpreter at the project root (for process-wide state such
    as loaded modules or malloc settings); fails on a non-zero exit, returns the last line
    printed."""

    def run(code: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    return run


@pytest.fixture(autouse=True)
def _thread_count_restored():
    """Every test starts on the process's torch thread count, whatever the test before it
    set (a run built in-process sets its own), so no result depends on the order in which
    tests run or on the worker a test file lands on."""
    before = torch.get_num_threads()
    yield
    if torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _environment_restored():
    """Every test starts on the process's environment variables, whatever the test before it
    set (a logger's or a renderer's defaults, a run's settings): the subprocesses a test
    starts inherit them."""
    before = dict(os.environ)
    yield
    if dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture
def one_thread():
    """torch at one intra-op thread for the test, then back (torch's RNN kernels on two busy
    threads are ~30x slower than on one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
