"""CrossQLoss: batch-normalised critics on the joint (current, next) batch, no target
networks, eval-mode critics for the actor; formulas, gradients, a short Pendulum run."""

import math

import pytest
import torch
from _loss_helpers import (
    ACT_DIM,
    OBS_DIM,
    StubActor,
    assert_finite_history,
    batch,
    pendulum_actor_critic,
    stub_loss,
    train_on_pendulum,
    trained_parts,
)
from torch import nn

from rl_trainers.modules import MLP, ValueOperator
from rl_trainers.objectives import CrossQLoss
from rl_trainers.objectives import crossq as crossq_module


def bn_critic(in_features=OBS_DIM + ACT_DIM, width=8):
    return ValueOperator(
        MLP(
            in_features=in_features,
            out_features=1,
            num_cells=[width],
            norm_class=nn.BatchNorm1d,
            norm_kwargs={"num_features": width, "momentum": 0.5},
        ),
        in_keys=["observation", "action"],
    )


def _loss(**kwargs):
    return stub_loss(CrossQLoss, bn_critic, **kwargs)


def _q(loss, obs, act, train):
    critics = loss.qvalue_network_params
    critics.train(train)
    try:
        return critics(obs, act).squeeze(-1)
    finally:
        critics.train(True)


def test_terms_match_their_formulas():
    actor, loss = _loss()
    td = batch(n=8)
    td["next", "terminated"][2] = True
    out = loss(td)
    alpha = 0.5
    with torch.no_grad():
        obs, nobs = td["observation"], td["next", "observation"]
        # eval mode first: running statistics as the loss's one forward left them
        a_pi, lp = actor.sample(obs)
        q_pi = _q(loss, obs, a_pi, train=False).min(0).values
        a_next, lp_next = actor.sample(nobs)
        joint = _q(loss, torch.cat([obs, nobs]), torch.cat([td["action"], a_next]), train=True)
        q, q_next = joint[:, :8], joint[:, 8:]
        not_term = (~td["next", "terminated"]).float().squeeze(-1)
        y = td["next", "reward"].squeeze(-1) + 0.9 * not_term * (
            q_next.min(0).values - alpha * lp_next
        )
        alone = _q(loss, obs, td["action"], train=True)
    torch.testing.assert_close(out["loss_qvalue"], (q - y).pow(2).mean(1).sum())
    torch.testing.assert_close(out["loss_actor"], (alpha * lp - q_pi).mean())
    torch.testing.assert_close(out["loss_alpha"], -(math.log(alpha) * (lp - ACT_DIM)).mean())
    torch.testing.assert_close(out["entropy"], -lp.mean())
    torch.testing.assert_close(td["td_error"], (q - y).abs().max(0).values)
    # the statistics come from the joint batch: the current pairs alone give other values
    assert not torch.allclose((alone - y).pow(2).mean(1).sum(), out["loss_qvalue"])
    assert sorted(out.keys()) == sorted(loss.out_keys)


def test_running_statistics_update_once_per_forward_and_mode_is_restored():
    _, loss = _loss()
    critics = loss.qvalue_network_params
    counts = [b for b in critics.buffers() if b.dtype == torch.long]
    assert counts and all(int(c.max()) == 0 for c in counts)
    loss(batch())
    loss(batch())
    assert all(int(c.max()) == 2 for c in counts)  # the actor's eval-mode call adds none
    assert critics.training and critics._base.training
    loss.eval()
    assert not critics._base.training
    loss.train()
    assert critics._base.training


def test_no_target_networks():
    _, loss = _loss()
    assert not loss.has_targets
    assert not any("target" in name for name, _ in loss.named_buffers())


@pytest.mark.parametrize(
    ("term", "trained"),
    [("loss_actor", {"actor"}), ("loss_qvalue", {"critics"}), ("loss_alpha", {"log_alpha"})],
)
def test_each_term_trains_only_its_parameters(term, trained):
    actor, loss = _loss()
    out = loss(batch())
    out[term].backward()
    assert trained_parts(actor, loss) == trained


def test_signature_and_exports():
    assert crossq_module.CrossQLoss is CrossQLoss
    torch.manual_seed(0)
    loss = CrossQLoss(StubActor(), bn_critic())
    assert loss.num_qvalue_nets == 2 and loss.loss_function == "smooth_l1"
    assert loss.out_keys == ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]
    with pytest.raises(TypeError):
        CrossQLoss(StubActor(), bn_critic(), delay_qvalue=True)
    loss.select_out_keys("loss_qvalue")
    assert list(loss(batch()).keys()) == ["loss_qvalue"]


def test_short_pendulum_training_with_batch_norm_critics():
    def make(actor, _critic, env):
        critic = ValueOperator(
            MLP(
                num_cells=[16, 16],
                out_features=1,
                in_features=4,
                norm_class=nn.BatchNorm1d,
                norm_kwargs=[{"num_features": 16, "momentum": 0.01}] * 2,
            ),
            in_keys=["observation", "action"],
        )
        loss = CrossQLoss(actor, critic, action_spec=env.action_spec_unbatched)
        return loss, None

    assert_finite_history(train_on_pendulum(make, frames=200, updates_per_batch=2), 4)


def test_pendulum_networks_helper_is_shared():
    # keeps the helper honest: the TanhNormal actor samples inside the action bounds
    from rl_trainers.envs import DoubleToFloat, TransformedEnv
    from rl_trainers.envs.libs.gym import GymEnv

    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
    actor, _ = pendulum_actor_critic(env)
    td = actor(env.reset())
    assert td["action"].abs().max() <= 2.0
