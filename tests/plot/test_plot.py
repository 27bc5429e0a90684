"""Learning-curve plots of real (short) runs of the app: ``python -m rl_trainers.plot``."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rl_trainers.plot import aggregate, main

REPO = Path(__file__).resolve().parents[2]

#: PPO on CartPole for 256 frames, an evaluation every 64 frames (seconds per run).
SHORT = [
    "trainer.num_threads=1",
    "trainer.total_frames=256",
    "collector.frames_per_batch=64",
    "env.num_envs=4",
    "trainer.minibatch_size=32",
    "trainer.num_epochs=2",
    "eval.episodes=2",
    "eval.interval=64",
    "trainer.progress_bar=false",
    "trainer.log_interval=64",
    "trainer.save_trainer_interval=0",
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def train(*args: str, cwd: Path) -> None:
    """A short PPO run (``SHORT``, a field of which ``args`` may set instead)."""
    script = REPO / "sota-implementations" / "ppo_trainer" / "train.py"
    given = {a.partition("=")[0] for a in args}
    short = [o for o in SHORT if o.partition("=")[0] not in given]
    done = subprocess.run(
        [sys.executable, str(script), *args, *short],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]


def plot_command(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m rl_trainers.plot`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "rl_trainers.plot", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )


def plot(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """The command's ``main`` in this process (faster: torch and the readers are loaded
    once), its exit status and output as a ``CompletedProcess``."""
    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exit_:
                code = exit_.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """``-m logger=csv,tensorboard optimizer.lr=1e-3,3e-4 seed=0,1``: 8 jobs."""
    root = tmp_path_factory.mktemp("plot")
    train(
        "-m",
        "logger=csv,tensorboard",
        "optimizer.lr=1e-3,3e-4",
        "seed=0,1",
        "hydra.sweep.dir=sweep",
        cwd=root,
    )
    return root / "sweep"


def overrides(job: Path) -> dict[str, str]:
    items = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
    return dict(o.split("=", 1) for o in items)


def jobs(sweep: Path, **where: str) -> list[Path]:
    found = sorted((p for p in sweep.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return [j for j in found if all(overrides(j).get(k) == v for k, v in where.items())]


def logged(job: Path, metric: str) -> dict[int, float]:
    """A CSV-logged series of a job, read straight from the logger's file."""
    path = job / "logs" / "ppo_CartPole-v1" / "scalars" / f"{metric}.csv"
    with open(path, newline="") as f:
        return {int(step): float(value) for step, value in csv.reader(f)}


def read_curves(path: Path) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["group"], []).append(row)
    return out


def decoded_png(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as image:
        image.load()  # decodes every pixel: a truncated or corrupt file raises
        assert image.format == "PNG"
        return image.size


def test_csv_runs_grouped_by_seed_give_the_mean_of_their_logged_values(sweep, tmp_path):
    csv_jobs = jobs(sweep, logger="csv")
    assert len(csv_jobs) == 4
    done = plot_command(*csv_jobs, "--out", "curves.png", "--csv", "curves.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    width, height = decoded_png(tmp_path / "curves.png")
    assert width > 500 and height > 300

    curves = read_curves(tmp_path / "curves.csv")
    # the seeds of each learning rate are one curve, labelled by what tells them apart
    assert sorted(curves) == ["optimizer.lr=0.0003", "optimizer.lr=0.001"]
    for lr in ["0.001", "0.0003"]:
        seeds = [
            logged(j, "eval/return_mean") for j in csv_jobs if overrides(j)["optimizer.lr"] == lr
        ]
        assert len(seeds) == 2 and seeds[0].keys() == seeds[1].keys()
        rows = curves[f"optimizer.lr={lr}"]
        assert [int(r["frames"]) for r in rows] == sorted(seeds[0]) == [64, 128, 192, 256]
        for row in rows:
            values = [s[int(row["frames"])] for s in seeds]
            assert float(row["mean"]) == pytest.approx(sum(values) / 2)
            assert float(row["min"]) == min(values) and float(row["max"]) == max(values)
            assert float(row["std"]) == pytest.approx(abs(values[0] - values[1]) / 2)
            assert row["runs"] == "2"
    assert "2 curve(s) from 4 run(s)" in done.stdout


def test_the_sweep_dir_pools_the_loggers_and_tensorboard_reads_the_same_values(sweep, tmp_path):
    # a seeded run gives the same results whatever the logger, and logger.* is not a
    # difference between groups: each learning rate is one curve of 4 runs (2 CSV, 2 TB)
    done = plot(sweep, "--csv", "all.csv", "--band", "minmax", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    decoded_png(tmp_path / "curves.png")
    curves = read_curves(tmp_path / "all.csv")
    assert len(curves) == 2
    for label, rows in curves.items():
        lr = label.rpartition("=")[2]
        seeds = [
            logged(j, "eval/return_mean")
            for j in jobs(sweep, logger="csv")
            if float(overrides(j)["optimizer.lr"]) == float(lr)
        ]
        for row in rows:
            values = [s[int(row["frames"])] for s in seeds]
            assert row["runs"] == "4"
            assert float(row["mean"]) == pytest.approx(sum(values) / 2, rel=1e-6)
            assert float(row["min"]) == pytest.approx(min(values), rel=1e-6)

    tb_only = plot(*jobs(sweep, logger="tensorboard"), "--csv", "tb.csv", cwd=tmp_path)
    assert tb_only.returncode == 0, tb_only.stderr
    tb = read_curves(tmp_path / "tb.csv")
    assert {k: [(r["frames"], float(r["mean"])) for r in v] for k, v in tb.items()} == {
        k: [(r["frames"], pytest.approx(float(r["mean"]), rel=1e-6)) for r in v]
        for k, v in curves.items()
    }


@pytest.mark.parametrize(
    ("group_by", "expected"),
    [
        ("seed", {"seed=0": 4, "seed=1": 4}),
        ("none", {"all runs": 8}),
        ("optimizer.lr,seed", {"optimizer.lr=0.001, seed=0": 2}),
    ],
)
def test_group_by(sweep, tmp_path, group_by, expected):
    done = plot(sweep, "--group-by", group_by, "--csv", "g.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    curves = read_curves(tmp_path / "g.csv")
    for label, runs in expected.items():
        assert {r["runs"] for r in curves[label]} == {str(runs)}
    if group_by == "optimizer.lr,seed":
        assert len(curves) == 4


def test_group_by_run_draws_each_run(sweep, tmp_path):
    done = plot(
        sweep, "--group-by", "run", "--metric", "train/episode_return", "--csv", "r.csv",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    curves = read_curves(tmp_path / "r.csv")
    assert len(curves) == 8
    job0 = jobs(sweep)[0]
    rows = curves[f"sweep/{job0.name}"]
    assert {int(r["frames"]): float(r["mean"]) for r in rows} == logged(
        job0, "train/episode_return"
    )


def test_list_metrics(sweep, tmp_path):
    done = plot(sweep, "--list-metrics", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert lines["eval/return_mean"] == "8 of 8 runs"
    assert {"train/episode_return", "loss_objective", "optim_steps"} <= lines.keys()
    assert not (tmp_path / "curves.png").exists()


def test_mlflow_run_and_several_dirs(sweep, tmp_path):
    train("logger=mlflow", "seed=0", "optimizer.lr=1e-3", "hydra.run.dir=mlflow_run", cwd=tmp_path)
    done = plot(
        tmp_path / "mlflow_run", *jobs(sweep, logger="csv", seed="0", **{"optimizer.lr": "0.001"}),
        "--group-by", "run", "--csv", "m.csv", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    curves = list(read_curves(tmp_path / "m.csv").values())
    assert len(curves) == 2
    as_points = [[(r["frames"], float(r["mean"])) for r in c] for c in curves]
    assert as_points[0] == [(f, pytest.approx(v)) for f, v in as_points[1]]


def test_without_evaluations_the_default_is_the_training_return(tmp_path):
    train("eval.interval=0", "hydra.run.dir=no_eval", cwd=tmp_path)
    done = plot("no_eval", "--csv", "c.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no run logged eval/return_mean" in done.stderr
    (rows,) = read_curves(tmp_path / "c.csv").values()
    series = logged(tmp_path / "no_eval", "train/episode_return")
    assert {int(r["frames"]): float(r["mean"]) for r in rows} == series
    decoded_png(tmp_path / "curves.png")


def test_aggregate_counts_each_run_between_its_first_and_last_step():
    curve = aggregate("x", [[(0, 0.0), (10, 10.0)], [(5, 4.0), (15, 14.0)]])
    assert curve.steps.tolist() == [0, 5, 10, 15]
    assert curve.count.tolist() == [1, 2, 2, 1]
    assert curve.mean.tolist() == [0.0, 4.5, 9.5, 14.0]  # 5 -> (5 + 4) / 2, 10 -> (10 + 9) / 2
    assert curve.min.tolist() == [0.0, 4.0, 9.0, 14.0]


def _logged_runs(root: Path, runs: dict[str, list[tuple[int, float]]]) -> Path:
    """Runs without a config: each a CSV logger's ``episode_return`` series."""
    from rl_trainers.record.loggers import CSVLogger

    for name, points in runs.items():
        with CSVLogger(name, log_dir=str(root / "logs")) as logger:
            for step, value in points:
                logger.log_scalar("episode_return", value, step=step)
    return root / "logs"


def test_common_range_keeps_the_frames_every_run_covers(tmp_path):
    logs = _logged_runs(
        tmp_path,
        {"a": [(100, 1.0), (200, 2.0), (300, 30.0)], "b": [(50, 0.0), (100, 3.0), (200, 4.0)]},
    )
    args = [logs, "--group-by", "none", "--metric", "episode_return"]
    every = plot(*args, "--csv", "every.csv", cwd=tmp_path)
    common = plot(*args, "--csv", "common.csv", "--common-range", cwd=tmp_path)
    assert every.returncode == 0 and common.returncode == 0, every.stderr + common.stderr
    rows = lambda name: [  # noqa: E731
        (int(r["frames"]), float(r["mean"]), int(r["runs"]))
        for r in read_curves(tmp_path / name)["all runs"]
    ]
    # by default the ends are one run's values: b alone at 50, a alone at 300
    assert rows("every.csv") == [(50, 0.0, 1), (100, 2.0, 2), (200, 3.0, 2), (300, 30.0, 1)]
    assert rows("common.csv") == [(100, 2.0, 2), (200, 3.0, 2)]
    decoded_png(tmp_path / "curves.png")


def test_group_by_path_pools_the_runs_of_each_directory_given(tmp_path):
    first = _logged_runs(tmp_path / "first", {"s0": [(100, 1.0)], "s1": [(100, 3.0)]})
    second = _logged_runs(tmp_path / "second", {"s0": [(100, 10.0)]})
    done = plot(
        first, second, "--group-by", "path", "--metric", "episode_return", "--csv", "p.csv",
        "--label", "baseline", "--label", "ablation", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    curves = read_curves(tmp_path / "p.csv")
    assert [(r["mean"], r["runs"]) for r in curves["baseline"]] == [("2.0", "2")]
    assert [(r["mean"], r["runs"]) for r in curves["ablation"]] == [("10.0", "1")]
    unlabelled = plot(first, second, "--group-by", "path", "--metric", "episode_return",
                      "--csv", "u.csv", cwd=tmp_path)  # fmt: skip
    assert unlabelled.returncode == 0, unlabelled.stderr
    assert list(read_curves(tmp_path / "u.csv")) == [str(first), str(second)]


def test_auto_labels_name_a_config_groups_option_as_the_command_line_does(tmp_path):
    # separate runs: the baseline has no override of its own, so the labels come from the
    # configs, where the policy differs by its builder's import path
    train("env=pendulum", "hydra.run.dir=baseline", cwd=tmp_path)
    train("env=pendulum", "model/policy=normal", "hydra.run.dir=gaussian", cwd=tmp_path)
    done = plot(tmp_path / "baseline", tmp_path / "gaussian", "--csv", "c.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(read_curves(tmp_path / "c.csv")) == ["model/policy=auto", "model/policy=normal"]


def test_finished_leaves_out_the_runs_still_going(sweep, tmp_path):
    done_jobs = jobs(sweep, logger="csv")
    going = tmp_path / "going"
    shutil.copytree(done_jobs[0], going)  # a run without its summary: not finished
    (going / "summary.json").unlink()
    every = plot(*done_jobs, going, "--group-by", "none", "--csv", "a.csv", cwd=tmp_path)
    finished = plot(*done_jobs, going, "--group-by", "none", "--csv", "f.csv", "--finished",
                    cwd=tmp_path)  # fmt: skip
    assert every.returncode == finished.returncode == 0, every.stderr + finished.stderr
    assert {r["runs"] for r in read_curves(tmp_path / "a.csv")["all runs"]} == {"5"}
    assert {r["runs"] for r in read_curves(tmp_path / "f.csv")["all runs"]} == {"4"}
    line = _error(plot(going, "--finished", cwd=tmp_path))
    assert line == f"Error: --finished: no run under {going} has finished"


def test_error_for_common_range_over_runs_that_share_no_frames(tmp_path):
    logs = _logged_runs(tmp_path, {"a": [(100, 1.0), (200, 2.0)], "b": [(300, 3.0), (400, 4.0)]})
    line = _error(
        plot(
            logs, "--group-by", "none", "--metric", "episode_return", "--common-range", cwd=tmp_path
        )
    )
    assert line == "Error: --common-range: the runs of the curve 'all runs' share no logged frames"


# ----------------------------------------------------------------------------- errors


def _error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_labels_name_the_curves_in_order(sweep, tmp_path):
    done = plot(
        *jobs(sweep, logger="csv"), "--label", "fast", "--label", "slow", "--csv", "l.csv",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    curves = read_curves(tmp_path / "l.csv")
    # the first curve is the first group found: the jobs of optimizer.lr=1e-3 come first
    assert list(curves) == ["fast", "slow"]
    fast = [
        logged(j, "eval/return_mean")
        for j in jobs(sweep, logger="csv")
        if float(overrides(j)["optimizer.lr"]) == 1e-3
    ]
    assert len(fast) == 2
    assert float(curves["fast"][-1]["mean"]) == pytest.approx(sum(s[256] for s in fast) / 2)
    assert "fast: 2, slow: 2" in done.stdout


def test_error_for_a_label_count_that_is_not_the_curve_count(sweep, tmp_path):
    done = plot(*jobs(sweep, logger="csv"), "--label", "only one", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "Error: --label given 1 time(s) for 2 curve(s); give one per curve, in this order: "
        "1. optimizer.lr=0.001 (2 runs); 2. optimizer.lr=0.0003 (2 runs)"
    )
    assert not (tmp_path / "curves.png").exists()


def test_error_for_a_missing_dir(tmp_path):
    assert "nowhere: no such directory" in _error(plot_command("nowhere", cwd=tmp_path))


def test_error_for_a_dir_without_runs(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("no run here\n")
    assert "empty: no run found" in _error(plot("empty", cwd=tmp_path))


def test_error_for_an_unknown_metric_names_the_available_ones(sweep, tmp_path):
    line = _error(plot(sweep, "--metric", "eval/reward", cwd=tmp_path))
    assert "--metric eval/reward: no run logged it" in line
    assert "eval/return_mean" in line and "train/episode_return" in line


def test_error_for_an_unknown_group_by_key(sweep, tmp_path):
    line = _error(plot(sweep, "--group-by", "optimizer.learning_rate", cwd=tmp_path))
    assert "--group-by optimizer.learning_rate: no run has this config key" in line


def test_error_for_an_unknown_figure_format(sweep, tmp_path):
    line = _error(plot(sweep, "--out", "curves.xyz", cwd=tmp_path))
    assert "unknown figure format '.xyz'" in line and ".png" in line and ".pdf" in line


def test_error_for_a_run_with_only_wandb_logs(tmp_path):
    # the layout logger=wandb leaves in a run directory (no logs this tool can read)
    run = tmp_path / "wandb_run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("algorithm: ppo\nseed: 0\n")
    offline = run / "wandb" / "offline-run-20260101_000000-abcd1234"
    offline.mkdir(parents=True)
    (offline / "run-abcd1234.wandb").write_bytes(b"")
    line = _error(plot(run, cwd=tmp_path))
    assert "only W&B offline logs" in line and "wandb sync" in line


def test_error_for_runs_that_logged_no_series(tmp_path):
    # a run shorter than trainer.log_interval: its logger holds the config, no scalar
    from rl_trainers.record.loggers import CSVLogger

    run = tmp_path / "short_run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("algorithm: ppo\nseed: 0\n")
    with CSVLogger("ppo_CartPole-v1", log_dir=str(run / "logs")) as logger:
        logger.log_hparams({"seed": 0})
    for args in ([run, "--list-metrics"], [run]):
        line = _error(plot(*args, cwd=tmp_path))
        assert "logged no series" in line and "trainer.log_interval" in line
        assert "--metric" not in line  # the user gave no --metric


def test_error_for_a_bad_smooth(sweep, tmp_path):
    assert "--smooth 0" in _error(plot(sweep, "--smooth", "0", cwd=tmp_path))


def test_usage_errors_are_one_error_line(sweep, tmp_path):
    line = _error(plot(sweep, "--band", "iqr", cwd=tmp_path))
    assert "--band" in line and "'iqr'" in line and "std" in line
    assert "unrecognized arguments: --colour" in _error(plot(sweep, "--colour", cwd=tmp_path))
    assert "DIR" in _error(plot(cwd=tmp_path))


def test_group_by_modes_do_not_mix_with_keys(sweep, tmp_path):
    line = _error(plot(sweep, "--group-by", "run,seed", cwd=tmp_path))
    assert "cannot be combined with config keys" in line


def test_the_console_script_names_the_command(capsys):
    import importlib
    import re

    pyproject = (REPO / "pyproject.toml").read_text()
    target = re.search(r'^rl-trainers-plot = "(.+)"$', pyproject, re.MULTILINE).group(1)
    module, _, name = target.partition(":")
    entry = getattr(importlib.import_module(module), name)
    with pytest.raises(SystemExit) as exit_:
        entry(["--help"])
    assert exit_.value.code == 0
    assert "--list-metrics" in capsys.readouterr().out


def test_a_run_with_two_csv_experiments_is_read_from_both(tmp_path):
    # a run resumed under another experiment name: the second logger carries on the curve
    from rl_trainers.plot.runs import find_runs, read_series

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("algorithm: ppo\nseed: 0\n")
    logs = _logged_runs(run, {"zz_first": [(100, 1.0), (200, 2.0)]})
    os.utime(logs / "zz_first", (1_000, 1_000))  # written before the resumed session's
    _logged_runs(run, {"aa_resumed": [(200, 20.0), (300, 3.0)]})
    (found,) = find_runs([run])
    assert read_series(found)["episode_return"] == [(100, 1.0), (200, 20.0), (300, 3.0)]
