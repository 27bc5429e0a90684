"""SAC's one-node loss paths (rl_trainers.fast.sac) against the op-by-op graph."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers import fast
from rl_trainers.envs.specs import Bounded, Composite, Unbounded
from rl_trainers.modules import make_actor, make_qvalue
from rl_trainers.objectives import SACLoss

OBS = Composite(observation=Unbounded(shape=(3,)))
LOSS_KEYS = ("loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy", "q_mean", "td_error")


def _batch(n, action_dim, dtype=torch.float32):
    terminated = torch.rand(n, 1) < 0.3
    return TensorDict(
        {
            "observation": torch.randn(n, 3, dtype=dtype),
            "action": torch.rand(n, action_dim, dtype=dtype) * 2 - 1,
            "next": {
                "observation": torch.randn(n, 3, dtype=dtype),
                "reward": torch.randn(n, 1, dtype=dtype),
                "terminated": terminated,
                "done": terminated.clone(),
            },
        },
        batch_size=[n],
    )


def _sac(
    action_spec,
    activation=nn.ReLU,
    dtype=torch.float32,
    scale_mapping="biased_softplus_1.0",
    **kwargs,
):
    torch.manual_seed(0)
    actor = make_actor(
        OBS, action_spec, num_cells=(32, 32), activation=activation, scale_mapping=scale_mapping
    )
    critic = make_qvalue(OBS, action_spec, num_cells=(32, 32), activation=activation)
    loss = SACLoss(actor, critic, gamma=0.9, action_spec=action_spec, **kwargs).to(dtype)
    if loss.delay_qvalue:
        with torch.no_grad():  # targets that differ from the online critics
            for t in loss.target_qvalue_network_params.buffers():
                t.add_(0.05 * torch.randn_like(t))
    return loss


def _run(loss, td, fused, backward_keys, monkeypatch):
    """Losses, .grad of every parameter (None kept) and the next random number, for one
    forward and a backward of the sum of ``backward_keys``."""
    monkeypatch.setattr(fast, "FUSE_MLP", fused)
    for p in loss.parameters():
        p.grad = None
    torch.manual_seed(1)
    out = loss(td.clone())
    sum(out[k] for k in backward_keys).backward()
    grads = [None if p.grad is None else p.grad.clone() for p in loss.parameters()]
    return out, grads, torch.rand(())


def _assert_same(loss, td, backward_keys, monkeypatch, **tol):
    ref, ref_grads, ref_next = _run(loss, td, False, backward_keys, monkeypatch)
    out, grads, nxt = _run(loss, td, True, backward_keys, monkeypatch)
    assert type(out["loss_actor"].grad_fn).__name__ == "SACActorTermsBackward"
    assert type(out["loss_qvalue"].grad_fn).__name__ == "SACCriticTermsBackward"
    assert type(ref["loss_actor"].grad_fn).__name__ != "SACActorTermsBackward"
    for key in LOSS_KEYS:
        torch.testing.assert_close(out[key], ref[key], **tol)
    for (name, _), g, r in zip(loss.named_parameters(), grads, ref_grads, strict=True):
        assert (g is None) == (r is None), name
        if r is not None:
            torch.testing.assert_close(g, r, **tol, msg=name)
    assert nxt == ref_next  # the same noise was drawn, no more


SPEC_1D = Bounded(low=-2.0, high=2.0, shape=(1,))
SPEC_2D = Bounded(low=torch.tensor([-1.0, 0.0]), high=torch.tensor([3.0, 0.5]), shape=(2,))


@pytest.mark.parametrize("spec", [SPEC_1D, SPEC_2D], ids=["1d", "2d-asymmetric"])
@pytest.mark.parametrize("activation", [nn.ReLU, nn.Tanh], ids=["relu", "tanh"])
@pytest.mark.parametrize(
    "backward_keys",
    [("loss_actor", "loss_qvalue", "loss_alpha"), ("loss_actor",), ("loss_qvalue",)],
    ids=["all", "actor", "qvalue"],
)
def test_one_node_matches_op_by_op(spec, activation, backward_keys, monkeypatch):
    loss = _sac(spec, activation)
    _assert_same(loss, _batch(64, spec.shape[0]), backward_keys, monkeypatch)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"loss_function": "smooth_l1"},
        {"loss_function": "l1"},
        {"num_qvalue_nets": 3},
        {"delay_qvalue": False},
        {"fixed_alpha": True, "alpha_init": 0.3},
        {"min_alpha": 0.5, "max_alpha": 2.0, "alpha_init": 0.1},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()),
)
def test_one_node_matches_op_by_op_for_loss_options(kwargs, monkeypatch):
    loss = _sac(SPEC_1D, **kwargs)
    _assert_same(loss, _batch(64, 1), ("loss_actor", "loss_qvalue", "loss_alpha"), monkeypatch)


@pytest.mark.parametrize(
    "dist_kwargs, n",
    [(None, 16), ({"low": -torch.ones(3), "high": torch.ones(3)}, 2)],
    ids=["torchrl-default-scalar-bounds", "batch-smaller-than-action-dim"],
)
def test_hand_built_torchrl_actor_takes_the_one_node_path(dist_kwargs, n, monkeypatch):
    """torchrl's SAC actor written by hand: TanhNormal without distribution_kwargs has
    0-dim bounds (an IndexError in the one-node path), and [d] bounds must not be cut as
    if they were rows when the batch is smaller than the action."""
    from tensordict.nn import NormalParamExtractor

    from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator

    torch.manual_seed(0)
    net = nn.Sequential(
        MLP(in_features=3, out_features=6, num_cells=[16], activation_class=nn.ReLU),
        NormalParamExtractor(),
    )
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs=dist_kwargs,
    )
    q = MLP(in_features=6, out_features=1, num_cells=[16], activation_class=nn.ReLU)
    critic = ValueOperator(q, in_keys=["observation", "action"])
    loss = SACLoss(actor, critic, gamma=0.9)
    keys = ("loss_actor", "loss_qvalue", "loss_alpha")
    _assert_same(loss, _batch(n, 3), keys, monkeypatch)


def test_one_node_matches_op_by_op_in_float64(monkeypatch):
    loss = _sac(SPEC_2D, dtype=torch.float64)
    td = _batch(32, 2, torch.float64)
    keys = ("loss_actor", "loss_qvalue", "loss_alpha")
    _assert_same(loss, td, keys, monkeypatch, rtol=1e-12, atol=1e-12)


def test_saturated_scales_and_actions_match(monkeypatch):
    """Raw scale outputs far below the clamp and far above softplus's threshold, and
    pre-squash values deep in tanh's flat tails."""
    loss = _sac(SPEC_1D)
    last = loss.actor_network.module.module[0][-1]
    with torch.no_grad():
        last.bias.copy_(torch.tensor([30.0, 0.0]))
        last.weight[1].mul_(400.0)  # raw scales spread over about +-100
    _assert_same(loss, _batch(64, 1), ("loss_actor", "loss_qvalue"), monkeypatch)


@pytest.mark.parametrize("spec", [SPEC_1D, SPEC_2D], ids=["1d", "2d-asymmetric"])
def test_sb3s_clamped_log_std_takes_the_one_node_path_and_matches(spec, monkeypatch):
    loss = _sac(spec, scale_mapping="clamped_exp")
    keys = ("loss_actor", "loss_qvalue", "loss_alpha")
    _assert_same(loss, _batch(64, spec.shape[0]), keys, monkeypatch)


def test_sb3s_clamped_log_std_past_both_bounds_matches(monkeypatch):
    """Raw log-stds spread over about +-100: the clamp at -20 and 2 stops their gradient
    on both paths alike."""
    loss = _sac(SPEC_2D, scale_mapping="clamped_exp")
    last = loss.actor_network.module.module[0][-1]
    with torch.no_grad():
        last.weight[2:].mul_(400.0)
    td = _batch(64, 2)
    raw = loss.actor_network.module.module[0](td["observation"])[:, 2:]
    assert (raw < -20).any() and (raw > 2).any() and ((raw > -20) & (raw < 2)).any()
    _assert_same(loss, td, ("loss_actor", "loss_qvalue"), monkeypatch)


def test_separate_backward_calls(monkeypatch):
    """``loss_actor.backward()`` then ``loss_qvalue.backward()`` (torchrl's older SAC
    scripts) give the gradients of one backward of their sum."""
    loss = _sac(SPEC_1D)
    td = _batch(64, 1)
    _, together, _ = _run(loss, td, True, ("loss_actor", "loss_qvalue"), monkeypatch)
    for p in loss.parameters():
        p.grad = None
    torch.manual_seed(1)
    out = loss(td.clone())
    out["loss_actor"].backward()
    out["loss_qvalue"].backward()
    for p, g in zip(loss.parameters(), together, strict=True):
        if g is None:
            assert p.grad is None
        else:
            torch.testing.assert_close(p.grad, g)


def test_critic_changed_in_place_before_backward_raises(monkeypatch):
    """As with the op-by-op graph, updating a critic between the forward and the backward
    is caught, not silently differentiated with the new weights."""
    loss = _sac(SPEC_1D)
    out = loss(_batch(16, 1))
    assert type(out["loss_qvalue"].grad_fn).__name__ == "SACCriticTermsBackward"
    with torch.no_grad():
        loss.qvalue_network_params.weight1.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out["loss_qvalue"].backward()


def test_switch_off_runs_op_by_op_over_the_fused_nodes(monkeypatch):
    loss = _sac(SPEC_1D)
    td = _batch(32, 1)
    torch.manual_seed(1)
    one_node = loss(td.clone())
    monkeypatch.setattr(fast, "SAC_ONE_NODE", False)
    torch.manual_seed(1)
    op_by_op = loss(td.clone())
    assert type(op_by_op["loss_actor"].grad_fn).__name__ != "SACActorTermsBackward"
    for key in LOSS_KEYS:
        torch.testing.assert_close(op_by_op[key], one_node[key])


def test_diagnostics_only_when_asked():
    loss = _sac(SPEC_1D)
    td = _batch(16, 1)
    torch.manual_seed(1)
    full = loss(td.clone())
    loss.diagnostics = False  # what the trainer sets for batches whose losses are not logged
    torch.manual_seed(1)
    lean = loss(td.clone())
    assert set(full.keys()) - set(lean.keys()) == {"entropy", "q_mean", "td_error"}
    for key in lean.keys():
        torch.testing.assert_close(lean[key], full[key])


def test_other_actors_and_batches_take_the_op_by_op_path():
    # a scale mapping other than the biased softplus
    loss = _sac(SPEC_1D)
    loss.actor_network.module.module[1] = type(loss.actor_network.module.module[1])(
        scale_mapping="exp"
    )
    out = loss(_batch(16, 1))
    assert type(out["loss_actor"].grad_fn).__name__ != "SACActorTermsBackward"
    out["loss_actor"].backward()
    # a two-dimensional batch
    loss = _sac(SPEC_1D)
    td = _batch(16, 1).reshape(4, 4)
    out = loss(td)
    assert type(out["loss_qvalue"].grad_fn).__name__ != "SACCriticTermsBackward"
    assert td["td_error"].shape == (4, 4)

    # a critic that is not a plain MLP
    class SinCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden, self.out = nn.Linear(4, 8), nn.Linear(8, 1)

        def forward(self, obs, action):
            return self.out(torch.sin(self.hidden(torch.cat([obs, action], -1))))

    critic = TensorDictModule(SinCritic(), in_keys=["observation", "action"], out_keys=["q"])
    loss = SACLoss(make_actor(OBS, SPEC_1D, num_cells=(8,)), critic, action_spec=SPEC_1D)
    out = loss(_batch(16, 1))
    assert type(out["loss_qvalue"].grad_fn).__name__ != "SACCriticTermsBackward"
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    # a hook on the critics
    loss = _sac(SPEC_1D)
    calls = []
    loss.qvalue_network_params.register_forward_hook(lambda *args: calls.append(1))
    out = loss(_batch(16, 1))
    assert calls and type(out["loss_actor"].grad_fn).__name__ != "SACActorTermsBackward"
    # no gradients: the same values as with them
    loss = _sac(SPEC_1D)
    td = _batch(16, 1)
    torch.manual_seed(1)
    with_grad = loss(td.clone())
    torch.manual_seed(1)
    with torch.no_grad():
        without = loss(td.clone())
    for key in LOSS_KEYS:
        torch.testing.assert_close(without[key], with_grad[key].detach())


class _SkipNet(nn.Module):
    """A user's actor body: not an nn.Sequential, with a skip connection."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Linear(3, 16), nn.Linear(16 + 3, 6)

    def forward(self, x):
        return self.out(torch.cat([torch.relu(self.hidden(x)), x], dim=-1))


class _DoubledSequential(nn.Sequential):
    """A Sequential subclass whose forward is not its layers in order."""

    def forward(self, x):
        return 2 * super().forward(x)


@pytest.mark.parametrize(
    "body",
    [_SkipNet, lambda: _DoubledSequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 6))],
    ids=["own-module", "sequential-with-own-forward"],
)
def test_a_users_own_actor_body_runs_as_written(body, monkeypatch):
    """The one-node path fuses only layers run in order: any other body (which used to stop
    SAC with "'_SkipNet' object is not iterable", or would have lost the doubling) gives the
    losses and gradients of its own forward, as with the fast paths off."""
    from tensordict.nn import NormalParamExtractor

    from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator

    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(body(), NormalParamExtractor()),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
    )
    q = MLP(in_features=6, out_features=1, num_cells=[16], activation_class=nn.ReLU)
    loss = SACLoss(actor, ValueOperator(q, in_keys=["observation", "action"]), gamma=0.9)
    keys = ("loss_actor", "loss_qvalue", "loss_alpha")
    td = _batch(8, 3)
    ref, ref_grads, _ = _run(loss, td, False, keys, monkeypatch)
    out, grads, _ = _run(loss, td, True, keys, monkeypatch)
    assert type(out["loss_actor"].grad_fn).__name__ != "SACActorTermsBackward"
    for key in LOSS_KEYS:
        torch.testing.assert_close(out[key], ref[key])
    for g, r in zip(grads, ref_grads, strict=True):
        assert (g is None) == (r is None)
        if r is not None:
            torch.testing.assert_close(g, r)
