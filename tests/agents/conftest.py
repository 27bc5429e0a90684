"""Tiny finished runs (train.py in a subprocess, seconds each), trained once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: A few hundred frames of an off-policy algorithm with small networks.
TINY_OFF_POLICY = [
    "trainer.total_frames=200",
    "collector.frames_per_batch=10",
    "collector.init_random_frames=50",
    "trainer.learning_starts=50",
    "replay_buffer.batch_size=32",
    "replay_buffer.size=1000",
    "network.policy.num_cells=[32,32]",
    "network.value.num_cells=[32,32]",
    "eval.episodes=2",
]

#: name -> (trainer, overrides): one run per algorithm family.
RUNS = {
    "ppo_cartpole": (
        "ppo",
        [
            "trainer.total_frames=512",
            "collector.frames_per_batch=128",
            "env.num_envs=4",
            "trainer.num_epochs=2",
            "trainer.minibatch_size=64",
            "eval.episodes=3",
            "eval.interval=256",
        ],
    ),
    "ppo_cartpole_pixels": (
        "ppo",
        [
            "env.from_pixels=true",
            "network=convnet",
            "env.num_envs=2",
            "trainer.total_frames=256",
            "collector.frames_per_batch=128",
            "trainer.num_epochs=1",
            "trainer.minibatch_size=64",
            "eval.episodes=2",
        ],
    ),
    "ppo_pendulum": (
        "ppo",
        [
            "env=pendulum",
            "env.normalize_observations=true",
            "trainer.total_frames=512",
            "collector.frames_per_batch=128",
            "env.num_envs=4",
            "trainer.num_epochs=2",
            "trainer.minibatch_size=64",
            "eval.episodes=2",
        ],
    ),
    "td3_pendulum": ("td3", TINY_OFF_POLICY),
    # gSDE (rl-zoo's A2C Pendulum preset): a noise matrix per training env in the checkpoint
    "a2c_gsde_pendulum": (
        "a2c",
        ["experiment=a2c_pendulum", "trainer.total_frames=640", "eval.episodes=2"],
    ),
    # the MuJoCo SAC preset: a TanhNormal over 3 bounded action dims (SB3's actor scale)
    "sac_hopper": (
        "sac",
        [
            "experiment=sac_halfcheetah",
            "env=hopper",
            *TINY_OFF_POLICY,
        ],
    ),
    "dqn_cartpole": (
        "dqn",
        [
            "trainer.total_frames=256",
            "collector.frames_per_batch=32",
            "collector.init_random_frames=64",
            "trainer.learning_starts=64",
            "trainer.utd_ratio=0.25",
            "replay_buffer.batch_size=16",
            "replay_buffer.size=1000",
            "network.value.num_cells=[32,32]",
            "eval.episodes=3",
        ],
    ),
}


def env_with_package() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("CKPT_BACKEND", None)
    return env


def train(algorithm: str, overrides: list[str], run_dir: Path, multirun: bool = False) -> None:
    where = f"hydra.sweep.dir={run_dir}" if multirun else f"hydra.run.dir={run_dir}"
    cmd = [
        sys.executable,
        str(REPO / "sota-implementations" / f"{algorithm}_trainer" / "train.py"),
        *(["-m"] if multirun else []),
        *overrides,
        "trainer.progress_bar=false",
        where,
    ]
    done = subprocess.run(cmd, env=env_with_package(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Every run of :data:`RUNS`, trained on first use."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, (algorithm, overrides) in RUNS.items():
        train(algorithm, overrides, base / name)
        out[name] = base / name
    return out


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m rl_trainers.<command> ...``."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
