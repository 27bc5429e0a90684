"""load_policy, make_env and evaluate on a tiny finished run of each remaining algorithm
(SAC, DDPG, A2C, REINFORCE; PPO, TD3 and DQN are covered by the shared runs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rl_trainers

from .conftest import TINY_OFF_POLICY, train

ON_POLICY = ["trainer.total_frames=320", "collector.frames_per_batch=160", "eval.episodes=2"]

RUNS = {
    "sac": TINY_OFF_POLICY,
    "ddpg": TINY_OFF_POLICY,
    "a2c": ["env=pendulum", "env.normalize_observations=true", *ON_POLICY],
    "pg": ON_POLICY,
}


@pytest.mark.parametrize("algorithm", sorted(RUNS))
def test_trained_policy_acts_and_reproduces_its_final_evaluation(algorithm, tmp_path):
    run = tmp_path / algorithm
    train(algorithm, RUNS[algorithm], run)
    policy = rl_trainers.load_policy(run)
    env = rl_trainers.make_env(run)
    obs, _ = env.reset(seed=1)
    for _ in range(10):
        action = policy.act(obs)
        value = action if isinstance(action, int) else np.asarray(action, env.action_space.dtype)
        assert env.action_space.contains(value)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
    summary = json.loads((run / "summary.json").read_text())
    result = rl_trainers.evaluate(policy)
    assert result.summary()["eval_return_mean"] == summary["eval_return_mean"]
