"""DiscreteSACLoss as torchrl's discrete SAC example builds it."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.envs.specs import OneHot
from rl_trainers.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from rl_trainers.objectives import DiscreteSACLoss, SoftUpdate

N_ACT, B = 3, 16


def _nets():
    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(
            MLP(in_features=4, out_features=N_ACT, num_cells=[16]), ["observation"], ["logits"]
        ),
        in_keys=["logits"],
        spec=OneHot(N_ACT),
        distribution_class=OneHotCategorical,
        return_log_prob=False,
    )
    critic = ValueOperator(
        MLP(in_features=4, out_features=N_ACT, num_cells=[16]),
        in_keys=["observation"],
        out_keys=["action_value"],
    )
    return actor, critic


def _batch():
    return TensorDict(
        {
            "observation": torch.randn(B, 4),
            "action": nn.functional.one_hot(torch.randint(N_ACT, (B,)), N_ACT).bool(),
            "next": {
                "observation": torch.randn(B, 4),
                "reward": torch.randn(B, 1),
                "done": torch.zeros(B, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        [B],
    )


def test_terms_match_the_formulas():
    actor, critic = _nets()
    loss = DiscreteSACLoss(actor, critic, num_actions=N_ACT, loss_function="l2", gamma=0.9)
    assert loss.target_entropy == pytest.approx(0.98 * math.log(N_ACT))
    batch = _batch()
    out = loss(batch)
    assert sorted(out.keys()) == sorted(loss.out_keys)
    with torch.no_grad():
        logits = actor.module.module(batch["observation"])
        logp = logits.log_softmax(-1)
        q = loss.qvalue_network_params(batch["observation"])  # [2, B, n]
        expected_actor = (logp.exp() * (logp - q.min(0).values)).sum(-1).mean()  # alpha = 1
        next_logp = actor.module.module(batch["next", "observation"]).log_softmax(-1)
        q_next = loss.target_qvalue_network_params(batch["next", "observation"]).min(0).values
        v_next = (next_logp.exp() * (q_next - next_logp)).sum(-1, keepdim=True)
        target = batch["next", "reward"] + 0.9 * v_next
        chosen = q.gather(-1, batch["action"].long().argmax(-1).expand(2, B).unsqueeze(-1))
        expected_q = (chosen - target).pow(2).mean((1, 2)).sum()
    torch.testing.assert_close(out["loss_actor"], expected_actor)
    torch.testing.assert_close(out["loss_qvalue"], expected_q)
    assert batch["td_error"].shape == (B,)


def test_trains_with_torchrl_optimiser_setup():
    actor, critic = _nets()
    loss = DiscreteSACLoss(actor, critic, action_space=OneHot(N_ACT), num_qvalue_nets=2)
    updater = SoftUpdate(loss, eps=0.99)
    critic_params = list(loss.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss.actor_network_params.flatten_keys().values())
    opt = torch.optim.Adam(critic_params + actor_params + [loss.log_alpha], lr=1e-2)
    batch = _batch()
    before = loss.log_alpha.item()
    for _ in range(3):
        out = loss(batch.clone())
        opt.zero_grad()
        (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
        opt.step()
        updater.step()
    assert loss.log_alpha.item() != before
    assert DiscreteSACLoss(actor, critic, action_space="one_hot").num_actions == N_ACT
    actor.spec = None
    with pytest.raises(ValueError, match="num_actions"):
        DiscreteSACLoss(actor, critic, action_space="one_hot")
