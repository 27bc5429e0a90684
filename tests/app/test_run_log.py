"""``train.log`` in the run directory holds the run's lines: the command it started with,
its warnings, its progress bar's last state, the summary, or its error line."""

from __future__ import annotations

import io
import json

from rl_trainers.app.run_log import _LineCopy

from .conftest import TINY
from .test_cli import train


def test_a_run_writes_its_lines_to_train_log(tmp_path):
    run = tmp_path / "run"
    proc = train(
        "ppo",
        *TINY["ppo"],
        "trainer.total_frames=300",  # not whole batches: a warning
        "trainer.progress_bar=true",
        f"hydra.run.dir={run}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (run / "train.log").read_text()
    lines = log.splitlines()
    assert lines[0].endswith(
        "trainer.total_frames=300 trainer.progress_bar=true " + f"hydra.run.dir={run}"
    )
    assert "] started: python " in lines[0]
    warning = next(line for line in proc.stderr.splitlines() if line.startswith("Warning: "))
    assert warning in lines  # as the terminal showed it
    assert any("320frames" in line and "\r" not in line for line in lines)  # the bar, once
    assert sum("frames" in line and "%|" in line for line in lines) <= 1
    summary = json.loads(log[log.index("{") :])
    assert summary == json.loads((run / "summary.json").read_text())


def test_a_config_error_is_in_train_log(tmp_path):
    run = tmp_path / "run"
    proc = train("ppo", *TINY["ppo"], "optimizer.lr=-1", f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 2
    lines = (run / "train.log").read_text().splitlines()
    assert "Error: optimizer.lr=-1.0 is invalid: a positive learning rate, e.g. 3e-4" in lines


def test_progress_redraws_are_copied_once_as_last_drawn():
    screen, log = io.StringIO(), io.StringIO()
    copy = _LineCopy(screen, log)
    copy.write("first line\n")
    for frame in range(0, 101, 10):
        copy.write(f"\r{frame:3d}%|bar|  ")
    copy.write("\nsecond")
    copy.write(" line\n\rleft on screen 50%")
    copy.end()
    assert log.getvalue() == "first line\n100%|bar|\nsecond line\nleft on screen 50%\n"
    assert screen.getvalue().startswith("first line\n\r  0%|bar|  \r 10%")


def test_torchs_exit_statistics_stay_out_of_the_console():
    """torch's fake tensors log cache statistics at INFO when the process exits; torch
    quiets its loggers at the end of its import, so a Ctrl-C that interrupts that import
    left them at Hydra's INFO, and the lines followed the run's stop line. The interrupted
    import is played by undoing torch's level."""
    import subprocess
    import sys

    code = (
        "import logging; logging.basicConfig(level=logging.INFO); import rl_trainers.app.run; "
        "import torch; logging.getLogger('torch').setLevel(logging.NOTSET); "
        "import torch._subclasses.fake_tensor"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "FakeTensor cache stats" not in done.stderr + done.stdout
