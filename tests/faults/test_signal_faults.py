"""Stop signals outside the batch loop: during start-up, a checkpoint write, the final
evaluation. Each ends the run within seconds with one ``Stopped by`` line."""

from __future__ import annotations

import signal
import textwrap
import time

import pytest

from rl_trainers.core.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint

from .conftest import LONG, SCRIPT, TINY, _StreamCollector, _wait_for, faults_env, spawn

pytestmark = pytest.mark.timeout(240)


def _signal_when(proc, stderr: _StreamCollector, marker: str, sig: int) -> float:
    """Send ``sig`` once ``marker`` was printed; returns the seconds until the exit."""
    _wait_for(lambda: marker in stderr.text(), 120, proc)
    proc.send_signal(sig)
    start = time.monotonic()
    proc.wait(timeout=60)
    stderr._thread.join(5)
    return time.monotonic() - start


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_during_start_up(sig, tmp_path):
    out = tmp_path / "run"
    args = [str(SCRIPT), *TINY["ppo"], "env.env_name=faults.envs:SlowStartCartPole"]
    proc = spawn([*args, f"hydra.run.dir={out}"], tmp_path, **faults_env(start_sleep=60))
    stderr = _StreamCollector(proc.stderr)
    try:
        seconds = _signal_when(proc, stderr, "ENV STARTING", sig)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.text()
    assert proc.returncode == 128 + sig, text[-3000:]
    name = signal.Signals(sig).name
    assert f"Stopped by {name} during start-up (before the first batch); no checkpoint" in text
    assert "Traceback" not in text
    assert seconds < 20


def test_sigterm_during_the_final_evaluation(tmp_path):
    out = tmp_path / "run"
    args = [str(SCRIPT), *TINY["ppo"], "env.env_name=faults.envs:SlowAfterCartPole"]
    # 256 frames of training; the evaluation's steps are slow
    proc = spawn([*args, f"hydra.run.dir={out}"], tmp_path, **faults_env(after=256))
    stderr = _StreamCollector(proc.stderr)
    try:
        seconds = _signal_when(proc, stderr, "SLOW", signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.text()
    assert proc.returncode == 128 + signal.SIGTERM, text[-3000:]
    final = out / "checkpoints" / "trainer_256.pt"
    line = "Stopped by SIGTERM during the final evaluation (training is complete); checkpoint: "
    assert f"{line}{final}." in text
    assert not (out / "summary.json").exists()
    assert "Traceback" not in text
    assert seconds < 20


def test_second_signal_during_a_batch_stops_at_once_in_one_line(tmp_path):
    out = tmp_path / "run"
    args = [str(SCRIPT), *LONG, "env.env_name=faults.envs:SlowAfterCartPole"]
    # 4 envs: the steps of the third 64-frame batch take half a second each
    proc = spawn([*args, f"hydra.run.dir={out}"], tmp_path, **faults_env(after=140))
    stderr = _StreamCollector(proc.stderr)
    try:
        _wait_for(lambda: "SLOW" in stderr.text(), 120, proc)
        proc.send_signal(signal.SIGINT)
        _wait_for(lambda: "send it again" in stderr.text(), 60, proc)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        stderr._thread.join(5)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.text()
    assert proc.returncode == 128 + signal.SIGINT, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    last = out / "checkpoints" / "trainer_128.pt"
    assert (
        "Stopped at once by a second SIGINT at frame 128 (the batch in progress was dropped); "
        f"last checkpoint: {last}. Continue with: python {SCRIPT} "
    ) in text
    assert text.rstrip().endswith(f"trainer.resume=true hydra.run.dir={out}")


SLOW_SAVE = textwrap.dedent(
    """
    import runpy, sys, time, torch

    original, calls = torch.save, []

    def slow_save(obj, f, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            print("SAVING", file=sys.stderr, flush=True)
            time.sleep(3)
        return original(obj, f, *args, **kwargs)

    torch.save = slow_save
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def test_sigterm_during_a_checkpoint_write(tmp_path):
    out = tmp_path / "run"
    script = tmp_path / "slow_save.py"
    script.write_text(SLOW_SAVE)
    proc = spawn([str(script), str(SCRIPT), *LONG, f"hydra.run.dir={out}"], tmp_path)
    stderr = _StreamCollector(proc.stderr)
    try:
        seconds = _signal_when(proc, stderr, "SAVING", signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.text()
    assert proc.returncode == 128 + signal.SIGTERM, text[-3000:]
    alias = out / "checkpoints" / "trainer.pt"
    # the write in progress completes; the run stops after the next batch, saved too
    assert [n for n, _ in list_checkpoints(alias)] == [128, 192]
    assert not list((out / "checkpoints").glob(".*.tmp"))
    assert load_checkpoint(latest_checkpoint(alias))["counters"]["collected_frames"] == 192
    assert "Stopped by SIGTERM at frame 192; checkpoint: " in text
    assert seconds < 30
