"""Faults of the checkpoint files: the newest one truncated, a write failing mid-run, a
signal landing inside a write."""

from __future__ import annotations

import os
import signal
import textwrap
import time

import pytest
import torch

from rl_trainers.core.checkpoint import list_checkpoints, load_checkpoint, save_checkpoint

from .conftest import SCRIPT, TINY, error_lines, spawn, train

pytestmark = pytest.mark.timeout(240)

SAVE_EVERY = ["trainer.save_trainer_interval=64", "trainer.keep_checkpoints=3"]


def test_resume_skips_a_truncated_newest_checkpoint(tmp_path):
    out = tmp_path / "run"
    code, stderr, _ = train([*TINY["ppo"], *SAVE_EVERY, f"hydra.run.dir={out}"], tmp_path, 180)
    assert code == 0, stderr[-3000:]
    alias = out / "checkpoints" / "trainer.pt"
    assert [n for n, _ in list_checkpoints(alias)] == [128, 192, 256]
    newest = out / "checkpoints" / "trainer_256.pt"
    os.truncate(newest, newest.stat().st_size // 2)  # also truncates the alias (a hard link)

    overrides = [*TINY["ppo"], *SAVE_EVERY, "trainer.total_frames=320", "trainer.resume=true"]
    code, stderr, seconds = train([*overrides, f"hydra.run.dir={out}"], tmp_path, 180)
    assert code == 0, stderr[-3000:]
    (warning,) = [line for line in stderr.splitlines() if "skipped" in line]
    assert warning.startswith("Warning: trainer.resume=true: skipped ")
    assert str(newest) in warning
    assert f"resuming from {out / 'checkpoints' / 'trainer_192.pt'}" in warning
    assert f"Resumed from {out / 'checkpoints' / 'trainer_192.pt'} at frame 192." in stderr
    # the abandoned (corrupted) continuation is replaced by the new one
    assert [n for n, _ in list_checkpoints(alias)] == [192, 256, 320]
    assert load_checkpoint(alias)["counters"]["collected_frames"] == 320
    assert seconds < 120


def test_resume_with_every_checkpoint_truncated_fails_with_one_line(tmp_path):
    out = tmp_path / "run"
    code, stderr, _ = train([*TINY["ppo"], *SAVE_EVERY, f"hydra.run.dir={out}"], tmp_path, 180)
    assert code == 0, stderr[-3000:]
    for _, path in list_checkpoints(out / "checkpoints" / "trainer.pt"):
        os.truncate(path, 100)
    code, stderr, _ = train(
        [*TINY["ppo"], "trainer.resume=true", f"hydra.run.dir={out}"], tmp_path, 180
    )
    assert code == 2
    (line,) = error_lines(stderr)
    assert "trainer_256.pt is truncated or corrupted" in line


# A disk that fills up during the third checkpoint: RLIMIT_FSIZE makes the kernel refuse
# writes past a size (EFBIG, "File too large"), as a full disk refuses them (ENOSPC). It
# holds for root too. Python ignores SIGXFSZ, so the write fails with an OSError.
DISK_FULL = textwrap.dedent(
    """
    import resource, runpy, sys
    from rl_trainers.core import checkpoint

    limit, original, calls = int(sys.argv[1]), checkpoint.save_rotating, []

    def save_rotating(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        return original(*args, **kwargs)

    checkpoint.save_rotating = save_rotating
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def test_disk_full_during_a_checkpoint_keeps_the_previous_one(tmp_path):
    out = tmp_path / "run"
    script = tmp_path / "disk_full.py"
    script.write_text(DISK_FULL)
    overrides = [*TINY["ppo"], *SAVE_EVERY, f"hydra.run.dir={out}"]
    start = time.monotonic()
    proc = spawn([str(script), "20000", str(SCRIPT), *overrides], tmp_path)
    try:
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    seconds = time.monotonic() - start
    assert proc.returncode == 2, stderr[-3000:]
    (line,) = error_lines(stderr)
    previous = out / "checkpoints" / "trainer_128.pt"
    assert line.startswith("Error: could not write the checkpoint of frame 192 in ")
    assert "is the disk full?" in line and f"the previous one, {previous}, is intact" in line
    assert "trainer.resume=true" in line
    alias = out / "checkpoints" / "trainer.pt"
    assert [n for n, _ in list_checkpoints(alias)] == [64, 128]
    assert not list((out / "checkpoints").glob(".*.tmp")), "the partial write is removed"
    assert load_checkpoint(alias)["counters"]["collected_frames"] == 128
    assert seconds < 120

    # and the run continues from it once there is room again
    code, stderr, _ = train([*overrides, "trainer.resume=true"], tmp_path, 180)
    assert code == 0, stderr[-3000:]
    assert f"Resumed from {previous} at frame 128." in stderr


def test_a_signal_during_a_checkpoint_write_is_an_interrupt_not_a_disk_error(tmp_path):
    # A stop-at-once signal handler raises KeyboardInterrupt; when it runs inside torch's
    # zip writer (a write interrupted by the signal), torch hands it back as a RuntimeError
    # that reads like a failed write. Real SIGALRMs at varying moments of many writes: every
    # one must come out as the interrupt.
    state = {f"w{i}": torch.randn(64, 64) for i in range(200)}
    path = tmp_path / "trainer.pt"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    outcomes = []
    try:
        for i in range(300):
            signal.setitimer(signal.ITIMER_REAL, 0.0002 * (1 + i % 25))
            try:
                save_checkpoint(state, path)
                outcomes.append("saved")
            except BaseException as err:  # noqa: BLE001 - the type is what is checked
                outcomes.append(type(err).__name__)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert set(outcomes) <= {"saved", "KeyboardInterrupt"}, sorted(set(outcomes))
    assert outcomes.count("KeyboardInterrupt") > 100  # the signals did land in the writes
    # an interrupted write never leaves a partial file where the checkpoint goes
    assert "saved" in outcomes or not path.exists()
