"""The import contracts of ``.importlinter`` hold (docs/architecture.md, "Layers"): the RL
library packages never import the trainers or the app, the app sits on top of the agent
commands and the trainers, the library's layers import only downwards, ``rl_trainers.plot``
imports no other package, and the Trainer loop never imports the algorithm trainers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    pytest.importorskip("importlinter", reason="import-linter is in the dev extra")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command as c; c()",
            "--no-cache",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    assert "0 broken" in proc.stdout
