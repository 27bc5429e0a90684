"""Plotting the TensorBoard logs of a resumed run: the points its interrupted session
logged after the checkpoint are left out, without TensorBoard's restart warning."""

from __future__ import annotations

import subprocess
import sys

from rl_trainers.record.loggers import TensorboardLogger

from .test_plot import _env


def test_a_resumed_tensorboard_record_plots_each_step_once_and_quietly(tmp_path):
    logs = tmp_path / "tb_logs"
    with TensorboardLogger("run", log_dir=str(logs)) as interrupted:
        for step in (100, 200):
            interrupted.log_scalar("eval/return_mean", step / 100, step=step)
        checkpoint = interrupted.state_dict()
        interrupted.log_scalar("eval/return_mean", -1.0, step=300)  # after the checkpoint
    with TensorboardLogger("run", log_dir=str(logs)) as resumed:
        resumed.load_state_dict(checkpoint)  # reopens the writer with purge_step=201
        for step in (300, 400):
            resumed.log_scalar("eval/return_mean", step / 100, step=step)
    done = subprocess.run(
        [sys.executable, "-m", "rl_trainers.plot", str(logs), "--csv", "curves.csv"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows = (tmp_path / "curves.csv").read_text().splitlines()[1:]
    assert [(r.split(",")[1], r.split(",")[2]) for r in rows] == [
        ("100", "1.0"),
        ("200", "2.0"),
        ("300", "3.0"),
        ("400", "4.0"),
    ]
