"""DistributionalQValueActor and DistributionalDQNLoss (C51) as torchrl's examples use them."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_trainers.envs.specs import OneHot
from rl_trainers.modules import (
    MLP,
    DistributionalQValueActor,
    DistributionalQValueModule,
    EGreedyModule,
)
from rl_trainers.objectives import DistributionalDQNLoss, HardUpdate
from rl_trainers.objectives.distributional_dqn import project_distribution

SUPPORT = torch.linspace(-1.0, 1.0, 5)


def test_projection_splits_mass_between_neighbouring_atoms():
    probs = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5, 0.0]])
    returns = torch.tensor([[0.25, 9.0, 9.0, 9.0, 9.0], [-5.0, -5.0, 0.5, 0.0, 0.0]])
    out = project_distribution(probs, returns, SUPPORT)
    # 0.25 lies halfway between atoms 0.0 and 0.5; -5 clips to -1; 0.5 and 0.0 are atoms
    torch.testing.assert_close(out[0], torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0]))
    torch.testing.assert_close(out[1], torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0]))
    torch.testing.assert_close(out.sum(-1), torch.ones(2))


def test_module_picks_the_action_with_the_highest_expected_return():
    module = DistributionalQValueModule("categorical", support=SUPPORT)
    log_probs = torch.full((5, 3), -100.0)
    log_probs[0, 0] = 0.0  # action 0 surely returns -1
    log_probs[2, 1] = 0.0  # action 1 surely returns 0
    log_probs[4, 2] = 0.0  # action 2 surely returns 1
    action, values = module(log_probs)
    assert action.item() == 2 and torch.equal(values, log_probs)
    with pytest.raises(ValueError, match="log-probabilities"):
        module(torch.ones(5, 3))


def _actor():
    torch.manual_seed(0)
    net = MLP(in_features=3, out_features=(5, 2), num_cells=[16])
    return DistributionalQValueActor(net, support=SUPPORT, spec=OneHot(2))


def _batch(n=16):
    return TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": nn.functional.one_hot(torch.randint(2, (n,)), 2).bool(),
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.rand(n, 1) - 0.5,
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.ones(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


def test_actor_writes_log_probabilities_and_a_one_hot_action():
    actor = _actor()
    td = actor(TensorDict({"observation": torch.randn(4, 3)}, [4]))
    assert td["action_value"].shape == (4, 5, 2)
    torch.testing.assert_close(td["action_value"].exp().sum(-2), torch.ones(4, 2))
    assert td["action"].shape == (4, 2) and td["action"].sum(-1).tolist() == [1] * 4


def test_loss_learns_the_reward_distribution_of_terminal_transitions():
    actor = _actor()
    explore = TensorDictSequential(actor, EGreedyModule(actor.spec, annealing_num_steps=10))
    loss = DistributionalDQNLoss(explore, gamma=0.9, delay_value=True)
    assert loss.out_keys == ["loss"] and loss.value_network is actor
    batch = _batch()
    optim = torch.optim.Adam(loss.value_network_params.flatten_keys().values(), lr=0.05)
    first = None
    for _ in range(60):
        out = loss(batch.clone())
        first = out["loss"].item() if first is None else first
        optim.zero_grad()
        out["loss"].backward()
        optim.step()
    assert out["loss"].item() < 0.5 * first
    HardUpdate(loss, value_network_update_interval=1).step()
    priorities = batch.clone()
    loss(priorities)
    assert priorities["td_error"].shape == (16,)


def test_tensordict_module_network_and_errors():
    net = TensorDictModule(
        MLP(in_features=3, out_features=(5, 2), num_cells=[8]), ["observation"], ["action_value"]
    )
    actor = DistributionalQValueActor(net, support=SUPPORT, action_space="categorical")
    batch = _batch()
    batch["action"] = batch["action"].long().argmax(-1)
    assert DistributionalDQNLoss(actor, gamma=0.99)(batch)["loss"].isfinite()
    with pytest.raises(KeyError, match="out-keys"):
        DistributionalQValueActor(net, support=SUPPORT, action_value_key="q", spec=OneHot(2))
