"""TD3BCLoss: TD3's critics with a behaviour-cloning actor term."""

import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.modules import MLP, Actor, ValueOperator
from rl_trainers.objectives import TD3BCLoss


def test_actor_term_mixes_normalised_q_and_behaviour_cloning():
    torch.manual_seed(0)
    actor = Actor(nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[8]), nn.Tanh()))
    critic = ValueOperator(
        MLP(in_features=5, out_features=1, num_cells=[8]), ["observation", "action"]
    )
    loss = TD3BCLoss(actor, critic, bounds=(-1.0, 1.0), alpha=2.5)
    batch = TensorDict(
        {
            "observation": torch.randn(8, 3),
            "action": torch.rand(8, 2) * 2 - 1,
            "next": {
                "observation": torch.randn(8, 3),
                "reward": torch.randn(8, 1),
                "done": torch.zeros(8, 1, dtype=torch.bool),
            },
        },
        [8],
    )
    out = loss(batch)
    assert sorted(out.keys()) == sorted(loss.out_keys)
    with torch.no_grad():
        a_pi = actor.module(batch["observation"])
        q1 = loss.qvalue_network_params(batch["observation"], a_pi)[0]
        lmbd = 2.5 / q1.abs().mean()
        expected = -lmbd * q1.mean() + (a_pi - batch["action"]).pow(2).mean()
    torch.testing.assert_close(out["loss_actor"], expected)
    torch.testing.assert_close(out["lmbd"], lmbd)
    out["loss_actor"].backward()
    assert all(p.grad is not None for p in actor.parameters())
    assert all(p.grad is None for p in loss.qvalue_network_params.parameters())
