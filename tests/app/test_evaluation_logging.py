"""Periodic evaluations reach the logger: every evaluation's ``eval/return_mean`` and
``eval/return_std``, whatever ``trainer.log_interval`` says, while the other scalars keep
its rhythm."""

from __future__ import annotations

from rl_trainers.app.run import run


def _steps(path) -> list[int]:
    return [int(line.split(",")[0]) for line in path.read_text().splitlines()]


def test_every_evaluation_is_logged_whatever_the_log_interval(tiny_config, tmp_path):
    # TINY["sac"]: 200 frames; evaluations at 40, 80, ..., 200; windows of 100 frames
    cfg = tiny_config("sac", ["eval.interval=40", "trainer.log_interval=100"])
    run(cfg, output_dir=tmp_path)
    scalars = tmp_path / "logs" / "sac_Pendulum-v1" / "scalars"
    assert _steps(scalars / "eval" / "return_mean.csv") == [40, 80, 120, 160, 200]
    assert _steps(scalars / "eval" / "return_std.csv") == [40, 80, 120, 160, 200]
    assert _steps(scalars / "loss_actor.csv") == [100, 200]  # every multiple crossed
