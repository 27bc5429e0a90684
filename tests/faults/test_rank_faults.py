"""One ``torchrun`` rank killed (SIGKILL) mid-run in data-parallel training: the other rank
ends with one ``Error:`` line, ``torchrun`` exits, no process is left, and every rank's
last checkpoint resumes. Two ranks, gloo on CPU, a tiny PPO budget."""

from __future__ import annotations

import re
import time

import psutil
import pytest
from distributed.conftest import PPO, checked, launch
from distributed.conftest import start as start_torchrun

from rl_trainers.core.checkpoint import list_checkpoints

from .conftest import _assert_gone, error_lines

pytestmark = pytest.mark.timeout(300)


def _saved(out, rank: int) -> list[int]:
    folder = out / "checkpoints" if rank == 0 else out / "checkpoints" / f"rank{rank}"
    return [n for n, _ in list_checkpoints(folder / "trainer.pt")]


@pytest.mark.parametrize("victim", [0, 1])
def test_a_rank_killed_mid_run_ends_the_other_and_torchrun_with_one_line(victim, tmp_path):
    out = tmp_path / "run"
    overrides = [
        *PPO,
        "trainer.total_frames=10000000",
        "trainer.save_trainer_interval=128",
        f"hydra.run.dir={out}",
    ]
    proc = start_torchrun("ppo", overrides)
    try:
        deadline = time.monotonic() + 120
        while not (_saved(out, 0) and _saved(out, 1)):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no checkpoint"
            time.sleep(0.2)
        launcher = psutil.Process(proc.pid)
        workers = {int(p.environ()["RANK"]): p for p in launcher.children()}
        assert sorted(workers) == [0, 1]
        family = [p.pid for p in launcher.children(recursive=True)]
        workers[victim].kill()
        start = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        seconds = time.monotonic() - start
    finally:
        if proc.poll() is None:
            psutil.Process(proc.pid).kill()
            proc.communicate()
    survivor = 1 - victim
    assert proc.returncode == 1, stderr[-3000:]  # torchrun's status when a worker failed
    (line,) = error_lines(stderr)
    assert line.startswith(f"Error: rank {survivor} of 2 lost another rank in a collective ")
    assert re.search(r"Connection (closed|reset) by peer", line), line
    assert line.endswith("continue with trainer.resume=true")
    assert "Error executing job" not in stderr  # no traceback from the surviving rank
    assert f"exitcode  : -9 (pid: {workers[victim].pid})" in stderr  # torchrun names it
    assert seconds < 30, f"{seconds:.1f} s from the kill to torchrun's exit"
    _assert_gone(family)

    # every rank's checkpoints are intact: the run resumes from the newest save both have
    common = max(set(_saved(out, 0)) & set(_saved(out, 1)))
    resumed = [
        *PPO,
        f"trainer.total_frames={common + 128}",
        "trainer.save_trainer_interval=128",
        "trainer.resume=true",
        f"hydra.run.dir={out}",
    ]
    done = checked(launch("ppo", resumed))
    assert f"at frame {common}." in done.stderr
    assert _saved(out, 0)[-1] == _saved(out, 1)[-1] == common + 128
