"""Compose the real configs with Hydra and a few tiny overrides (no network, seconds per run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from rl_trainers.app import RECIPES_DIR
from rl_trainers.configs import ENV_PRESET_ACTIONS

REPO = Path(__file__).resolve().parents[2]

#: Every option of the ``env`` group (one YAML file each), and those with discrete actions.
ENV_OPTIONS = sorted(p.stem for p in (Path(RECIPES_DIR) / "env").glob("*.yaml"))
DISCRETE_ENV_OPTIONS = [e for e in ENV_OPTIONS if ENV_PRESET_ACTIONS.get(e) == "discrete"]

#: Overrides that make a run a few hundred frames long.
TINY = {
    "ppo": [
        "trainer.total_frames=256",
        "collector.frames_per_batch=64",
        "env.num_envs=4",
        "trainer.minibatch_size=32",
        "trainer.num_epochs=2",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=64",
    ],
    "sac": [
        "trainer.total_frames=200",
        "collector.init_random_frames=50",
        "trainer.learning_starts=50",
        "replay_buffer.batch_size=32",
        "replay_buffer.size=1000",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=50",
    ],
    "dqn": [
        "trainer.total_frames=256",
        "collector.frames_per_batch=32",
        "collector.init_random_frames=64",
        "trainer.learning_starts=64",
        "trainer.utd_ratio=0.25",
        "trainer.target_update_interval=4",
        "replay_buffer.batch_size=16",
        "replay_buffer.size=1000",
        "network.value.num_cells=[32,32]",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=64",
    ],
    "td3": [
        "trainer.total_frames=200",
        "collector.frames_per_batch=10",
        "collector.init_random_frames=50",
        "trainer.learning_starts=50",
        "replay_buffer.batch_size=32",
        "replay_buffer.size=1000",
        "network.policy.num_cells=[32,32]",
        "network.value.num_cells=[32,32]",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=50",
    ],
    "a2c": [
        "trainer.total_frames=256",
        "collector.frames_per_batch=32",
        "env.num_envs=4",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=64",
    ],
    "pg": [
        "trainer.total_frames=256",
        "collector.frames_per_batch=64",
        "env.num_envs=4",
        "eval.episodes=2",
        "trainer.progress_bar=false",
        "trainer.log_interval=64",
    ],
}
TINY["ddpg"] = TINY["td3"]

#: Training from rendered frames through the ConvNet encoder, added to ``TINY`` (2 envs;
#: SAC with short episodes and few small updates, the ConvNet updates dominate its time).
PIXELS = {
    "ppo": ["env.from_pixels=true", "network=convnet", "env.num_envs=2"],
    "a2c": ["env.from_pixels=true", "network=convnet", "env.num_envs=2"],
    "sac": [
        "env.from_pixels=true",
        "network=convnet",
        "env.max_episode_steps=50",
        "collector.init_random_frames=150",
        "trainer.learning_starts=150",
        "replay_buffer.batch_size=8",
        "replay_buffer.size=200",
    ],
    "dqn": [
        "env.from_pixels=true",
        "network=convnet",
        "env.max_episode_steps=50",
        "replay_buffer.batch_size=8",
        "replay_buffer.size=300",
    ],
}
PIXELS["td3"] = PIXELS["ddpg"] = PIXELS["sac"]


def compose_config(algorithm: str, overrides: list[str] = ()):
    """The composed ``configs/<algorithm>_trainer.yaml`` with ``overrides``."""
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        return compose(config_name=f"{algorithm}_trainer", overrides=list(overrides))


@pytest.fixture
def tiny_config():
    """Compose a tiny run of an algorithm: ``tiny_config("ppo", ["env=acrobot"])``."""

    def make(algorithm: str, overrides: list[str] = ()):
        return compose_config(algorithm, [*TINY[algorithm], *overrides])

    return make


@pytest.fixture(scope="session")
def help_page(tmp_path_factory):
    """``help_page(algorithm)``: the finished ``train.py --help`` of an algorithm, run once."""
    pages = {}

    def page(algorithm: str) -> subprocess.CompletedProcess:
        if algorithm not in pages:
            pages[algorithm] = subprocess.run(
                [
                    sys.executable,
                    str(REPO / "sota-implementations" / f"{algorithm}_trainer" / "train.py"),
                    "--help",
                ],
                cwd=tmp_path_factory.mktemp("help"),
                capture_output=True,
                text=True,
                timeout=600,
            )
        return pages[algorithm]

    return page


def train(algorithm: str, *args: str, cwd, env=None) -> subprocess.CompletedProcess:
    """``sota-implementations/<algorithm>_trainer/train.py <args>`` run in ``cwd``, its output
    captured."""
    script = REPO / "sota-implementations" / f"{algorithm}_trainer" / "train.py"
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
