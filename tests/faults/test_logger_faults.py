"""A logging backend failing mid-run: TensorBoard's directory, an MLflow file store, a W&B
offline directory taken away while the run writes to it.

The fault is real: right after the checkpoint of frame 128 is written, the backend's
directory is moved aside and a regular file of the same name put in its place (a write into
it then fails for root too, unlike ``chmod``). The backend's files up to the fault stay
readable in the moved directory (TensorBoard's ``EventAccumulator``, ``MlflowClient``, the
W&B offline run's files); the CSV fallback holds the metrics from the failure on.
"""

from __future__ import annotations

import csv
import importlib.util
import textwrap

import pytest

from rl_trainers.core.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint

from .conftest import SCRIPT, TINY, error_lines, run_to_end, spawn, train

pytestmark = pytest.mark.timeout(240)

SAVE_EVERY = ["trainer.save_trainer_interval=64"]
EXP = "ppo_CartPole-v1"

# Runs train.py; after the FAULT_AT-th checkpoint write, moves the directory argv[1] to
# "<dir>.moved" and puts a regular file named as the directory in its place.
TAKE_DIR_AWAY = textwrap.dedent(
    """
    import os, runpy, sys
    from rl_trainers.core import checkpoint

    target, original, calls = sys.argv[1], checkpoint.save_rotating, []

    def save_rotating(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(1)
        if len(calls) == int(os.environ.get("FAULT_AT", "2")):
            os.rename(target, target + ".moved")
            with open(target, "w") as f:
                f.write("not a directory any more")
            print("FAULT INJECTED", file=sys.stderr, flush=True)
        return out

    checkpoint.save_rotating = save_rotating
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def _needs(package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install 'rl_trainers[{package}]')")


def _run_with_fault(tmp_path, target: str, overrides: list[str], timeout: float = 180):
    """``train.py`` with ``overrides`` in ``tmp_path/run``; ``target`` (relative to the run
    directory) taken away after the second checkpoint. Returns (code, stderr, seconds, run)."""
    out = tmp_path / "run"
    script = tmp_path / "take_dir_away.py"
    script.write_text(TAKE_DIR_AWAY)
    args = [str(script), str(out / target), str(SCRIPT), *overrides, f"hydra.run.dir={out}"]
    return (*run_to_end(args, tmp_path, timeout), out)


def _csv_steps(series) -> list[int]:
    with open(series, newline="") as f:
        return [int(row[0]) for row in csv.reader(f) if row]


def _fallback_series(out):
    scalars = out / "logs" / EXP / "scalars"
    return {p.relative_to(scalars).with_suffix("").as_posix(): p for p in scalars.rglob("*.csv")}


def _check_continued(code, stderr, seconds, out, backend: str) -> dict:
    assert code == 0, stderr[-3000:]
    assert "FAULT INJECTED" in stderr
    (warning,) = [line for line in stderr.splitlines() if "logger backend" in line]
    assert warning.startswith(f"Warning: the logger backend {backend} failed in ")
    assert "training continues and the metrics go to the CSV files in " in warning
    assert str(out / "logs" / EXP) in warning
    assert "Traceback" not in stderr and not error_lines(stderr)
    # training went to its end, checkpoints and summary included
    alias = out / "checkpoints" / "trainer.pt"
    assert list_checkpoints(alias)[-1][0] == 256
    assert (out / "summary.json").exists()
    # the CSV fallback holds every scalar from the failure on (frames 192 and 256); the
    # scalars since the backend's last flush (at the checkpoint of frame 128) are replayed
    series = _fallback_series(out)
    assert "loss_objective" in series, sorted(series)
    for name, path in series.items():
        steps = _csv_steps(path)
        assert steps == sorted(set(steps)), (name, steps)  # each point once
        assert steps and min(steps) > 128 and max(steps) <= 256, (name, steps)
    assert _csv_steps(series["loss_objective"]) == [192, 256]
    assert seconds < 120, f"{seconds:.0f} s"
    return series


def test_tensorboard_directory_taken_away_mid_run_continues_into_csv(tmp_path):
    _needs("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    overrides = [*TINY["ppo"], *SAVE_EVERY, "logger=tensorboard"]
    code, stderr, seconds, out = _run_with_fault(tmp_path, "tensorboard", overrides)
    series = _check_continued(code, stderr, seconds, out, "TensorboardLogger")
    assert (out / "tensorboard").is_file()
    # what TensorBoard had written before the fault is intact and readable
    events = EventAccumulator(str(out / "tensorboard.moved" / EXP))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert set(tags) == set(series)
    assert [e.step for e in events.Scalars("loss_objective")] == [64, 128]


def test_mlflow_file_store_taken_away_mid_run_continues_into_csv(tmp_path, monkeypatch):
    _needs("mlflow")
    from mlflow.tracking import MlflowClient

    store = tmp_path / "run" / "mlruns"
    overrides = [*TINY["ppo"], *SAVE_EVERY, "logger=mlflow", f"logger.tracking_uri=file://{store}"]
    code, stderr, seconds, out = _run_with_fault(tmp_path, "mlruns", overrides)
    series = _check_continued(code, stderr, seconds, out, "MLFlowLogger")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=f"file://{out / 'mlruns.moved'}")
    (run,) = client.search_runs([client.get_experiment_by_name(EXP).experiment_id])
    assert set(run.data.metrics) == set(series)
    history = client.get_metric_history(run.info.run_id, "loss_objective")
    assert sorted(m.step for m in history) == [64, 128]


def test_wandb_offline_directory_taken_away_mid_run_continues_into_csv(tmp_path):
    _needs("wandb")
    overrides = [*TINY["ppo"], *SAVE_EVERY, "logger=wandb", "logger.offline=true"]
    code, stderr, seconds, out = _run_with_fault(tmp_path, "wandb", overrides)
    _check_continued(code, stderr, seconds, out, "WandbLogger")
    # the offline run's records up to the fault are in the moved directory
    (record,) = (out / "wandb.moved").glob("offline-run-*/run-*.wandb")
    data = record.read_bytes()
    assert b"loss_objective" in data


def test_on_error_raise_stops_after_the_batch_with_a_checkpoint(tmp_path):
    _needs("tensorboard")
    overrides = [*TINY["ppo"], *SAVE_EVERY, "logger=tensorboard", "logger.on_error=raise"]
    code, stderr, seconds, out = _run_with_fault(tmp_path, "tensorboard", overrides)
    assert code == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert line.startswith("Error: the logger backend TensorboardLogger failed in ")
    assert "logger.on_error=raise stopped the run after the batch in progress" in line
    checkpoint = out / "checkpoints" / "trainer_192.pt"
    assert line.endswith(f"; checkpoint: {checkpoint}")
    assert "Traceback" not in stderr and "Warning: the logger backend" not in stderr
    alias = out / "checkpoints" / "trainer.pt"
    assert [n for n, _ in list_checkpoints(alias)][-1] == 192
    assert load_checkpoint(latest_checkpoint(alias))["counters"]["collected_frames"] == 192
    assert not (out / "summary.json").exists()
    assert _csv_steps(_fallback_series(out)["loss_objective"]) == [192]
    assert seconds < 120

    # once the directory is back, the run continues from that checkpoint
    (out / "tensorboard").unlink()
    resumed = [*overrides, "trainer.resume=true", f"hydra.run.dir={out}"]
    code, stderr, _ = train(resumed, tmp_path, 180)
    assert code == 0, stderr[-3000:]
    assert f"Resumed from {checkpoint} at frame 192." in stderr


def test_on_error_takes_continue_or_raise_only(tmp_path):
    overrides = [*TINY["ppo"], "logger.on_error=ignore", f"hydra.run.dir={tmp_path / 'run'}"]
    code, stderr, _ = train(overrides, tmp_path, 120)
    assert code == 2
    (line,) = error_lines(stderr)
    assert "logger.on_error" in line and "ignore" in line and "continue or raise" in line
    code, stdout_help, _ = _help(tmp_path)
    assert code == 0 and "on_error" in stdout_help


def _help(tmp_path):
    proc = spawn([str(SCRIPT), "--help"], tmp_path)
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, stderr


def test_a_video_write_that_fails_loses_the_video_not_the_scalars(tmp_path):
    """The CSV logger's video directory taken away mid-run: the evaluations' videos after the
    fault are lost (one warning), every scalar still reaches the CSV files."""
    video = ["eval.video=true", "eval.episodes=1", "eval.interval=64", "eval.video_max_frames=8"]
    code, stderr, seconds, out = _run_with_fault(
        tmp_path, f"logs/{EXP}/videos", [*TINY["ppo"], *SAVE_EVERY, *video]
    )
    assert code == 0, stderr[-3000:]
    assert "FAULT INJECTED" in stderr
    (warning,) = [line for line in stderr.splitlines() if "logger backend" in line]
    assert warning.startswith("Warning: the logger backend CSVLogger failed in log_video: ")
    assert "the videos it fails on are skipped and the scalars go on to it" in warning
    assert "Traceback" not in stderr and not error_lines(stderr)
    scalars = out / "logs" / EXP / "scalars"
    assert _csv_steps(scalars / "loss_objective.csv") == [64, 128, 192, 256]
    assert _csv_steps(scalars / "eval" / "return_mean.csv") == [64, 128, 192, 256]
    moved = out / "logs" / EXP / "videos.moved" / "eval"
    assert sorted(p.name for p in moved.iterdir()) == ["video_128.gif", "video_64.gif"]
    assert (out / "summary.json").exists()
    assert seconds < 120, f"{seconds:.0f} s"
