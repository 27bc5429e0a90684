"""DTLoss and OnlineDTLoss: their entries against their definitions, training fits the
dataset's actions, alpha's tuning and bounds, torchrl's keys and module path."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.envs.specs import Bounded
from rl_trainers.modules import NormalParamExtractor, ProbabilisticActor, TanhNormal
from rl_trainers.objectives import DTLoss, OnlineDTLoss


def _data(n=32, context=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, context, 3, generator=g)
    # the "expert" acts with a fixed linear map squashed into [-1, 1]
    action = torch.tanh(obs @ torch.tensor([[0.8, -0.5], [0.3, 0.9], [-0.6, 0.2]]))
    return TensorDict({"observation": obs, "action": action}, [n, context])


def _probabilistic_actor(spec=True):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 4), NormalParamExtractor())
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        spec=Bounded(-1.0, 1.0, shape=(2,)) if spec else None,
    )


def test_dt_loss_regresses_the_dataset_actions():
    torch.manual_seed(0)
    actor = TensorDictModule(nn.Linear(3, 2), in_keys=["observation"], out_keys=["action"])
    loss = DTLoss(actor)
    td = _data()
    out = loss(td)
    assert out.keys() == {"loss"} and loss.in_keys == ["action", "observation"]
    with torch.no_grad():
        expected = (actor.module(td["observation"]) - td["action"]).pow(2).mean()
    torch.testing.assert_close(out["loss"], expected)
    assert torch.equal(td["action"], _data()["action"])  # the batch keeps its targets
    l1 = DTLoss(actor, loss_function="l1")(td)["loss"]
    torch.testing.assert_close(l1, (actor.module(td["observation"]) - td["action"]).abs().mean())

    optim = torch.optim.Adam(loss.parameters(), lr=5e-2)
    for _ in range(100):
        value = loss(td)["loss"]
        optim.zero_grad()
        value.backward()
        optim.step()
    assert value.item() < 0.1 * expected.item()


def test_online_dt_entries_match_their_definitions():
    actor = _probabilistic_actor()
    loss = OnlineDTLoss(actor, alpha_init=0.5, samples_mc_entropy=4)
    assert loss.target_entropy == -2.0  # -prod(action shape), from the actor's spec
    td = _data()
    torch.manual_seed(1)
    out = loss(td)
    assert set(out.keys()) == {
        "loss_log_likelihood",
        "loss_entropy",
        "loss_alpha",
        "alpha",
        "entropy",
    }
    dist = actor.get_dist(td.clone())
    torch.testing.assert_close(out["loss_log_likelihood"], -dist.log_prob(td["action"]).mean())
    torch.manual_seed(1)
    entropy = -dist.log_prob(dist.rsample((4,))).mean()
    torch.testing.assert_close(out["entropy"], entropy.detach())
    torch.testing.assert_close(out["loss_entropy"], -0.5 * entropy)
    torch.testing.assert_close(out["loss_alpha"], 0.5 * (entropy.detach() + 2.0))
    assert not out["alpha"].requires_grad and not out["entropy"].requires_grad
    # loss_alpha trains log_alpha only; the entropy bonus the actor only
    out["loss_alpha"].backward(retain_graph=True)
    assert loss.log_alpha.grad is not None
    assert all(p.grad is None for p in actor.parameters())
    out["loss_entropy"].backward()
    assert all(p.grad is not None for p in actor.parameters())


def test_online_dt_fits_the_dataset_actions():
    actor = _probabilistic_actor()
    loss = OnlineDTLoss(actor, alpha_init=0.1, target_entropy=-4.0)
    td = _data()
    optim = torch.optim.Adam(loss.parameters(), lr=2e-2)
    first = None
    for _ in range(120):
        out = loss(td)
        total = out["loss_log_likelihood"] + out["loss_entropy"] + out["loss_alpha"]
        optim.zero_grad()
        total.backward()
        optim.step()
        first = out["loss_log_likelihood"].item() if first is None else first
    assert out["loss_log_likelihood"].item() < first - 2.0
    with torch.no_grad():
        predicted = actor.get_dist(td.clone()).deterministic_sample
    assert (predicted - td["action"]).abs().mean() < 0.1


@pytest.mark.parametrize(("target_entropy", "rises"), [(10.0, True), (-50.0, False)])
def test_alpha_moves_toward_the_target_entropy(target_entropy, rises):
    loss = OnlineDTLoss(_probabilistic_actor(), alpha_init=0.1, target_entropy=target_entropy)
    optim = torch.optim.Adam([loss.log_alpha], lr=1e-2)
    for _ in range(20):
        optim.zero_grad()
        loss(_data())["loss_alpha"].backward()
        optim.step()
    # entropy below the target raises alpha (more exploration), above it lowers alpha
    assert (loss.alpha.item() > 0.1) == rises


def test_alpha_bounds_fixed_alpha_and_target_from_the_batch():
    loss = OnlineDTLoss(
        _probabilistic_actor(spec=False), alpha_init=1.0, min_alpha=0.2, max_alpha=2.0
    )
    assert loss.target_entropy is None
    loss(_data())
    assert loss.target_entropy == -2.0  # the actions' shape beyond the [n, context] batch
    with torch.no_grad():
        loss.log_alpha.fill_(math.log(10.0))
    assert loss.alpha.item() == pytest.approx(2.0)
    with torch.no_grad():
        loss.log_alpha.fill_(math.log(0.01))
    assert loss.alpha.item() == pytest.approx(0.2)
    fixed = OnlineDTLoss(_probabilistic_actor(), alpha_init=0.3, fixed_alpha=True)
    assert "log_alpha" in dict(fixed.named_buffers()) and fixed.alpha.item() == pytest.approx(0.3)
    assert "log_alpha" not in dict(fixed.named_parameters())


def test_keys_and_errors():
    actor = _probabilistic_actor()
    loss = OnlineDTLoss(actor).set_keys(action_target="expert_action")
    td = _data().rename_key_("action", "expert_action")
    assert loss.in_keys == ["expert_action", "observation"]
    assert torch.isfinite(loss(td)["loss_log_likelihood"])
    td["expert_action"] = td["expert_action"].clone().requires_grad_()
    with pytest.raises(RuntimeError, match="'expert_action' require grad"):
        loss(td)
    with pytest.raises(TypeError, match="probabilistic actor"):
        OnlineDTLoss(TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"]))
    with pytest.raises(ValueError, match="max_alpha"):
        OnlineDTLoss(actor, max_alpha=0.0)
    assert len(list(loss.actor_network_params.values(True, True))) == len(list(actor.parameters()))
