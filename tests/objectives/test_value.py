import pytest
import torch
from tensordict import TensorDict

import rl_trainers._returns as returns_mod
from rl_trainers.modules import ValueOperator
from rl_trainers.objectives import (
    GAE,
    TD0Estimator,
    TDLambdaEstimator,
    generalized_advantage_estimate,
    td_lambda_return_estimate,
)
from rl_trainers.objectives.value.functional import vec_td_lambda_return_estimate


def _col(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype).reshape(1, -1, 1)


# One row, T=4: an episode terminates at t=1; the next one is truncated at t=3.
V = _col([1.0, 2.0, 3.0, 4.0])
V_NEXT = _col([2.0, 7.0, 4.0, 6.0])
R = _col([1.0, 1.0, 1.0, 1.0])
TERM = _col([0, 1, 0, 0], torch.bool)
DONE = _col([0, 1, 0, 1], torch.bool)


def test_gae_hand_computed_with_termination_and_truncation():
    # gamma=0.9, lambda=0.8: deltas = [1.8, -1.0, 1.6, 2.4]; A3 = 2.4 (truncated: bootstraps V'),
    # A2 = 1.6 + 0.72 * 2.4, A1 = -1 (terminated: no bootstrap, recursion cut),
    # A0 = 1.8 + 0.72 * (-1)
    adv, target = generalized_advantage_estimate(0.9, 0.8, V, V_NEXT, R, DONE, TERM)
    torch.testing.assert_close(adv, _col([1.08, -1.0, 3.328, 2.4]))
    torch.testing.assert_close(target, _col([2.08, 1.0, 6.328, 6.4]))


def test_td_lambda_hand_computed():
    # G3 = 1 + .9*6 = 6.4 ; G2 = 1 + .9*(.2*4 + .8*6.4) = 6.328 ; G1 = 1 ; G0 = 1 + .9*(.2*2 + .8*1)
    g = td_lambda_return_estimate(0.9, 0.8, V_NEXT, R, DONE, TERM)
    torch.testing.assert_close(g, _col([2.08, 1.0, 6.328, 6.4]))
    # lambda = 0 is the one-step target
    g0 = td_lambda_return_estimate(0.9, 0.0, V_NEXT, R, DONE, TERM)
    torch.testing.assert_close(g0, _col([2.8, 1.0, 4.6, 6.4]))


def _naive_gae(gamma, lmbda, v, nv, r, term, done):
    out = torch.zeros_like(v)
    for b in range(v.shape[0]):
        running = 0.0
        for t in reversed(range(v.shape[1])):
            delta = r[b, t] + gamma * (~term[b, t]) * nv[b, t] - v[b, t]
            running = delta + gamma * lmbda * (~done[b, t]) * running
            out[b, t] = running
    return out


@pytest.mark.parametrize("matrix_max_t", [1024, 0])
def test_gae_vectorised_matches_naive_loop(monkeypatch, matrix_max_t):
    monkeypatch.setattr(returns_mod, "_MATRIX_MAX_T", matrix_max_t)
    torch.manual_seed(0)
    shape = (3, 40, 1)
    v, nv, r = torch.randn(shape), torch.randn(shape), torch.randn(shape)
    term = torch.rand(shape) < 0.05
    done = term | (torch.rand(shape) < 0.05)
    adv, _ = generalized_advantage_estimate(0.99, 0.95, v, nv, r, done, term)
    torch.testing.assert_close(
        adv, _naive_gae(0.99, 0.95, v, nv, r, term, done), rtol=1e-4, atol=1e-4
    )
    # with consistent values (V(s_{t+1}) == next value of step t inside an episode),
    # TD(lambda) returns equal GAE advantages + values
    v_cons = torch.where(
        torch.cat([done[:, :1], done[:, :-1]], 1), v, torch.cat([v[:, :1], nv[:, :-1]], 1)
    )
    adv_cons, _ = generalized_advantage_estimate(0.99, 0.95, v_cons, nv, r, done, term)
    g = td_lambda_return_estimate(0.99, 0.95, nv, r, done, term)
    torch.testing.assert_close(g - v_cons, adv_cons, rtol=1e-4, atol=1e-4)


def _naive_td_lambda(gamma, lmbda, nv, r, term, done):
    """G_t = r_t + gamma (1 - term_t) ((1 - lmbda) V'_t + lmbda G_{t+1}), with G_{t+1}
    replaced by V'_t where the trajectory ends (done) or the batch does."""
    out = torch.zeros_like(r)
    for b in range(r.shape[0]):
        for t in reversed(range(r.shape[1])):
            last = bool(done[b, t]) or t == r.shape[1] - 1
            following = nv[b, t] if last else out[b, t + 1]
            bootstrap = (1 - lmbda) * nv[b, t] + lmbda * following
            out[b, t] = r[b, t] + gamma * (~term[b, t]) * bootstrap
    return out


@pytest.mark.parametrize("lmbda", [0.0, 0.8, 1.0])
def test_vec_td_lambda_matches_naive_loop(lmbda):
    torch.manual_seed(1)
    shape = (3, 30, 1)
    nv, r = torch.randn(shape), torch.randn(shape)
    term = torch.rand(shape) < 0.05
    done = term | (torch.rand(shape) < 0.05)
    expected = _naive_td_lambda(0.9, lmbda, nv, r, term, done)
    g = vec_td_lambda_return_estimate(0.9, lmbda, nv, r, done, term)
    torch.testing.assert_close(g, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g, td_lambda_return_estimate(0.9, lmbda, nv, r, done, term))
    # the hand-computed case above, and time on another dim (torchrl's time_dim)
    torch.testing.assert_close(
        vec_td_lambda_return_estimate(0.9, 0.8, V_NEXT, R, DONE, TERM),
        _col([2.08, 1.0, 6.328, 6.4]),
    )
    moved = vec_td_lambda_return_estimate(
        0.9, lmbda, *(x.transpose(0, 1) for x in (nv, r, done, term)), time_dim=0
    )
    torch.testing.assert_close(moved.transpose(0, 1), expected, rtol=1e-5, atol=1e-5)
    # terminated defaults to done
    torch.testing.assert_close(
        vec_td_lambda_return_estimate(0.9, lmbda, nv, r, done),
        _naive_td_lambda(0.9, lmbda, nv, r, done, done),
        rtol=1e-5,
        atol=1e-5,
    )


def _trajectory():
    obs = torch.arange(8, dtype=torch.float32).reshape(2, 4, 1)
    return TensorDict(
        {
            "observation": obs,
            "next": {
                "observation": obs + 1,
                "reward": torch.ones(2, 4, 1),
                "terminated": torch.zeros(2, 4, 1, dtype=torch.bool),
                "done": torch.zeros(2, 4, 1, dtype=torch.bool),
            },
        },
        batch_size=[2, 4],
    )


def _identity_critic():
    lin = torch.nn.Linear(1, 1)
    with torch.no_grad():
        lin.weight.fill_(1.0)
        lin.bias.zero_()
    return ValueOperator(lin, in_keys=["observation"])


def test_gae_estimator_runs_critic_and_writes_keys():
    td = _trajectory()
    GAE(gamma=0.5, lmbda=1.0, value_network=_identity_critic())(td)
    torch.testing.assert_close(td["state_value"], td["observation"])
    torch.testing.assert_close(td["next", "state_value"], td["observation"] + 1)
    # lambda = 1: value_target = discounted return bootstrapped at the batch end
    # row 0, t=3: 1 + .5*4 = 3; t=2: 1 + .5*3 = 2.5; t=1: 1 + .5*2.5 = 2.25; t=0: 2.125
    torch.testing.assert_close(td["value_target"][0, :, 0], torch.tensor([2.125, 2.25, 2.5, 3.0]))
    torch.testing.assert_close(td["advantage"], td["value_target"] - td["state_value"])


def test_td0_and_td_lambda_estimators():
    td = _trajectory()
    TD0Estimator(gamma=0.5, value_network=_identity_critic())(td)
    torch.testing.assert_close(td["value_target"], 1 + 0.5 * (td["observation"] + 1))
    td2 = _trajectory()
    TDLambdaEstimator(gamma=0.5, lmbda=1.0, value_network=_identity_critic())(td2)
    torch.testing.assert_close(td2["value_target"][0, :, 0], torch.tensor([2.125, 2.25, 2.5, 3.0]))


def test_multistep_discount_is_honoured():
    td = _trajectory()
    td["steps_to_next_obs"] = torch.full((2, 4, 1), 2, dtype=torch.int64)
    TD0Estimator(gamma=0.5, value_network=_identity_critic())(td)
    torch.testing.assert_close(td["value_target"], 1 + 0.25 * (td["observation"] + 1))


def test_bad_shapes_are_reported():
    with pytest.raises(ValueError, match=r"\[\*B, T, 1\]"):
        generalized_advantage_estimate(
            0.9,
            0.9,
            torch.zeros(4),
            torch.zeros(4),
            torch.zeros(4),
            torch.zeros(4, dtype=torch.bool),
        )


def test_functional_estimators_take_torchrl_argument_order():
    """torchrl: (..., reward, done, terminated=None); terminated defaults to done."""
    from rl_trainers.objectives.value.functional import td0_return_estimate

    adv_done_only, _ = generalized_advantage_estimate(0.9, 0.8, V, V_NEXT, R, DONE)
    adv_both, _ = generalized_advantage_estimate(0.9, 0.8, V, V_NEXT, R, DONE, DONE)
    torch.testing.assert_close(adv_done_only, adv_both)
    kw, _ = generalized_advantage_estimate(0.9, 0.8, V, V_NEXT, R, terminated=TERM, done=DONE)
    pos, _ = generalized_advantage_estimate(0.9, 0.8, V, V_NEXT, R, DONE, TERM)
    torch.testing.assert_close(kw, pos)
    # time_dim: the same returns with time first
    g = td_lambda_return_estimate(0.9, 0.8, V_NEXT, R, DONE, TERM)
    g_t = td_lambda_return_estimate(
        0.9, 0.8, *(x.transpose(0, 1) for x in (V_NEXT, R, DONE, TERM)), time_dim=0
    )
    torch.testing.assert_close(g_t.transpose(0, 1), g)
    # td0: terminated positional, done as torchrl's deprecated keyword
    torch.testing.assert_close(
        td0_return_estimate(0.9, V_NEXT, R, done=TERM), td0_return_estimate(0.9, V_NEXT, R, TERM)
    )


@pytest.mark.parametrize("time_dim", [-2, -1, 0])
def test_reward2go_restarts_at_trajectory_ends(time_dim):
    from rl_trainers.objectives.value.functional import reward2go

    g = torch.Generator().manual_seed(0)
    reward = torch.randn(3, 10, 1, generator=g)
    done = torch.zeros(3, 10, 1, dtype=torch.bool)
    done[0, [3, 7]] = True
    done[2, 9] = True
    expected = torch.empty_like(reward)
    for b in range(3):
        running = 0.0
        for t in reversed(range(10)):
            running = reward[b, t, 0] + (0.0 if done[b, t, 0] else 0.9 * running)
            expected[b, t, 0] = running
    if time_dim == -2:
        torch.testing.assert_close(reward2go(reward, done, 0.9), expected)
    elif time_dim == -1:
        out = reward2go(reward.squeeze(-1), done.squeeze(-1), 0.9, time_dim=-1)
        torch.testing.assert_close(out, expected.squeeze(-1))
    else:
        out = reward2go(reward.transpose(0, 1), done.transpose(0, 1), 0.9, time_dim=0)
        torch.testing.assert_close(out, expected.transpose(0, 1))
    with pytest.raises(ValueError, match="one shape"):
        reward2go(reward, done[:, :5], 0.9)
