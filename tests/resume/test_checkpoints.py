"""Checkpoint rotation, metadata checks, non-finite losses and env-state capture."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer, resume_checkpoint
from rl_trainers.app.errors import user_errors
from rl_trainers.app.run import run
from rl_trainers.collectors import SyncDataCollector
from rl_trainers.core.checkpoint import (
    CheckpointError,
    decode,
    encode,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_rotating,
)
from rl_trainers.core.loop import NonFiniteLossError
from rl_trainers.envs import GymEnv
from rl_trainers.envs.libs.gym_state import get_env_state, get_gym_state, set_env_state
from rl_trainers.errors import ConfigError

from .conftest import REPO, TINY, tiny


# --------------------------------------------------------------------------- rotation
def test_rotation_keeps_the_last_k_and_links_the_latest(tmp_path):
    alias = tmp_path / "ckpt" / "trainer.pt"
    for frames in (64, 128, 192, 256):
        save_rotating(
            {"format": "rl_trainers.trainer", "version": 1, "f": frames}, alias, frames, 2
        )
    assert [n for n, _ in list_checkpoints(alias)] == [192, 256]
    assert latest_checkpoint(alias).name == "trainer_256.pt"
    assert load_checkpoint(alias)["f"] == 256
    assert alias.stat().st_ino == latest_checkpoint(alias).stat().st_ino  # a hard link
    # resumed from 192 and saved again there: the abandoned 256 goes away
    save_rotating({"format": "rl_trainers.trainer", "version": 1, "f": -192}, alias, 192, 2)
    assert [n for n, _ in list_checkpoints(alias)] == [192]
    assert load_checkpoint(alias)["f"] == -192


def test_app_run_writes_interval_checkpoints(tmp_path):
    run(tiny("ppo", "trainer.save_trainer_interval=64", "trainer.keep_checkpoints=3"), tmp_path)
    alias = tmp_path / "checkpoints" / "trainer.pt"
    assert [n for n, _ in list_checkpoints(alias)] == [128, 192, 256]
    state = load_checkpoint(alias)
    assert state["counters"]["collected_frames"] == 256
    assert state["meta"]["algorithm"] == "ppo" and state["meta"]["env.env_name"] == "CartPole-v1"
    assert {"loss_module", "optimizer", "lr_scheduler", "logger", "eval_env"} <= set(
        state["modules"]
    )
    internal = state["collector"]["env_internal"]
    assert internal["supported"] and len(internal["envs"]) == 4
    assert internal["envs"][0]["np_random"]["bit_generator"] == "PCG64"


def test_resume_true_without_checkpoint_starts_fresh(tmp_path, capsys):
    assert resume_checkpoint(tiny("ppo", "trainer.resume=true"), tmp_path) is None
    assert "starting a new run" in capsys.readouterr().err


def test_resume_from_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"trainer.resume_from='nope.pt' is invalid"):
        resume_checkpoint(tiny("ppo", "trainer.resume_from=nope.pt"), tmp_path)


# --------------------------------------------------------------------------- mismatches
def test_other_algorithm_env_or_network_is_refused_with_the_list(tmp_path):
    run(tiny("ppo"), tmp_path / "ppo")
    ckpt = tmp_path / "ppo" / "checkpoints" / "trainer.pt"
    cases = {
        "sac": (["env=pendulum"], ["algorithm: checkpoint 'ppo', this run 'sac'"]),
        "ppo": (
            ["env=acrobot", "network.policy.num_cells=[32]"],
            [
                "env.env_name: checkpoint 'CartPole-v1', this run 'Acrobot-v1'",
                "network.policy.num_cells: checkpoint (64, 64), this run (32,)",
            ],
        ),
    }
    for algorithm, (overrides, lines) in cases.items():
        cfg = tiny(algorithm, *overrides, f"trainer.resume_from={ckpt}")
        trainer = build_trainer(cfg, tmp_path / algorithm)
        try:
            with pytest.raises(CheckpointError) as info:
                trainer.load_from_file(resume_checkpoint(cfg, tmp_path / algorithm))
        finally:
            close_trainer(trainer)
        for line in lines:
            assert line in str(info.value)


def test_mismatch_in_the_app_is_a_short_message(tmp_path):
    run(tiny("ppo"), tmp_path / "ppo")
    ckpt = tmp_path / "ppo" / "checkpoints" / "trainer.pt"
    script = REPO / "sota-implementations" / "sac_trainer" / "train.py"
    proc = subprocess.run(
        [
            sys.executable,
            str(script),
            *TINY["sac"],
            f"trainer.resume_from={ckpt}",
            f"hydra.run.dir={tmp_path / 'sac'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "algorithm: checkpoint 'ppo', this run 'sac'" in proc.stderr


# --------------------------------------------------------------------------- non-finite loss
def test_non_finite_loss_stops_with_the_term_and_frame(tmp_path):
    cfg = tiny("ppo", "trainer.save_trainer_interval=64")
    trainer = build_trainer(cfg, tmp_path)
    critic = trainer.loss_module.critic_network

    def poison() -> None:
        if trainer.collected_frames >= 192:
            with torch.no_grad():
                next(critic.parameters()).fill_(math.nan)

    trainer.register_op("pre_optim_steps", poison)
    try:
        with pytest.raises(NonFiniteLossError) as info:
            trainer.train()
    finally:
        close_trainer(trainer)
    assert info.value.terms == ["loss_critic"] and info.value.frame == 192
    assert "loss_critic at frame 192" in str(info.value) and "trainer_128.pt" in str(info.value)
    state = load_checkpoint(latest_checkpoint(tmp_path / "checkpoints" / "trainer.pt"))
    assert state["counters"]["collected_frames"] == 128
    assert all(torch.isfinite(v).all() for v in state["modules"]["loss_module"].values())
    with pytest.raises(SystemExit) as stop, user_errors():
        raise info.value
    assert stop.value.code == 2


# --------------------------------------------------------------------------- env state
def test_collector_continues_episodes_exactly_after_restore():
    def make():
        env = GymEnv("Pendulum-v1", num_envs=2)
        env.set_seed(3)
        return SyncDataCollector(env, None, frames_per_batch=20, total_frames=-1)

    a = make()
    next(iter(a))
    torch.manual_seed(0)
    sd = a.state_dict()
    expected = a.next()
    b = make()
    b.load_state_dict(sd)  # torch's RNG (random actions) comes back with the collector
    got = b.next()
    assert (got == expected).all()
    a.shutdown(), b.shutdown()
    a.env.close(), b.env.close()


def test_opaque_env_state_warns_and_resets():
    env = GymEnv("resume.faulty_env:OpaqueStateCartPole", num_envs=2)
    env.reset()
    state = get_env_state(env)
    assert not state["supported"] and "physics" in state["reason"]
    with pytest.warns(RuntimeWarning, match="physics.*reset"):
        assert set_env_state(env, state) is False
    env.close()


def test_settings_held_in_a_dtype_or_an_enum_are_not_state_the_resume_loses():
    """An env keeping a numpy dtype or an enum member (configuration, rebuilt with the env)
    resumes its episodes; it used to be reset with a "cannot restore" warning."""
    a = GymEnv("resume.faulty_env:ConfiguredCartPole")
    a.set_seed(3)
    a.reset()
    _random_steps(a, 7)
    state = get_env_state(a)
    assert state["supported"], state
    torch.manual_seed(1)
    expected = _random_steps(a, 20)
    b = GymEnv("resume.faulty_env:ConfiguredCartPole")
    b.set_seed(99)
    b.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set_env_state(b, state)
    torch.manual_seed(1)
    assert torch.equal(_random_steps(b, 20), expected)
    a.close(), b.close()


def _random_steps(env, steps: int) -> torch.Tensor:
    """Observations of ``steps`` random-action steps continuing the env's current episodes."""
    from tensordict import TensorDict

    obs = []
    for _ in range(steps):
        td = env.rand_action(TensorDict({}, batch_size=env.batch_size))
        obs.append(env.step(td)["next", "observation"].clone())
    return torch.stack(obs)


def test_async_env_state_round_trip_through_the_workers():
    from rl_trainers.envs import ParallelEnv

    a = ParallelEnv(2, lambda: GymEnv("CartPole-v1"))
    b = ParallelEnv(2, lambda: GymEnv("CartPole-v1"))
    try:
        a.set_seed(5)
        a.reset()
        _random_steps(a, 30)
        state = get_env_state(a)
        assert state["supported"], state
        torch.manual_seed(1)
        expected = _random_steps(a, 40)
        b.set_seed(99)
        b.reset()
        assert set_env_state(b, state)
        torch.manual_seed(1)
        assert torch.equal(_random_steps(b, 40), expected)
    finally:
        a.close(), b.close()


# MountainCar's state is a tuple of numpy floats, Blackjack's cards numpy strings
@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "HalfCheetah-v5", "MountainCar-v0", "Blackjack-v1"]
)
def test_gym_state_round_trip_continues_bitwise(env_id):
    a = gym.make(env_id)
    a.reset(seed=1)
    a.action_space.seed(0)
    actions = [a.action_space.sample() for _ in range(120)]
    for act in actions[:60]:
        if any(a.step(act)[2:4]):
            a.reset()
    saved = io.BytesIO()
    torch.save(encode(get_gym_state(a)), saved)  # as a checkpoint stores and loads it
    state = decode(torch.load(io.BytesIO(saved.getvalue()), weights_only=True))
    b = gym.make(env_id)
    b.reset(seed=123)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from rl_trainers.envs.libs.gym_state import set_gym_state

        set_gym_state(b, state)
    for act in actions[60:]:
        ra, rb = a.step(act), b.step(act)
        assert np.array_equal(ra[0], rb[0]) and ra[1:4] == rb[1:4]
        if any(ra[2:4]):
            assert np.array_equal(a.reset()[0], b.reset()[0])


def test_rotation_with_the_torchsnapshot_backend(tmp_path, monkeypatch):
    pytest.importorskip("torchsnapshot")
    monkeypatch.setenv("CKPT_BACKEND", "torchsnapshot")
    alias = tmp_path / "trainer.pt"
    for frames in (64, 128, 192):
        state = {"format": "rl_trainers.trainer", "version": 1, "x": torch.tensor([frames])}
        save_rotating(state, alias, frames, 2)
    assert [p.name for _, p in list_checkpoints(alias)] == ["trainer_128", "trainer_192"]
    assert load_checkpoint(latest_checkpoint(alias))["x"].item() == 192


def test_an_env_state_a_resume_cannot_restore_is_one_warning_line(tmp_path):
    """Resuming a run whose env keeps state the checkpoint cannot hold: the app says so in
    one ``Warning:`` line (it printed Python's file, line and warning class)."""
    script = REPO / "sota-implementations" / "ppo_trainer" / "train.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    run_dir = tmp_path / "run"
    args = [
        *TINY["ppo"],
        "env.env_name=resume.faulty_env:OpaqueStateCartPole",
        f"hydra.run.dir={run_dir}",
    ]
    for more in ([], ["trainer.total_frames=512", "trainer.resume=true"]):
        done = subprocess.run(
            [sys.executable, str(script), *args, *more],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "internal state" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "Warning: Cannot restore the environments' internal state (sub-env 0: "
        "OpaqueStateCartPole keeps state in OpaqueStateCartPole.physics"
    ), lines
    assert "RuntimeWarning" not in done.stderr and "EnvWarning" not in done.stderr
