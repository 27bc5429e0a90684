"""Helpers for the data-parallel tests: 2-process ``torchrun`` launches of the real app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A few hundred frames; a constant lr and clip range, so a run stopped at 256 frames and
#: resumed with trainer.total_frames=512 matches a 512-frame run bitwise.
PPO = [
    "collector.frames_per_batch=64",
    "env.num_envs=4",
    "trainer.minibatch_size=32",
    "trainer.num_epochs=2",
    "lr_scheduler.kind=constant",
    "trainer.anneal_clip_epsilon=false",
    "eval.episodes=2",
    "trainer.progress_bar=false",
    "trainer.log_interval=64",
    "trainer.num_threads=1",
]

SAC = [
    "trainer.total_frames=240",
    "collector.init_random_frames=40",
    "trainer.learning_starts=40",
    "replay_buffer.batch_size=32",
    "replay_buffer.size=1000",
    "network.policy.num_cells=[32,32]",
    "network.value.num_cells=[32,32]",
    "eval.episodes=2",
    "trainer.progress_bar=false",
    "trainer.log_interval=40",
    "trainer.num_threads=1",
]


def command(algorithm: str, overrides: list[str], nproc: int = 2) -> tuple[list[str], dict]:
    """``python -m torch.distributed.run --standalone --nproc_per_node=<nproc>`` (torchrun)
    of ``sota-implementations/<algorithm>_trainer/train.py`` (``nproc=0``: plain python),
    and its environment."""
    script = str(REPO / "sota-implementations" / f"{algorithm}_trainer" / "train.py")
    launcher = [sys.executable]
    if nproc:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    return [*launcher, script, *overrides], env


def launch(algorithm: str, overrides: list[str], nproc: int = 2) -> subprocess.CompletedProcess:
    """Run :func:`command` to its end."""
    args, env = command(algorithm, overrides, nproc)
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)


def start(algorithm: str, overrides: list[str], nproc: int = 2) -> subprocess.Popen:
    """Start :func:`command` in its own session (its output piped), to signal or kill."""
    args, env = command(algorithm, overrides, nproc)
    return subprocess.Popen(
        args,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def checked(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stderr[-4000:]
    return done
