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


def test_mode_and_mean_exploration_act_as_in_torchrl():
    """MODE acts with ``dist.mode``, MEAN with ``dist.mean``, DETERMINISTIC with
    ``deterministic_sample``; they differ for a truncated normal whose loc is out of bounds."""
    from rl_trainers.modules import TanhNormal, TruncatedNormal

    net = TensorDictModule(
        lambda x: (x, torch.ones_like(x)), in_keys=["x"], out_keys=["loc", "scale"]
    )

    def bounded_actor(dist_class, bound):
        kwargs = {"low": -bound, "high": bound}
        return ProbabilisticActor(
            net, in_keys=["loc", "scale"], distribution_class=dist_class, distribution_kwargs=kwargs
        )

    actor = bounded_actor(TruncatedNormal, 1.0)
    x = torch.tensor([[3.0], [0.2]])
    dist = TruncatedNormal(x, torch.ones_like(x), low=-1.0, high=1.0)
    acted = {}
    for kind in ("MODE", "MEAN", "DETERMINISTIC"):
        with set_exploration_type(getattr(ExplorationType, kind)):
            acted[kind] = actor(TensorDict({"x": x}, [2]))["action"]
    torch.testing.assert_close(acted["MODE"], torch.tensor([[1.0], [0.2]]))
    torch.testing.assert_close(acted["MEAN"], dist.mean)
    torch.testing.assert_close(acted["DETERMINISTIC"], dist.mean)
    assert acted["MEAN"][0, 0] < 1.0  # the truncated mean stays inside the bounds

    actor = bounded_actor(TanhNormal, 2.0)
    for kind in ("MODE", "MEAN", "DETERMINISTIC"):
        with set_exploration_type(getattr(ExplorationType, kind)):
            action = actor(TensorDict({"x": x}, [2]))["action"]
        torch.testing.assert_close(action, 2.0 * torch.tanh(x))

    normal = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=D.Normal)
    with set_exploration_type(ExplorationType.MODE):
        torch.testing.assert_close(normal(TensorDict({"x": x}, [2]))["action"], x)
