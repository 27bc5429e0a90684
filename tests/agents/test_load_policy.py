"""load_policy / make_env / evaluate on finished runs of each algorithm family."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import rl_trainers
from rl_trainers.agents import RunError

ALL = ["ppo_cartpole", "ppo_pendulum", "td3_pendulum", "dqn_cartpole"]

#: A few hundred PPO frames.
RUN_TINY_PPO = [
    "trainer.total_frames=256",
    "collector.frames_per_batch=128",
    "trainer.minibatch_size=64",
    "eval.episodes=2",
]


@pytest.mark.parametrize("name", ALL)
def test_act_on_a_fresh_env(runs, name):
    policy = rl_trainers.load_policy(runs[name])
    env = rl_trainers.make_env(runs[name])
    obs, _ = env.reset(seed=3)
    for _ in range(20):
        action = policy.act(obs)
        assert env.action_space.contains(
            np.asarray(action, dtype=env.action_space.dtype)
            if not isinstance(action, int)
            else action
        )
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
    batch = np.stack([env.reset(seed=i)[0] for i in range(4)])
    actions = policy.act(batch)
    assert len(actions) == 4
    assert all(env.action_space.contains(a) for a in actions)
    assert not (runs[name].parent / "outputs").exists()


@pytest.mark.parametrize("seed", [3, 11])
def test_pixel_run_env_plays_as_the_evaluation_does(runs, seed):
    """make_env of a pixel run: the frames the policy trained on (resized, grey, stacked)
    as a gymnasium env; a deterministic episode there returns what evaluate() returns for
    the same seed."""
    run = runs["ppo_cartpole_pixels"]
    policy = rl_trainers.load_policy(run)
    env = rl_trainers.make_env(run)
    assert env.observation_space.shape == (4, 84, 84)  # frame_stack 4 of grey 84x84
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        total, done = total + reward, terminated or truncated
    assert [total] == rl_trainers.evaluate(policy, episodes=1, seed=seed).returns
    assert env.render().ndim == 3  # the full-size frame
    env.close()
    with pytest.raises(RunError, match="renders its own frames"):
        rl_trainers.make_env(run, render_mode="human")


def test_discrete_action_is_an_int(runs):
    policy = rl_trainers.load_policy(runs["ppo_cartpole"])
    obs, _ = rl_trainers.make_env(runs["ppo_cartpole"]).reset(seed=0)
    assert type(policy.act(obs)) is int
    assert type(policy.act(obs, deterministic=False)) is int


@pytest.mark.parametrize("name", ["ppo_cartpole", "ppo_pendulum", "td3_pendulum"])
def test_evaluate_reproduces_the_final_evaluation(runs, name):
    summary = json.loads((runs[name] / "summary.json").read_text())
    result = rl_trainers.evaluate(rl_trainers.load_policy(runs[name]))
    assert result.summary()["eval_return_mean"] == summary["eval_return_mean"]
    assert len(result.lengths) == summary["eval_episodes"]


def test_evaluate_leaves_the_callers_thread_count(runs):
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the run's own count (one) is used inside evaluate() only
    try:
        rl_trainers.evaluate(runs["td3_pendulum"], episodes=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_best_policy(runs):
    run = runs["ppo_cartpole"]  # eval.interval=256: periodic evaluations keep the best
    assert (run / "checkpoints" / "best_policy.pt").is_file()
    best = rl_trainers.load_policy(run, which="best")
    assert best.checkpoint.name == "best_policy.pt"
    obs, _ = rl_trainers.make_env(run).reset(seed=0)
    assert best.act(obs) in (0, 1)
    with pytest.raises(RunError, match="no best policy"):
        rl_trainers.load_policy(runs["ppo_pendulum"], which="best")


def test_not_a_run(tmp_path):
    with pytest.raises(RunError, match="not a run directory"):
        rl_trainers.load_policy(tmp_path)


@pytest.mark.parametrize("name", ["ppo_cartpole", "td3_pendulum"])
def test_predict_speaks_stable_baselines3(runs, name):
    """model.predict(obs, deterministic=True) as SB3 users write it: (action, state), the
    action that act() gives, for one observation and for a batch."""
    policy = rl_trainers.load_policy(runs[name])
    env = rl_trainers.make_env(runs[name])
    obs, _ = env.reset(seed=5)
    action, state = policy.predict(obs, deterministic=True)
    assert state is None
    np.testing.assert_array_equal(action, policy.act(obs))
    batch = np.stack([env.reset(seed=i)[0] for i in range(3)])
    actions, state = policy.predict(batch, state="kept", deterministic=True)
    assert state == "kept"
    np.testing.assert_array_equal(actions, policy.act(batch))
    sampled, _ = policy.predict(obs)  # SB3's default samples; the action is still valid
    assert env.action_space.contains(
        sampled if isinstance(sampled, int) else np.asarray(sampled, env.action_space.dtype)
    )


def test_a_gsde_policy_trained_on_eight_envs_acts_on_one(runs):
    """The checkpoint holds gSDE's noise matrices of the run's 8 envs; the policy rebuilt
    for one env loads its weights, acts (sampling too) and reproduces the evaluation."""
    run = runs["a2c_gsde_pendulum"]
    policy = rl_trainers.load_policy(run)
    env = rl_trainers.make_env(run)
    obs, _ = env.reset(seed=0)
    for deterministic in (True, False):
        assert env.action_space.contains(policy.act(obs, deterministic=deterministic))
    summary = json.loads((run / "summary.json").read_text())
    assert rl_trainers.evaluate(policy).summary()["eval_return_mean"] == summary["eval_return_mean"]


def test_make_env_says_it_leaves_out_the_runs_tensordict_transforms(tmp_path):
    """env.transforms are TensorDict transforms: make_env's gymnasium env cannot hold them,
    and says so, naming them; evaluate() runs the app's env with them."""
    from rl_trainers.errors import ConfigWarning

    from .conftest import train

    run = tmp_path / "run"
    limit = "env.transforms=[{_target_: rl_trainers.envs.StepCounter, max_steps: 20}]"
    train("ppo", [*RUN_TINY_PPO, "env=pendulum", limit], run)
    with pytest.warns(ConfigWarning, match="env.transforms \\(StepCounter\\)"):
        rl_trainers.make_env(run)
    result = rl_trainers.evaluate(rl_trainers.load_policy(run))
    assert set(result.lengths) == {20}


def test_evaluation_figures_are_correctly_rounded():
    from rl_trainers.agents.policy import Evaluation

    result = Evaluation(returns=[1.1] * 10, lengths=[7] * 10, seed=0, deterministic=True,
                        checkpoint=Path("run/checkpoints/trainer_1.pt"))  # fmt: skip
    summary = result.summary()
    # a plain running sum gives 1.0999999999999999 and a std of 2e-16
    assert (summary["eval_return_mean"], summary["eval_return_std"]) == (1.1, 0.0)
    assert (summary["eval_length_mean"], summary["eval_length_std"]) == (7.0, 0.0)
