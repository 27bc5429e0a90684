"""Continuous CQLLoss: each term against its formula, gradient routing, torchrl's
signature and outputs, a short Pendulum run."""

import math

import pytest
import torch
from _loss_helpers import (
    ACT_DIM,
    StubActor,
    assert_finite_history,
    batch,
    critic_q,
    grads_of,
    qvalue,
    stub_loss,
    train_on_pendulum,
    trained_parts,
)

from rl_trainers.envs.specs import Bounded
from rl_trainers.objectives import CQLLoss, SoftUpdate
from rl_trainers.objectives import cql as cql_module

ACT = Bounded(low=-2.0, high=2.0, shape=(ACT_DIM,))
N = 3  # num_random


def _loss(**kwargs):
    kwargs.setdefault("num_random", N)
    return stub_loss(CQLLoss, action_spec=ACT, **kwargs)


def _expected_cql(loss, actor, td, uniform, temperature, weight):
    """``cql_i`` per critic and state, ``[2, B]``, from the samples ``uniform``."""
    n = td.batch_size[0]
    obs, nobs = td["observation"], td["next", "observation"]
    a_curr, lp_curr = actor.sample(obs.repeat_interleave(N, 0))
    a_next, lp_next = actor.sample(nobs.repeat_interleave(N, 0))
    obs_rep = obs.repeat_interleave(N, 0)
    critics = loss.qvalue_network_params
    log_unif = -ACT_DIM * math.log(4.0)  # uniform over [-2, 2]^2
    parts = [
        critic_q(critics, obs_rep, uniform) - log_unif,
        critic_q(critics, obs_rep, a_curr) - lp_curr,
        critic_q(critics, obs_rep, a_next) - lp_next,
    ]
    values = torch.cat([p.reshape(2, n, N) for p in parts], -1)  # [2, B, 3N]
    lse = temperature * torch.logsumexp(values / temperature, -1)
    return weight * (lse - critic_q(critics, obs, td["action"]))


@pytest.mark.parametrize("deterministic_backup", [True, False])
def test_terms_match_their_formulas(deterministic_backup):
    actor, loss = _loss(
        temperature=0.5, min_q_weight=2.0, deterministic_backup=deterministic_backup
    )
    td = batch()
    td["next", "terminated"][0] = True
    torch.manual_seed(3)
    out = loss(td)
    torch.manual_seed(3)  # the uniform actions are the loss's only random draw here
    uniform = torch.rand(6 * N, ACT_DIM) * 4 - 2
    alpha = 0.5
    with torch.no_grad():
        obs, nobs = td["observation"], td["next", "observation"]
        a_next, lp_next = actor.sample(nobs)
        v_next = critic_q(loss.target_qvalue_network_params, nobs, a_next).min(0).values
        if not deterministic_backup:
            v_next = v_next - alpha * lp_next
        not_term = (~td["next", "terminated"]).float().squeeze(-1)
        y = td["next", "reward"].squeeze(-1) + 0.9 * not_term * v_next
        q = critic_q(loss.qvalue_network_params, obs, td["action"])
        expected_q = (q - y).pow(2).mean(1).sum()
        cql = _expected_cql(loss, actor, td, uniform, 0.5, 2.0)
        a_pi, lp = actor.sample(obs)
        q_pi = critic_q(loss.qvalue_network_params, obs, a_pi).min(0).values
        bc_lp = -(td["action"] - a_pi).pow(2).sum(-1)
    torch.testing.assert_close(out["loss_qvalue"], expected_q)
    torch.testing.assert_close(out["loss_cql"], cql.sum(0).mean())
    torch.testing.assert_close(out["loss_actor"], (alpha * lp - q_pi).mean())
    torch.testing.assert_close(out["loss_actor_bc"], (alpha * lp - bc_lp).mean())
    target_entropy = -float(ACT_DIM)
    expected_alpha = -(math.log(alpha) * (lp + target_entropy)).mean()
    torch.testing.assert_close(out["loss_alpha"], expected_alpha)
    torch.testing.assert_close(out["entropy"], -lp.mean())
    torch.testing.assert_close(out["alpha"], torch.tensor(alpha))
    torch.testing.assert_close(td["td_error"], (q - y).pow(2).max(0).values)
    assert sorted(out.keys()) == sorted(loss.out_keys)
    # written without with_lagrange too (torchrl's cql_online.py reads it): a constant 0
    assert out["loss_alpha_prime"] == 0 and not out["loss_alpha_prime"].requires_grad


def test_max_q_backup_takes_the_best_of_num_random_next_actions():
    actor, loss = _loss(max_q_backup=True)
    td = batch()
    out = loss(td)
    with torch.no_grad():
        obs, nobs = td["observation"], td["next", "observation"]
        a_next, _ = actor.sample(nobs.repeat_interleave(N, 0))  # N equal (stub) actions
        q_next = critic_q(loss.target_qvalue_network_params, nobs.repeat_interleave(N, 0), a_next)
        v_next = q_next.reshape(2, 6, N).max(-1).values.min(0).values
        y = td["next", "reward"].squeeze(-1) + 0.9 * v_next
        q = critic_q(loss.qvalue_network_params, obs, td["action"])
    torch.testing.assert_close(out["loss_qvalue"], (q - y).pow(2).mean(1).sum())


def test_max_q_backup_maximises_over_sampled_actions(monkeypatch):
    """With N different next actions, the backup is the max over them (then min over
    critics), not their mean."""
    actor, loss = _loss(max_q_backup=True, num_random=4)
    td = batch(n=2)
    draws = torch.tensor([[-1.5, 1.0], [0.0, 0.0], [1.9, -1.9], [0.5, 0.5]])

    class Dist:
        def __init__(self, loc):
            self.loc = loc

        def rsample_and_log_prob(self):
            a = draws.repeat(self.loc.shape[0] // 4, 1)
            return a, torch.zeros(self.loc.shape[0])

    monkeypatch.setattr(actor, "get_dist", lambda td_: Dist(td_["observation"]))
    target = loss._target(td)
    with torch.no_grad():
        nobs = td["next", "observation"].repeat_interleave(4, 0)
        q = critic_q(loss.target_qvalue_network_params, nobs, draws.repeat(2, 1))
        v = q.reshape(2, 2, 4).max(-1).values.min(0).values
    torch.testing.assert_close(target.squeeze(-1), td["next", "reward"].squeeze(-1) + 0.9 * v)


def test_lagrange_terms_and_alpha_prime():
    actor, loss = _loss(with_lagrange=True, lagrange_thresh=3.0, temperature=1.0)
    with torch.no_grad():
        loss.log_alpha_prime.fill_(math.log(2.0))
    td = batch()
    torch.manual_seed(4)
    out = loss(td)
    torch.manual_seed(4)
    uniform = torch.rand(6 * N, ACT_DIM) * 4 - 2
    with torch.no_grad():
        cql = _expected_cql(loss, actor, td, uniform, 1.0, 1.0)
    gap = (cql.mean(1) - 3.0).sum()
    torch.testing.assert_close(out["loss_cql"], 2.0 * gap)
    torch.testing.assert_close(out["loss_alpha_prime"], -0.5 * 2.0 * gap)
    assert "loss_alpha_prime" in loss.out_keys
    # alpha' learns from loss_alpha_prime alone; the critics do not
    out["loss_alpha_prime"].backward(retain_graph=True)
    torch.testing.assert_close(loss.log_alpha_prime.grad, -0.5 * 2.0 * gap)
    assert all(g is None for g in grads_of(loss.qvalue_network_params))
    loss.log_alpha_prime.grad = None
    out["loss_cql"].backward()
    assert loss.log_alpha_prime.grad is None
    assert all(g is not None for g in grads_of(loss.qvalue_network_params))


@pytest.mark.parametrize(
    ("term", "trained"),
    [
        ("loss_actor", {"actor"}),
        ("loss_actor_bc", {"actor"}),
        ("loss_qvalue", {"critics"}),
        ("loss_cql", {"critics"}),
        ("loss_alpha", {"log_alpha"}),
    ],
)
def test_each_term_trains_only_its_parameters(term, trained):
    actor, loss = _loss()
    out = loss(batch())
    out[term].backward()
    assert trained_parts(actor, loss, nonzero_actor=True) == trained
    assert all(b.grad is None for b in loss.target_qvalue_network_params.buffers())


def test_uniform_actions_cover_the_action_box():
    _, loss = _loss(num_random=200)
    uniform, *_ = loss._cql_samples(batch(n=5))
    assert uniform.shape == (1000, ACT_DIM)
    assert uniform.min() >= -2.0 and uniform.max() <= 2.0
    assert uniform.min() < -1.5 and uniform.max() > 1.5  # not torchrl's [-1, 1] default


def test_methods_called_one_by_one_and_their_order():
    _, loss = _loss(with_lagrange=True)
    td = batch()
    with pytest.raises(KeyError, match="call q_loss before cql_loss"):
        loss.cql_loss(td.clone())
    loss_q, metadata = loss.q_loss(td)
    assert metadata["td_error"].shape == (2, 6)
    assert td["pred_q1"].shape == (6, 1)
    loss_cql, _ = loss.cql_loss(td)
    loss_ap, _ = loss.alpha_prime_loss(td)
    loss_actor, actor_metadata = loss.actor_loss(td)
    loss_alpha, _ = loss.alpha_loss(actor_metadata)
    for value in (loss_q, loss_cql, loss_ap, loss_actor, loss_alpha):
        assert value.shape == () and torch.isfinite(value)


def test_signature_defaults_and_exports():
    assert cql_module.CQLLoss is CQLLoss
    actor, _ = _loss()
    loss = CQLLoss(actor, qvalue(), action_spec=ACT)
    assert loss.num_random == 10 and loss.temperature == 1.0 and loss.min_q_weight == 1.0
    assert loss.num_qvalue_nets == 2 and loss.loss_function == "smooth_l1"
    assert loss.deterministic_backup and not loss.max_q_backup and not loss.with_lagrange
    assert loss.target_entropy == -float(ACT_DIM)
    assert loss.out_keys == [
        "loss_actor",
        "loss_actor_bc",
        "loss_qvalue",
        "loss_cql",
        "loss_alpha",
        "alpha",
        "entropy",
        "loss_alpha_prime",
    ]
    assert set(loss.in_keys) >= {"action", "observation", ("next", "observation")}
    loss.select_out_keys("loss_qvalue", "loss_cql")
    assert sorted(loss(batch()).keys()) == ["loss_cql", "loss_qvalue"]


def test_renamed_action_key():
    torch.manual_seed(0)
    actor = StubActor()
    loss = CQLLoss(actor, qvalue("act"), action_spec=ACT).set_keys(action="act")
    td = batch(action_key="act")
    out = loss(td)
    assert torch.isfinite(out["loss_cql"]) and "act" in loss.in_keys


def test_multi_dim_batches():
    _, loss = _loss()
    td = batch(n=6).reshape(2, 3)
    out = loss(td)
    assert td["td_error"].shape == (2, 3)
    assert all(torch.isfinite(v) for v in out.values())


def test_short_pendulum_training_has_finite_losses():
    def make(actor, critic, env):
        loss = CQLLoss(actor, critic, action_spec=env.action_spec_unbatched, num_random=4)
        return loss, SoftUpdate(loss, tau=0.005)

    assert_finite_history(train_on_pendulum(make, frames=300, updates_per_batch=3), 9)


def test_torchrl_cql_online_update_step():
    """torchrl's sota-implementations/cql/cql_online.py: CQLLoss from the config's loss
    group, make_value_estimator(gamma=, device=), SoftUpdate(tau=), four optimisers (the
    alpha-prime one None without Lagrange) grouped, and the update reading
    loss_alpha_prime whatever with_lagrange."""
    from _loss_helpers import pendulum_actor_critic

    from rl_trainers.envs import DoubleToFloat, TransformedEnv
    from rl_trainers.envs.libs.gym import GymEnv
    from rl_trainers.objectives import group_optimizers

    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
    torch.manual_seed(0)
    model = torch.nn.ModuleList(pendulum_actor_critic(env))
    for with_lagrange in (False, True):
        loss_module = CQLLoss(
            model[0],
            model[1],
            loss_function="l2",
            temperature=1.0,
            min_q_weight=1.0,
            max_q_backup=False,
            deterministic_backup=False,
            num_random=10,
            with_lagrange=with_lagrange,
            lagrange_thresh=10.0,
        )
        loss_module.make_value_estimator(gamma=0.99, device="cpu")
        updater = SoftUpdate(loss_module, tau=0.005)
        critic_params = loss_module.qvalue_network_params.flatten_keys().values()
        actor_params = loss_module.actor_network_params.flatten_keys().values()
        optims = [
            torch.optim.Adam(actor_params, lr=3e-4),
            torch.optim.Adam(critic_params, lr=3e-4),
            torch.optim.Adam([loss_module.log_alpha], lr=3e-4),
            torch.optim.Adam([loss_module.log_alpha_prime], lr=3e-4)
            if loss_module.with_lagrange
            else None,
        ]
        optimizer = group_optimizers(*optims)
        data = env.rollout(40, model[0])
        before = loss_module.qvalue_network_params.clone()
        loss_td = loss_module(data)
        total = (
            loss_td["loss_alpha"]
            + loss_td["loss_actor"]
            + loss_td["loss_alpha_prime"]
            + loss_td["loss_qvalue"]
            + loss_td["loss_cql"]
        )
        total.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        updater.step()
        after = loss_module.qvalue_network_params.clone()
        assert not torch.equal(before["weight0"], after["weight0"])
        assert torch.isfinite(loss_td.detach().to_tensordict()["loss_cql"])
