"""Fixtures shared by every test directory."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
