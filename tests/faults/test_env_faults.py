"""Faults of the environment: a step that never returns, NaN/inf outputs, a worker killed.

Each test runs ``train.py`` in a subprocess with a real fault (an env from ``faults.envs``
blocking on an event nobody sets, returning NaN, a worker sent SIGKILL) and checks what a
user sees: the exit status, one ``Error:`` line, the checkpoints on disk, the time taken.
"""

from __future__ import annotations

import signal
import time

import psutil
import pytest

from rl_trainers.core.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint

from .conftest import (
    LONG,
    SCRIPT,
    TINY,
    _assert_gone,
    _children,
    _StreamCollector,
    _wait_for,
    error_lines,
    faults_env,
    spawn,
    train,
)

pytestmark = pytest.mark.timeout(240)

BLOCKING = "env.env_name=faults.envs:BlockingCartPole"
MULTI = ["collector=multi_sync", "collector.num_workers=2"]


# --------------------------------------------------------------------------- step timeout
@pytest.mark.parametrize("workers", [[], MULTI], ids=["in-process", "multi_sync"])
def test_env_step_that_blocks_ends_the_run_at_step_timeout(workers, tmp_path):
    overrides = [
        *TINY["ppo"],
        *workers,
        BLOCKING,
        "collector.step_timeout_s=2",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    code, stderr, seconds = train(overrides, tmp_path, 180, **faults_env(after=20))
    assert code == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert "'faults.envs:BlockingCartPole' (sub-env 0 of 4)" in line
    assert "collector.step_timeout_s=2 s" in line
    if workers:
        assert line.startswith("Error: collector worker ")
    assert "Traceback" not in stderr
    assert seconds < 120, f"{seconds:.0f} s"


# --------------------------------------------------------------------------- stop grace
@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_sigterm_while_an_env_step_blocks_exits_after_the_grace(vectorization, tmp_path):
    out = tmp_path / "run"
    args = [
        str(SCRIPT),
        *LONG,
        BLOCKING,
        f"env.vectorization={vectorization}",
        "trainer.stop_grace_s=3",
        f"hydra.run.dir={out}",
    ]
    # 4 sub-envs: 40 steps each are two full 64-frame batches, the third blocks
    proc = spawn(args, tmp_path, **faults_env(after=40))
    alias = out / "checkpoints" / "trainer.pt"
    try:
        _wait_for(lambda: [n for n, _ in list_checkpoints(alias)] == [64, 128], 120, proc)
        children = _children(proc.pid)
        time.sleep(2)  # the third batch is blocked now
        stderr = _StreamCollector(proc.stderr)
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        proc.wait(timeout=90)
        seconds = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr._thread.join(5)
    text = stderr.text()
    assert proc.returncode == 128 + signal.SIGTERM, text[-3000:]
    assert seconds < 3 + 30, f"the run took {seconds:.0f} s to stop after SIGTERM"
    (line,) = [x for x in text.splitlines() if x.startswith("Stopped by SIGTERM")]
    assert "did not end within trainer.stop_grace_s=3 s and was dropped" in line
    assert "trainer_128.pt" in line and "trainer.resume=true" in line
    assert "Traceback" not in text
    assert load_checkpoint(latest_checkpoint(alias))["counters"]["collected_frames"] == 128
    _assert_gone(children)


# --------------------------------------------------------------------------- NaN / inf
@pytest.mark.parametrize(
    ("env", "key", "value"),
    [("NaNCartPole", "'next/observation'", "nan"), ("InfRewardCartPole", "'next/reward'", "inf")],
)
def test_non_finite_env_output_stops_naming_entry_env_and_frame(env, key, value, tmp_path):
    overrides = [
        *TINY["ppo"],
        "trainer.total_frames=512",
        f"env.env_name=faults.envs:{env}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    # 4 sub-envs, the 71st step of each is bad: frame 280, step 6 of the 5th batch
    code, stderr, seconds = train(overrides, tmp_path, 180, **faults_env(after=70))
    assert code == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert f"holds {value} in {key} from sub-env 0 of 4 at frame 280 (step 6" in line
    assert "non-finite loss" not in stderr
    assert seconds < 120


def test_check_finite_false_lets_non_finite_values_through(tmp_path):
    overrides = [
        *TINY["ppo"],
        "env.env_name=faults.envs:InfRewardCartPole",
        "collector.check_finite=false",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    _, stderr, _ = train(overrides, tmp_path, 180, **faults_env(after=30))
    assert "holds inf" not in stderr


# --------------------------------------------------------------------------- workers
def test_collector_worker_killed_mid_run_ends_with_one_line(tmp_path):
    out = tmp_path / "run"
    proc = spawn([str(SCRIPT), *LONG, *MULTI, f"hydra.run.dir={out}"], tmp_path)
    try:
        _wait_for(lambda: list_checkpoints(out / "checkpoints" / "trainer.pt"), 120, proc)
        children = _children(proc.pid)
        assert len(children) >= 2
        psutil.Process(children[0]).kill()
        start = time.monotonic()
        _, stderr = proc.communicate(timeout=90)
        seconds = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert "collector worker" in line and "died (exit code -9)" in line
    assert seconds < 30
    _assert_gone(children)


# --------------------------------------------------------------------------- env raises
@pytest.mark.parametrize(
    "where",
    [[], ["env.vectorization=async"], MULTI],
    ids=["in-process", "async-vector-env", "multi_sync"],
)
def test_env_raising_in_step_ends_with_one_line(where, tmp_path):
    overrides = [
        *TINY["ppo"],
        *where,
        "env.env_name=resume.faulty_env:FaultyCartPole",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    code, stderr, seconds = train(overrides, tmp_path, 180)
    assert code == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert "'resume.faulty_env:FaultyCartPole'" in line
    assert "RuntimeError: boom from the env" in line
    if where == MULTI:
        assert line.startswith("Error: collector worker ")
    else:
        assert line.startswith("Error: env 'resume.faulty_env:FaultyCartPole' raised in step: ")
    assert seconds < 120


def test_env_raising_in_reset_ends_with_one_line(tmp_path):
    overrides = [
        *TINY["ppo"],
        "env.env_name=faults.envs:RaisingResetCartPole",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    code, stderr, seconds = train(overrides, tmp_path, 180, **faults_env(after=1))
    assert code == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    assert line == (
        "Error: env 'faults.envs:RaisingResetCartPole' raised in reset: "
        "OSError: simulator connection lost in reset"
    )
    assert "Traceback" not in stderr
    assert seconds < 120
