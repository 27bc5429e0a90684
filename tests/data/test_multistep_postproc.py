"""MultiStep n-step returns against hand computation."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import MultiStep


def make_rollout(rewards, terminated, truncated):
    """A [num_envs, T] batch whose observations are the step numbers (next obs = t + 1)."""
    r = torch.tensor(rewards, dtype=torch.float32)
    term = torch.tensor(terminated, dtype=torch.bool)
    trunc = torch.tensor(truncated, dtype=torch.bool)
    B, T = r.shape
    t = torch.arange(T, dtype=torch.float32).expand(B, T)
    return TensorDict(
        {
            "observation": t.unsqueeze(-1).clone(),
            "next": {
                "observation": (t + 1).unsqueeze(-1).clone(),
                "reward": r.unsqueeze(-1),
                "terminated": term.unsqueeze(-1),
                "truncated": trunc.unsqueeze(-1),
                "done": (term | trunc).unsqueeze(-1),
            },
        },
        batch_size=[B, T],
    )


def test_multistep_hand_computed():
    g = 0.5
    # env 0: terminates at t=2 ; env 1: truncated at t=1
    td = make_rollout(
        rewards=[[1, 2, 4, 8, 16], [1, 2, 4, 8, 16]],
        terminated=[[0, 0, 1, 0, 0], [0, 0, 0, 0, 0]],
        truncated=[[0, 0, 0, 0, 0], [0, 1, 0, 0, 0]],
    )
    out = MultiStep(gamma=g, n_steps=3)(td)
    reward = out["next", "reward"].squeeze(-1)
    # env 0, t=0: 1 + .5*2 + .25*4 = 3 (window stops at termination t=2)
    # t=1: 2 + .5*4 = 4 ; t=2: 4 ; t=3: 8 + .5*16 = 16 (batch ends) ; t=4: 16
    assert reward[0].tolist() == [3.0, 4.0, 4.0, 16.0, 16.0]
    # env 1, t=0: 1 + .5*2 = 2 (truncated at 1) ; t=1: 2 ; t=2: 4 + 4 + 4 = 12 ; t=3: 16 ; t=4: 16
    assert reward[1].tolist() == [2.0, 2.0, 12.0, 16.0, 16.0]
    steps = out["steps_to_next_obs"].squeeze(-1)
    assert steps[0].tolist() == [3, 2, 1, 2, 1]
    assert steps[1].tolist() == [2, 1, 3, 2, 1]
    # next observation is the one after the last summed step (t + steps)
    next_obs = out["next", "observation"].squeeze(-1)
    assert torch.equal(next_obs, torch.arange(5).float() + steps.float())
    # terminated windows do not bootstrap, truncated ones do
    assert out["next", "terminated"].squeeze(-1)[0].tolist() == [True, True, True, False, False]
    assert out["next", "truncated"].squeeze(-1)[1].tolist() == [True, True, False, False, False]
    assert not out["next", "terminated"][1].any()
    assert out["next", "original_reward"].squeeze(-1)[0].tolist() == [1, 2, 4, 8, 16]
    # the root entries are untouched
    assert torch.equal(out["observation"].squeeze(-1), torch.arange(5).float().expand(2, 5))


def test_multistep_one_step_is_identity_on_rewards():
    td = make_rollout([[1, 2, 3]], [[0, 1, 0]], [[0, 0, 0]])
    before = td["next", "reward"].clone()
    out = MultiStep(gamma=0.9, n_steps=1)(td)
    assert torch.equal(out["next", "reward"], before)
    assert out["steps_to_next_obs"].unique().tolist() == [1]


def test_multistep_matches_bruteforce_random():
    torch.manual_seed(0)
    B, T, n, g = 3, 20, 4, 0.9
    r = torch.randn(B, T)
    term = torch.rand(B, T) < 0.1
    trunc = (torch.rand(B, T) < 0.1) & ~term
    td = make_rollout(r.tolist(), term.tolist(), trunc.tolist())
    out = MultiStep(gamma=g, n_steps=n)(td)
    done = term | trunc
    for b in range(B):
        for t in range(T):
            ret, k = 0.0, 0
            while k < n and t + k < T:
                ret += g**k * r[b, t + k].item()
                k += 1
                if done[b, t + k - 1]:
                    break
            assert out["next", "reward"][b, t, 0].item() == pytest.approx(ret, abs=1e-5)
            assert out["steps_to_next_obs"][b, t, 0].item() == k
            assert out["next", "terminated"][b, t, 0].item() == term[b, t + k - 1].item()


def test_multistep_bad_args():
    with pytest.raises(ValueError, match="n_steps must be >= 1, got 0"):
        MultiStep(0.9, 0)
    with pytest.raises(ValueError, match="gamma"):
        MultiStep(1.5, 2)
