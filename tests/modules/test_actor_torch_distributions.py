"""ProbabilisticActor over plain ``torch.distributions`` classes, as torchrl's examples use
(e.g. sota-implementations/iql: ``distribution_class=torch.distributions.Categorical``)."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import distributions as D

from rl_trainers.envs import ExplorationType, set_exploration_type
from rl_trainers.modules import ProbabilisticActor


def _actor(dist_class, out_keys, in_keys):
    net = TensorDictModule(torch.nn.Identity(), in_keys=["x"], out_keys=out_keys)
    return ProbabilisticActor(
        net, in_keys=in_keys, distribution_class=dist_class, return_log_prob=True
    )


def test_torch_categorical_acts_greedily_when_deterministic():
    actor = _actor(D.Categorical, ["logits"], ["logits"])
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, -1.0]])
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        out = actor(TensorDict({"x": logits}, [2]))
    assert out["action"].tolist() == [1, 0]
    torch.testing.assert_close(
        out["sample_log_prob"], torch.log_softmax(logits, -1)[[0, 1], [1, 0]]
    )
    with set_exploration_type(ExplorationType.RANDOM):
        assert actor(TensorDict({"x": logits}, [2]))["action"].shape == (2,)


def test_torch_normal_uses_its_mean_when_deterministic():
    net = TensorDictModule(
        lambda x: (x, torch.ones_like(x)), in_keys=["x"], out_keys=["loc", "scale"]
    )
    actor = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=D.Normal)
    x = torch.randn(4, 2)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        torch.testing.assert_close(actor(TensorDict({"x": x}, [4]))["action"], x)
