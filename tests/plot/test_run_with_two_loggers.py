"""A run whose points are in two loggers' logs (resumed with another ``logger=``): its
curves hold the points of both."""

from __future__ import annotations

from .test_plot import plot_command, read_curves, train


def test_a_run_resumed_with_another_logger_plots_its_whole_curve(tmp_path):
    train("hydra.run.dir=run", cwd=tmp_path)  # CSV: evaluations at 64 ... 256
    train(
        "hydra.run.dir=run",
        "trainer.resume=true",
        "trainer.total_frames=512",
        "logger=tensorboard",
        cwd=tmp_path,
    )  # TensorBoard: 320 ... 512
    done = plot_command("run", "--csv", "curves.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (rows,) = read_curves(tmp_path / "curves.csv").values()
    assert [int(r["frames"]) for r in rows] == list(range(64, 513, 64))
