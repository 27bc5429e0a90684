"""V-trace (IMPALA): the functional estimate against the paper's definition written out step
by step, its on-policy limit, the tensordict estimator and its use by the actor-critic losses."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
from rl_trainers.objectives import (
    A2CLoss,
    ClipPPOLoss,
    ValueEstimators,
    VTrace,
    td_lambda_return_estimate,
    vtrace_advantage_estimate,
)


def reference_vtrace(
    gamma, log_pi, log_mu, value, next_value, reward, done, terminated, rho_bar, c_bar
):
    """The definition: ``v_s = V(s_s) + sum_{t=s}^{end} gamma^(t-s) (prod_{i<t} c_i) delta_t``
    with ``end`` the trajectory's last step in the batch, one row at a time."""
    B, T, _ = value.shape
    target = torch.empty_like(value)
    advantage = torch.empty_like(value)
    w = (log_pi - log_mu).exp()
    rho, c = w.clamp(max=rho_bar), w.clamp(max=c_bar)
    keep = 1.0 - terminated.float()
    delta = rho * (reward + gamma * keep * next_value - value)
    for b in range(B):
        for s in range(T):
            total, weight = value[b, s, 0].item(), 1.0
            for t in range(s, T):
                total += weight * delta[b, t, 0].item()
                if done[b, t, 0]:
                    break
                weight *= gamma * c[b, t, 0].item()
            target[b, s, 0] = total
    for b in range(B):
        for s in range(T):
            ends = bool(done[b, s, 0]) or s == T - 1
            following = next_value[b, s, 0] if ends else target[b, s + 1, 0]
            advantage[b, s, 0] = rho[b, s, 0] * (
                reward[b, s, 0] + gamma * keep[b, s, 0] * following - value[b, s, 0]
            )
    return advantage, target


def _batch(B=3, T=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    value, next_value, reward = (
        torch.randn(B, T, 1, generator=g, dtype=torch.float64) for _ in range(3)
    )
    log_mu = -torch.rand(B, T, 1, generator=g, dtype=torch.float64) * 2
    log_pi = log_mu + torch.randn(B, T, 1, generator=g, dtype=torch.float64)
    terminated = torch.zeros(B, T, 1, dtype=torch.bool)
    truncated = torch.zeros(B, T, 1, dtype=torch.bool)
    terminated[0, 3] = True
    truncated[1, 5] = True
    terminated[2, T - 1] = True
    return log_pi, log_mu, value, next_value, reward, terminated | truncated, terminated


@pytest.mark.parametrize(("rho_bar", "c_bar"), [(1.0, 1.0), (2.0, 0.5), (1e9, 1e9)])
def test_functional_matches_the_definition(rho_bar, c_bar):
    log_pi, log_mu, value, next_value, reward, done, terminated = _batch()
    adv, target = vtrace_advantage_estimate(
        0.9, log_pi, log_mu, value, next_value, reward, done, terminated, rho_bar, c_bar
    )
    ref_adv, ref_target = reference_vtrace(
        0.9, log_pi, log_mu, value, next_value, reward, done, terminated, rho_bar, c_bar
    )
    torch.testing.assert_close(target, ref_target)
    torch.testing.assert_close(adv, ref_adv)


def test_truncated_step_bootstraps_from_its_own_next_value():
    log_pi, log_mu, value, next_value, reward, done, terminated = _batch()
    adv, target = vtrace_advantage_estimate(
        0.9, log_pi, log_mu, value, next_value, reward, done, terminated
    )
    rho = (log_pi - log_mu).exp().clamp(max=1.0)
    # row 1 is truncated at t=5: the trace stops there and V(s_6) (true next state) is used
    torch.testing.assert_close(
        target[1, 5],
        value[1, 5] + rho[1, 5] * (reward[1, 5] + 0.9 * next_value[1, 5] - value[1, 5]),
    )
    torch.testing.assert_close(
        adv[1, 5], rho[1, 5] * (reward[1, 5] + 0.9 * next_value[1, 5] - value[1, 5])
    )
    # row 0 terminates at t=3: no bootstrap at all
    torch.testing.assert_close(adv[0, 3], rho[0, 3] * (reward[0, 3] - value[0, 3]))


def test_on_policy_target_is_the_td1_return():
    _, log_mu, value, next_value, reward, done, terminated = _batch()
    # one critic: inside a trajectory, V(s_{t+1}) read at t is V(s_{t+1}) read at t + 1
    same_state = ~done[:, :-1]
    value[:, 1:] = torch.where(same_state, next_value[:, :-1], value[:, 1:])
    _, target = vtrace_advantage_estimate(
        0.97, log_mu, log_mu, value, next_value, reward, done, terminated
    )
    expected = td_lambda_return_estimate(0.97, 1.0, next_value, reward, done, terminated)
    torch.testing.assert_close(target, expected)


def test_importance_weights_are_clipped():
    log_pi, log_mu, value, next_value, reward, done, terminated = _batch()
    far = log_pi + 50.0  # the learner likes these actions far more than the collector did
    adv_far, target_far = vtrace_advantage_estimate(
        0.9, far, log_mu, value, next_value, reward, done, terminated, rho_thresh=1.5, c_thresh=1.0
    )
    ones = torch.zeros_like(log_mu)
    adv_clip, target_clip = vtrace_advantage_estimate(
        0.9,
        ones + torch.log(torch.tensor(1.5, dtype=torch.float64)),
        ones,
        value,
        next_value,
        reward,
        done,
        terminated,
        rho_thresh=1e9,
        c_thresh=1.0,
    )
    torch.testing.assert_close(adv_far, adv_clip)
    torch.testing.assert_close(target_far, target_clip)


def test_time_dim_other_than_minus_two():
    tensors = _batch()
    adv, target = vtrace_advantage_estimate(0.9, *tensors)
    moved = [t.transpose(0, 1) for t in tensors]
    adv_t, target_t = vtrace_advantage_estimate(0.9, *moved, time_dim=0)
    torch.testing.assert_close(adv_t.transpose(0, 1), adv)
    torch.testing.assert_close(target_t.transpose(0, 1), target)


def _actor_critic(n_obs=4, n_act=2):
    torch.manual_seed(0)
    policy = TensorDictModule(nn.Linear(n_obs, n_act), in_keys=["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(
        policy, in_keys=["logits"], distribution_class=OneHotCategorical, return_log_prob=True
    )
    critic = ValueOperator(nn.Linear(n_obs, 1), in_keys=["observation"])
    return actor, critic


def _trajectory_batch(actor, B=2, T=6):
    obs = torch.randn(B, T + 1, 4)
    td = TensorDict({"observation": obs[:, :-1]}, [B, T])
    with torch.no_grad():
        actor(td)
    td["sample_log_prob"] = td["sample_log_prob"] - 0.3 * torch.rand(B, T)  # an older policy
    done = torch.zeros(B, T, 1, dtype=torch.bool)
    done[0, 2] = True
    td["next"] = TensorDict(
        {
            "observation": obs[:, 1:],
            "reward": torch.randn(B, T, 1),
            "done": done,
            "terminated": done,
        },
        [B, T],
    )
    return td


def test_estimator_reads_the_batch_and_runs_both_networks():
    actor, critic = _actor_critic()
    td = _trajectory_batch(actor)
    estimator = VTrace(
        gamma=0.9, actor_network=actor, value_network=critic, rho_thresh=1.0, c_thresh=1.0
    )
    out = estimator(td.clone())
    with torch.no_grad():
        log_pi = actor.get_dist(td.clone()).log_prob(td["action"]).unsqueeze(-1)
        value, next_value = (
            critic(td.clone())["state_value"],
            critic(td["next"].clone())["state_value"],
        )
    adv, target = vtrace_advantage_estimate(
        0.9,
        log_pi,
        td["sample_log_prob"].unsqueeze(-1),
        value,
        next_value,
        td["next", "reward"],
        td["next", "done"],
        td["next", "terminated"],
    )
    torch.testing.assert_close(out["advantage"], adv)
    torch.testing.assert_close(out["value_target"], target)
    assert not out["advantage"].requires_grad

    averaged = VTrace(gamma=0.9, actor_network=actor, value_network=critic, average_adv=True)(
        td.clone()
    )
    assert abs(averaged["advantage"].mean().item()) < 1e-5
    assert abs(averaged["advantage"].std().item() - 1.0) < 1e-4


def test_missing_behaviour_log_prob_is_named():
    actor, critic = _actor_critic()
    td = _trajectory_batch(actor).exclude("sample_log_prob")
    with pytest.raises(KeyError, match="'sample_log_prob'.*return_log_prob=True"):
        VTrace(gamma=0.9, actor_network=actor, value_network=critic)(td)
    with pytest.raises(TypeError, match="probabilistic actor"):
        VTrace(gamma=0.9, actor_network=critic, value_network=critic)


@pytest.mark.parametrize("loss_class", [A2CLoss, ClipPPOLoss])
def test_actor_critic_losses_train_on_vtrace_advantages(loss_class):
    actor, critic = _actor_critic()
    loss = loss_class(actor, critic)
    loss.make_value_estimator(ValueEstimators.VTrace, gamma=0.9, rho_thresh=1.0)
    assert isinstance(loss.value_estimator, VTrace) and loss.value_estimator.actor_network is actor
    td = _trajectory_batch(actor)
    with torch.no_grad():
        loss.value_estimator(td)
    out = loss(td)
    total = sum(v for k, v in out.items() if k.startswith("loss"))
    total.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in actor.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in critic.parameters())

    # the loss's key names reach the estimator (torchrl's set_keys)
    loss.set_keys(sample_log_prob="behaviour_log_prob")
    loss.make_value_estimator("vtrace")
    renamed = _trajectory_batch(actor).rename_key_("sample_log_prob", "behaviour_log_prob")
    with torch.no_grad():
        loss.value_estimator(renamed)
    assert "advantage" in renamed.keys()
