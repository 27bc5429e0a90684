"""torchrl's functional API for losses written by hand: ``LossModule.convert_to_functional``,
``<name>_params`` / ``target_<name>_params`` TensorDicts, calls through ``to_module`` and
``default_value_kwargs``."""

import copy

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.objectives import LossModule
from rl_trainers.objectives.utils import (
    HardUpdate,
    SoftUpdate,
    ValueEstimators,
    default_value_kwargs,
)


class TwoNetLoss(LossModule):
    """A loss as a torchrl user writes one: an encoder shared by a head and a critic."""

    def __init__(self, head, critic, encoder_params):
        super().__init__()
        self.convert_to_functional(head, "head", create_target_params=True)
        self.convert_to_functional(
            critic, "critic", create_target_params=True, compare_against=encoder_params
        )

    def forward(self, x):
        with self.critic_params.to_module(self.critic):
            value = self.critic(x)
        with self.target_critic_params.to_module(self.critic):
            target = self.critic(x)
        return TensorDict({"loss_critic": (value - target - 1).pow(2).mean()}, [])


def _nets():
    torch.manual_seed(0)
    encoder = nn.Linear(3, 4)
    head = nn.Sequential(encoder, nn.Linear(4, 2))
    critic = nn.Sequential(encoder, nn.Tanh(), nn.Linear(4, 1))
    return encoder, head, critic


def test_params_are_the_modules_own_tensors():
    encoder, head, critic = _nets()
    loss = TwoNetLoss(head, critic, list(encoder.parameters()))
    assert loss.head is head and loss.critic is critic
    # an optimiser over the params TensorDict trains the network itself
    before = [p.detach().clone() for p in head.parameters()]
    opt = torch.optim.SGD(loss.head_params.values(True, True), lr=1.0)
    head(torch.randn(5, 3)).sum().backward()
    opt.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, head.parameters()))
    # every parameter once in loss.parameters(); no target tensor among them
    assert {id(p) for p in loss.parameters()} == {
        id(p) for p in [*head.parameters(), *critic.parameters()]
    }
    assert len(list(loss.parameters())) == 6


def test_compare_against_keeps_shared_parameters_out_of_the_critics_loss():
    encoder, head, critic = _nets()
    loss = TwoNetLoss(head, critic, list(encoder.parameters()))
    shared = loss.critic_params["0", "weight"]
    assert not shared.requires_grad and shared.data_ptr() == encoder.weight.data_ptr()
    assert loss.critic_params["2", "weight"] is critic[2].weight
    # the critic's loss reaches its own layer, not the encoder the head owns
    loss(torch.randn(5, 3))["loss_critic"].backward()
    assert encoder.weight.grad is None
    assert critic[2].weight.grad is not None
    trainable = [v for v in loss.critic_params.values(True, True) if v.requires_grad]
    assert {id(v) for v in trainable} == {id(critic[2].weight), id(critic[2].bias)}


def test_target_params_are_buffers_moved_by_the_updaters():
    encoder, head, critic = _nets()
    loss = TwoNetLoss(head, critic, list(encoder.parameters()))
    target = loss.target_critic_params
    assert torch.equal(target["2", "weight"], critic[2].weight)
    assert not target["2", "weight"].requires_grad
    assert target["2", "weight"].data_ptr() != critic[2].weight.data_ptr()
    keys = set(loss.state_dict())
    assert any(k.startswith("target_critic_params") for k in keys)
    assert any(k.startswith("target_head_params") for k in keys)

    with torch.no_grad():
        critic[2].weight.add_(1.0)
    old = target["2", "weight"].clone()
    SoftUpdate(loss, tau=0.25).step()
    torch.testing.assert_close(target["2", "weight"], 0.75 * old + 0.25 * critic[2].weight)
    HardUpdate(loss, value_network_update_interval=1).step()
    assert torch.equal(target["2", "weight"], critic[2].weight)
    # the targets of the shared encoder follow it in both copies
    with torch.no_grad():
        encoder.weight.add_(1.0)
    HardUpdate(loss, value_network_update_interval=1).step()
    assert torch.equal(loss.target_head_params["0", "weight"], encoder.weight)
    assert torch.equal(loss.target_critic_params["0", "weight"], encoder.weight)


def test_targets_survive_a_state_dict_round_trip_and_a_deepcopy():
    encoder, head, critic = _nets()
    loss = TwoNetLoss(head, critic, list(encoder.parameters()))
    with torch.no_grad():
        loss.target_critic_params["2", "weight"].fill_(3.0)
    _, head2, critic2 = _nets()
    restored = TwoNetLoss(head2, critic2, list(head2[0].parameters()))
    restored.load_state_dict(loss.state_dict())
    assert (restored.target_critic_params["2", "weight"] == 3.0).all()

    twin = copy.deepcopy(loss)
    assert twin.critic_params["2", "weight"] is twin.critic[2].weight
    assert twin.critic[2].weight is not critic[2].weight


def test_refused_conversions_say_why():
    loss = LossModule()
    with pytest.raises(NotImplementedError, match="expand_dim=2.*CriticEnsemble"):
        loss.convert_to_functional(nn.Linear(2, 2), "critic", expand_dim=2)
    with pytest.raises(RuntimeError, match="uninitialized lazy layers"):
        loss.convert_to_functional(nn.LazyLinear(2), "critic")


def test_default_value_kwargs_are_torchrls():
    assert default_value_kwargs(ValueEstimators.TD0) == {"gamma": 0.99, "differentiable": True}
    assert default_value_kwargs(ValueEstimators.TD1) == {"gamma": 0.99, "differentiable": True}
    for kind in (ValueEstimators.TDLambda, ValueEstimators.GAE):
        assert default_value_kwargs(kind) == {
            "gamma": 0.99,
            "lmbda": 0.95,
            "differentiable": True,
        }


def test_value_estimate_with_target_params():
    from rl_trainers.modules import ValueOperator
    from rl_trainers.objectives.value import GAE, TDLambdaEstimator

    torch.manual_seed(0)
    critic = ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    batch = TensorDict(
        {
            "observation": torch.randn(2, 5, 3),
            "next": {
                "observation": torch.randn(2, 5, 3),
                "reward": torch.randn(2, 5, 1),
                "done": torch.zeros(2, 5, 1, dtype=torch.bool),
                "terminated": torch.zeros(2, 5, 1, dtype=torch.bool),
            },
        },
        [2, 5],
    )
    estimator = TDLambdaEstimator(gamma=0.9, lmbda=0.8, value_network=critic)
    target_params = TensorDict.from_module(critic).detach().clone().apply(lambda t: t + 1)
    online = estimator.value_estimate(batch)
    with_targets = estimator.value_estimate(batch, target_params=target_params)
    with target_params.to_module(critic):
        expected = estimator.value_estimate(batch)
    torch.testing.assert_close(with_targets, expected)
    assert not torch.allclose(with_targets, online)
    torch.testing.assert_close(estimator.value_estimate(batch), online)  # swapped back
    gae = GAE(gamma=0.9, lmbda=0.8, value_network=critic)
    with pytest.raises(NotImplementedError, match="GAE.value_estimate"):
        gae.value_estimate(batch, target_params=target_params)
