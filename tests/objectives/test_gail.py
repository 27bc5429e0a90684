"""GAILLoss: the discriminator learns to separate expert from agent transitions; the loss
and the gradient penalty against their definitions; torchrl's keys, outputs and errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.objectives import GAILLoss


class Discriminator(nn.Module):
    def __init__(self, n_obs=3, n_act=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_obs + n_act, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, observation, action):
        return torch.sigmoid(self.net(torch.cat([observation, action], -1)))


def _discriminator(**keys):
    in_keys = [keys.get("obs", "observation"), keys.get("act", "action")]
    return TensorDictModule(Discriminator(), in_keys=in_keys, out_keys=["d_logits"])


def _batch(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation": torch.randn(n, 3, generator=g) + 1.0,
            "action": torch.randn(n, 2, generator=g) + 1.0,
            "collector_observation": torch.randn(n, 3, generator=g) - 1.0,
            "collector_action": torch.randn(n, 2, generator=g) - 1.0,
        },
        [n],
    )


def test_discriminator_learns_to_tell_expert_from_agent():
    torch.manual_seed(0)
    disc = _discriminator()
    loss = GAILLoss(disc, use_grad_penalty=True, gp_lambda=1.0)
    optim = torch.optim.Adam(loss.parameters(), lr=1e-2)
    first = None
    for step in range(150):
        out = loss(_batch(seed=step))
        optim.zero_grad()
        out["loss"].backward()
        optim.step()
        first = out["loss"].item() if first is None else first
    test = _batch(seed=1000)
    with torch.no_grad():
        expert = disc(test.select("observation", "action"))["d_logits"]
        agent = disc(
            TensorDict(
                {"observation": test["collector_observation"], "action": test["collector_action"]},
                [64],
            )
        )["d_logits"]
    assert expert.mean() > 0.9 and agent.mean() < 0.1
    assert out["loss"].item() < 0.5 * first


def test_loss_is_the_binary_cross_entropy_of_both_halves():
    disc = _discriminator()
    td = _batch()
    out = GAILLoss(disc)(td)
    assert out.keys() == {"loss"}
    with torch.no_grad():
        p_expert = disc.module(td["observation"], td["action"])
        p_agent = disc.module(td["collector_observation"], td["collector_action"])
    expected = (-torch.log(p_expert) - torch.log(1 - p_agent)).mean()
    torch.testing.assert_close(out["loss"], expected)
    none = GAILLoss(disc, reduction="none")(td)["loss"]
    assert none.shape == (64, 1)
    torch.testing.assert_close(GAILLoss(disc, reduction="sum")(td)["loss"], none.sum())


def test_gradient_penalty_matches_its_definition():
    disc = _discriminator()
    td = _batch(n=16)
    loss = GAILLoss(disc, use_grad_penalty=True, gp_lambda=10.0)
    torch.manual_seed(3)
    out = loss(td)
    assert set(out.keys()) == {"loss", "gp_loss"} and not out["gp_loss"].requires_grad
    torch.manual_seed(3)
    eps = torch.rand(16, 1)
    obs = (eps * td["collector_observation"] + (1 - eps) * td["observation"]).requires_grad_()
    act = (eps * td["collector_action"] + (1 - eps) * td["action"]).requires_grad_()
    grads = torch.autograd.grad(disc.module(obs, act).sum(), (obs, act))
    expected = 10.0 * (torch.cat(grads, -1).norm(dim=-1) - 1).pow(2).mean()
    torch.testing.assert_close(out["gp_loss"], expected)
    plain = GAILLoss(disc)(td)["loss"]
    torch.testing.assert_close(out["loss"], plain + expected)
    # the penalty is differentiable: it reaches the discriminator's weights
    disc.zero_grad()
    torch.manual_seed(3)
    loss(td)["loss"].backward()
    with_gp = disc.module.net[0].weight.grad.clone()
    disc.zero_grad()
    plain.backward()
    assert not torch.allclose(with_gp, disc.module.net[0].weight.grad)


def test_keys_and_torchrl_attributes():
    disc = _discriminator(obs="expert_obs", act="expert_act")
    loss = GAILLoss(disc)
    loss.set_keys(
        expert_observation="expert_obs",
        expert_action="expert_act",
        collector_observation="agent_obs",
        collector_action="agent_act",
    )
    td = _batch().rename_key_("observation", "expert_obs").rename_key_("action", "expert_act")
    td.rename_key_("collector_observation", "agent_obs").rename_key_(
        "collector_action", "agent_act"
    )
    assert loss.in_keys == ["agent_act", "agent_obs", "expert_act", "expert_obs"]
    assert loss.tensor_keys.discriminator_pred == "d_logits"
    assert torch.isfinite(loss(td)["loss"])
    params = list(loss.discriminator_network_params.values(True, True))
    assert {id(p) for p in params} == {id(p) for p in disc.parameters()}
    assert GAILLoss(disc, use_grad_penalty=True).out_keys == ["loss", "gp_loss"]


def test_errors_name_the_problem():
    td = _batch()
    logits = TensorDictModule(
        lambda o, a: torch.cat([o, a], -1).sum(-1, keepdim=True),
        in_keys=["observation", "action"],
        out_keys=["d_logits"],
    )
    with pytest.raises(ValueError, match="end the discriminator with a sigmoid"):
        GAILLoss(logits)(td)
    short = td.clone()
    short["collector_observation"] = short["collector_observation"][:, :2]
    with pytest.raises(ValueError, match="row by row"):
        GAILLoss(_discriminator())(short)
    with pytest.raises(ValueError, match="reduction='max'"):
        GAILLoss(_discriminator(), reduction="max")
