"""The app's evaluation loop (``evaluate_episodes``)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDictBase

from rl_trainers.algorithms.build import evaluate_episodes
from rl_trainers.envs import GymEnv


def always_up(td: TensorDictBase) -> TensorDictBase:
    """CliffWalking's action 0 (up): from the start the agent walks into the top edge and
    stays there, so the episode never ends."""
    td.set("action", torch.tensor([True, False, False, False]).expand(*td.batch_size, 4))
    return td


def test_an_episode_that_never_ends_is_cut_with_a_warning():
    env = GymEnv("CliffWalking-v1")  # no time limit
    env.set_seed(0)
    with pytest.warns(UserWarning, match=r"2 evaluation episode\(s\) had not ended after 30"):
        returns = evaluate_episodes(env, always_up, episodes=2, max_episode_steps=30)
    assert returns == [-30.0, -30.0]  # -1 per step
