import math
import re

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type
from torch import nn

from rl_trainers.envs.specs import Categorical, Composite, OneHot, Unbounded
from rl_trainers.fast.ppo import ActorCriticClipPPOTerms, ClipPPOCategoricalTerms
from rl_trainers.modules import make_actor, make_value
from rl_trainers.objectives import A2CLoss, ClipPPOLoss, KLPENPPOLoss, SACLoss, explained_variance


class _FixedDist:
    def __init__(self, log_prob):
        self._lp = log_prob

    def log_prob(self, action):
        return self._lp

    def entropy(self):
        return torch.zeros_like(self._lp)


class _StubActor(nn.Module):
    """An actor whose new log-probabilities are a leaf tensor we control."""

    in_keys = ["observation"]

    def __init__(self, new_log_prob):
        super().__init__()
        self.new_log_prob = nn.Parameter(new_log_prob)

    def get_dist(self, td):
        return _FixedDist(self.new_log_prob)


def _batch(adv):
    n = len(adv)
    return TensorDict(
        {
            "observation": torch.zeros(n, 1),
            "action": torch.zeros(n, 1),
            "sample_log_prob": torch.zeros(n),
            "advantage": torch.tensor(adv).reshape(n, 1),
        },
        batch_size=[n],
    )


def test_clip_objective_on_a_tiny_example():
    ratios = torch.tensor([1.5, 0.5, 1.1, 0.7])
    actor = _StubActor(ratios.log())
    loss = ClipPPOLoss(actor, None, clip_epsilon=0.2, entropy_bonus=False)
    out = loss(_batch([1.0, 1.0, -1.0, -1.0]))
    # per-sample gains: min(1.5, 1.2)=1.2, min(.5, .8)=.5, min(-1.1, -1.1)=-1.1, min(-.7, -.8)=-.8
    torch.testing.assert_close(out["loss_objective"], torch.tensor(0.05))
    torch.testing.assert_close(out["clip_fraction"], torch.tensor(0.75))
    out["loss_objective"].backward()
    grad = actor.new_log_prob.grad
    # clipped samples (0 and 3) get no gradient; d(-r*A/4)/dlogp = -r*A/4 for the others
    torch.testing.assert_close(grad, torch.tensor([0.0, -0.125, 0.275, 0.0]))
    assert "loss_entropy" not in out.keys()


def test_kl_penalty_adapts_beta():
    actor = _StubActor(torch.tensor([1.0, -1.0]))  # far from the old policy: large KL
    loss = KLPENPPOLoss(actor, None, dtarg=0.01, beta=1.0, increment=2.0, decrement=0.5)
    out = loss(_batch([1.0, 1.0]))
    r = torch.tensor([math.e, 1 / math.e])
    kl = ((r - 1) - torch.tensor([1.0, -1.0])).mean()
    torch.testing.assert_close(out["kl"], kl)
    torch.testing.assert_close(out["loss_objective"], -(r.mean()) + 1.0 * kl)
    assert float(loss.beta) == 2.0
    near = KLPENPPOLoss(_StubActor(torch.zeros(2)), None, beta=1.0)
    near(_batch([1.0, 1.0]))
    assert float(near.beta) == 0.5


def test_kl_penalty_backward_uses_the_beta_of_its_own_step():
    actor = _StubActor(torch.tensor([1.0, -1.0]))
    loss = KLPENPPOLoss(actor, None, dtarg=0.01, beta=1.0, entropy_bonus=False)
    out = loss(_batch([1.0, 1.0]))
    assert float(loss.beta) == 2.0  # adapted inside the call
    out["loss_objective"].backward()  # no in-place modification error
    r = torch.tensor([math.e, 1 / math.e])
    # d/dlogp of -mean(r * A) + beta * mean((r - 1) - logp), beta = 1 (the step's own)
    torch.testing.assert_close(actor.new_log_prob.grad, (-r + (r - 1)) / 2)


def test_kl_penalty_adapted_by_the_caller_once_per_update():
    actor = _StubActor(torch.tensor([1.0, -1.0]))
    loss = KLPENPPOLoss(actor, None, dtarg=0.01, beta=1.0, adapt_beta_each_call=False)
    for _ in range(3):
        loss(_batch([1.0, 1.0]))
    assert float(loss.beta) == 1.0
    kl = loss.measure_kl(_batch([1.0, 1.0]))
    r = torch.tensor([math.e, 1 / math.e])
    torch.testing.assert_close(kl, ((r - 1) - torch.tensor([1.0, -1.0])).mean())
    loss.adapt_beta(kl)
    assert float(loss.beta) == 2.0
    loss.adapt_beta(0.01)  # inside [dtarg / 1.5, 1.5 dtarg]: unchanged
    assert float(loss.beta) == 2.0
    loss.adapt_beta(0.0)
    assert float(loss.beta) == 1.0


def test_explained_variance():
    target = torch.tensor([1.0, 2.0, 3.0, 4.0])
    torch.testing.assert_close(
        explained_variance(target, torch.tensor([1.0, 2.0, 3.0, 5.0])), torch.tensor(0.85)
    )
    torch.testing.assert_close(explained_variance(target, target), torch.tensor(1.0))


def _cartpole_batch(actor):
    td = TensorDict(
        {
            "observation": torch.randn(2, 6, 4),
            "next": {
                "observation": torch.randn(2, 6, 4),
                "reward": torch.ones(2, 6, 1),
                "terminated": torch.zeros(2, 6, 1, dtype=torch.bool),
                "done": torch.zeros(2, 6, 1, dtype=torch.bool),
            },
        },
        batch_size=[2, 6],
    )
    with torch.no_grad(), set_interaction_type(InteractionType.RANDOM):
        actor(td)
    return td


@pytest.mark.parametrize("cls", [ClipPPOLoss, A2CLoss])
def test_ppo_and_a2c_with_real_modules(cls):
    obs = Composite(observation=Unbounded(shape=(4,)))
    actor, critic = make_actor(obs, OneHot(2)), make_value(obs)
    loss = cls(actor, critic, critic_coef=0.5, loss_critic_type="l2")
    loss.make_value_estimator("gae", gamma=0.99, lmbda=0.95)
    td = _cartpole_batch(actor)
    out = loss(td)
    for key in ("loss_objective", "loss_critic", "loss_entropy", "entropy", "explained_variance"):
        assert key in out.keys()
    # the estimator filled the targets; critic loss = 0.5 * mse
    value = critic.module(td["observation"])
    torch.testing.assert_close(out["loss_critic"], 0.5 * (value - td["value_target"]).pow(2).mean())
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    total.backward()
    assert all(p.grad is not None for p in actor.parameters())
    assert all(p.grad is not None for p in critic.parameters())
    assert {id(p) for p in loss.parameters()} == {
        id(p) for p in [*actor.parameters(), *critic.parameters()]
    }


@pytest.mark.parametrize("entry", [("next", "observation"), ("next", "reward")])
def test_a_batch_without_a_next_step_entry_is_refused_naming_it(entry):
    obs = Composite(observation=Unbounded(shape=(4,)))
    actor, critic = make_actor(obs, OneHot(2)), make_value(obs)
    loss = ClipPPOLoss(actor, critic)
    loss.make_value_estimator("gae", gamma=0.99, lmbda=0.95)
    td = _cartpole_batch(actor)
    del td[entry]
    with pytest.raises(KeyError, match=re.escape(f"{entry!r}, which the batch lacks; keep it")):
        loss(td)


def test_ppo_clip_ratio_is_one_on_policy():
    obs = Composite(observation=Unbounded(shape=(4,)))
    actor, critic = make_actor(obs, OneHot(2)), make_value(obs)
    loss = ClipPPOLoss(actor, critic)
    out = loss(_cartpole_batch(actor))
    assert float(out["clip_fraction"]) == 0.0
    assert abs(float(out["kl_approx"])) < 1e-6


def test_bad_loss_critic_type():
    with pytest.raises(ValueError, match="smooth_l1"):
        ClipPPOLoss(_StubActor(torch.zeros(1)), None, loss_critic_type="huber")


def test_in_keys_are_what_forward_reads():
    obs_spec = Composite(observation=Unbounded(shape=(6, 4)), shape=(6,))
    actor = make_actor(obs_spec, OneHot(2, shape=(6, 2)))
    critic = make_value(obs_spec)
    loss = ClipPPOLoss(actor, critic)
    assert loss.in_keys == [
        "observation",
        "action",
        "sample_log_prob",
        "advantage",
        "value_target",
    ]
    assert "state_value" in ClipPPOLoss(actor, critic, clip_value=0.2).in_keys
    td = TensorDict(
        {
            "observation": torch.randn(6, 4),
            "action": torch.nn.functional.one_hot(torch.randint(2, (6,)), 2).bool(),
            "sample_log_prob": torch.full((6,), -0.69),
            "advantage": torch.randn(6, 1),
            "value_target": torch.randn(6, 1),
            "unused": torch.zeros(6, 3),
        },
        batch_size=[6],
    )
    full = loss(td.clone())
    selected = loss(td.select(*loss.in_keys))
    for key in ("loss_objective", "loss_critic"):
        torch.testing.assert_close(full[key], selected[key])


def test_explained_variance_of_a_constant_target_is_zero():
    target = torch.ones(5, 1)
    assert explained_variance(target, torch.zeros(5, 1)).item() == 0.0
    torch.testing.assert_close(
        explained_variance(
            target * torch.arange(5.0)[:, None], target * torch.arange(5.0)[:, None]
        ),
        torch.tensor(1.0),
    )


def test_diagnostics_off_leaves_the_loss_terms_unchanged():
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, OneHot(2)), make_value(obs)
    loss = ClipPPOLoss(actor, critic, entropy_bonus=False, critic_coef=0.5)
    loss.make_value_estimator("gae", gamma=0.99, lmbda=0.95)
    td = _cartpole_batch(actor)
    with_diag = loss(td.clone())
    loss.diagnostics = False
    without = loss(td.clone())
    diagnostics = {"entropy", "kl_approx", "clip_fraction", "explained_variance"}
    assert diagnostics <= set(with_diag.keys())
    assert not diagnostics & set(without.keys())
    for key in ("loss_objective", "loss_critic"):
        torch.testing.assert_close(without[key], with_diag[key])


def _off_policy_batch(spec, n: int = 64, seed: int = 0) -> TensorDict:
    """A batch whose stored log-probabilities differ from the current policy's, so the
    ratios spread over [0.5, 2]: some clipped above, some below, both advantage signs."""
    gen = torch.Generator().manual_seed(seed)
    index = torch.randint(0, 3, (n,), generator=gen)
    action = torch.nn.functional.one_hot(index, 3).bool() if isinstance(spec, OneHot) else index
    return TensorDict(
        {
            "observation": torch.randn(n, 4, generator=gen),
            "action": action,
            "sample_log_prob": torch.log(torch.rand(n, generator=gen) * 0.5 + 0.2),
            "advantage": torch.randn(n, 1, generator=gen),
            "value_target": torch.randn(n, 1, generator=gen) * 3,
        },
        batch_size=[n],
    )


def _run_on_path(loss, batch, node, declined, monkeypatch, allow_unused=False) -> tuple:
    """``loss(batch)``'s entries, the gradients of their ``loss_*`` sum in the loss's
    parameters, and whether ``node`` ran, with the ``ClipPPOLoss`` methods ``declined``
    made to decline their path."""
    calls = []
    with monkeypatch.context() as patch:
        for method in declined:
            patch.setattr(ClipPPOLoss, method, lambda *args: False)
        original = node.apply
        patch.setattr(node, "apply", lambda *a: calls.append(1) or original(*a))
        out = loss(batch)
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    grads = torch.autograd.grad(total, list(loss.parameters()), allow_unused=allow_unused)
    return out, grads, bool(calls)


def _assert_same_entries_and_grads(fused, plain) -> None:
    """The same entries in the same order, and the same gradients, to float rounding (a
    parameter the plain graph does not reach gets none or zeros)."""
    (fused_out, fused_grads), (plain_out, plain_grads) = fused, plain
    assert list(fused_out.keys()) == list(plain_out.keys())
    for key in plain_out.keys():
        torch.testing.assert_close(fused_out[key], plain_out[key], msg=key)
    for a, b in zip(fused_grads, plain_grads, strict=True):
        if b is None:
            assert a is None or not a.any()
        else:
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("path", ["networks_and_terms", "terms"])
@pytest.mark.parametrize("spec", [OneHot(3), Categorical(3)], ids=["one_hot", "index"])
@pytest.mark.parametrize("loss_type", ["l2", "smooth_l1", "l1"])
@pytest.mark.parametrize("entropy_bonus", [False, True])
@pytest.mark.parametrize("diagnostics", [False, True])
@pytest.mark.parametrize("normalize_advantage", [False, True])
def test_categorical_clip_terms_match_the_op_by_op_graph(
    path, spec, loss_type, entropy_bonus, diagnostics, normalize_advantage, monkeypatch
):
    """The one-node categorical paths (ActorCriticClipPPOTerms with both MLPs,
    ClipPPOCategoricalTerms after them) give the op-by-op graph's losses, diagnostics and
    parameter gradients."""
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, spec), make_value(obs)
    one_node = {"networks_and_terms": ActorCriticClipPPOTerms, "terms": ClipPPOCategoricalTerms}

    def run(fused: bool):
        loss = ClipPPOLoss(
            actor,
            critic,
            clip_epsilon=0.2,
            entropy_bonus=entropy_bonus,
            entropy_coef=0.05,
            critic_coef=0.7,
            loss_critic_type=loss_type,
            normalize_advantage=normalize_advantage,
        )
        loss.diagnostics = diagnostics
        declined = []
        if not fused or path == "terms":
            declined.append("_actor_critic_terms")
        if not fused:
            declined.append("_categorical_terms")
        batch = _off_policy_batch(spec)
        out, grads, ran = _run_on_path(loss, batch, one_node[path], declined, monkeypatch)
        assert ran == fused, "the expected path was not taken"
        return out, grads

    plain = run(False)
    _assert_same_entries_and_grads(run(True), plain)
    if diagnostics:
        assert 0 < plain[0]["clip_fraction"] < 1  # both clipped and unclipped samples


def test_one_node_path_needs_plain_mlps_on_one_input():
    """A critic reading other keys than the actor, or a non-MLP network, keeps the actor and
    critic as separate calls (their own autograd nodes)."""
    from rl_trainers.objectives.ppo import _categorical_mlp_actor_critic

    obs = Composite(observation=Unbounded(shape=(4,)), extra=Unbounded(shape=(2,)))
    actor = make_actor(obs, OneHot(3))
    assert _categorical_mlp_actor_critic(actor, make_value(obs)) is not None
    other_input = make_value(obs, in_key="extra")
    assert _categorical_mlp_actor_critic(actor, other_input) is None
    critic = make_value(obs)
    critic.module = nn.Sequential(*critic.module)  # not an MLP any more
    assert _categorical_mlp_actor_critic(actor, critic) is None
    hooked = make_value(obs)
    hooked.module.register_forward_hook(lambda *args: None)  # must see every call
    assert _categorical_mlp_actor_critic(actor, hooked) is None


def test_categorical_terms_fall_back_with_value_clipping():
    obs = Composite(observation=Unbounded(shape=(4,)))
    actor, critic = make_actor(obs, OneHot(3)), make_value(obs)
    loss = ClipPPOLoss(actor, critic, clip_value=0.5)
    td = _off_policy_batch(OneHot(3))
    td["state_value"] = torch.zeros(64, 1)
    dist = actor.get_dist(td.clone())
    assert not loss._categorical_terms(td, dist, td["advantage"], {})
    out = loss(td)
    assert torch.isfinite(out["loss_critic"])


@pytest.mark.parametrize("cls", [ClipPPOLoss, A2CLoss])
def test_reused_batch_entries_changed_in_place_or_replaced_are_seen(cls):
    """Epochs reuse the batch's tensors (derived inputs are cached across steps); an
    advantage or action changed in place, or replaced, must give the loss a fresh module
    computes on the same data."""
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, OneHot(3)), make_value(obs)
    loss = cls(actor, critic, normalize_advantage=True)
    td = _off_policy_batch(OneHot(3))

    def assert_like_a_fresh_module():
        out = loss(td)
        fresh = cls(actor, critic, normalize_advantage=True)(td)
        for key in ("loss_objective", "loss_critic"):
            assert torch.equal(out[key], fresh[key]), key

    assert_like_a_fresh_module()
    assert_like_a_fresh_module()  # unchanged batch: the cached values
    td["advantage"].mul_(-3.0).add_(1.0)
    assert_like_a_fresh_module()
    td["action"] = td["action"].roll(1, dims=-1)  # a new tensor, other actions
    assert_like_a_fresh_module()
    td["action"].copy_(td["action"].roll(1, dims=-1))
    assert_like_a_fresh_module()


# -- gradients without autograd (ClipPPOLoss.loss_and_grads) ---------------------------------
_OBS = Composite(observation=Unbounded(shape=(4,)))


def _loss_with_mlps(spec=None, **kwargs) -> ClipPPOLoss:
    torch.manual_seed(0)
    spec = OneHot(3) if spec is None else spec
    return ClipPPOLoss(make_actor(_OBS, spec), make_value(_OBS), **kwargs)


def _autograd_grads(loss: ClipPPOLoss, td: TensorDict, keys) -> tuple:
    out = loss(td.clone())
    names = keys or [k for k in out.keys() if k.startswith("loss")]
    params = list(loss.parameters())
    return out, torch.autograd.grad(sum(out[k] for k in names), params)


@pytest.mark.parametrize("spec", [OneHot(3), Categorical(3)], ids=["one_hot", "index"])
@pytest.mark.parametrize("entropy_bonus", [False, True])
@pytest.mark.parametrize("diagnostics", [False, True])
@pytest.mark.parametrize(
    "keys", [None, ["loss_objective"], ["loss_critic"], ["loss_critic", "loss_objective"]]
)
def test_loss_and_grads_gives_forward_and_backward_bitwise(spec, entropy_bonus, diagnostics, keys):
    loss = _loss_with_mlps(
        spec,
        entropy_bonus=entropy_bonus,
        entropy_coef=0.05,
        critic_coef=0.7,
        normalize_advantage=True,
    )
    loss.diagnostics = diagnostics
    td = _off_policy_batch(spec)
    expected_out, expected_grads = _autograd_grads(loss, td, keys)
    out = loss.loss_and_grads(td.clone(), keys)
    assert out is not None
    assert list(out.keys()) == list(expected_out.keys())
    for key in expected_out.keys():
        assert torch.equal(out[key], expected_out[key].detach()), key
        assert not out[key].requires_grad
    for param, grad in zip(loss.parameters(), expected_grads, strict=True):
        assert torch.equal(param.grad, grad)


def test_loss_and_grads_with_the_entropy_term_only():
    loss = _loss_with_mlps(entropy_coef=0.05)
    td = _off_policy_batch(OneHot(3))
    _, expected = _autograd_grads(loss, td, ["loss_entropy"])
    assert loss.loss_and_grads(td, ["loss_entropy"]) is not None
    for param, grad in zip(loss.parameters(), expected, strict=True):
        assert torch.equal(param.grad, grad)  # the critic's gradients are zeros


def test_gradients_replace_the_old_ones_in_their_tensors():
    """Like ``zero_grad()`` then ``backward()``: the values are replaced, not added to, and a
    contiguous ``.grad`` keeps its identity (a trainer's flat buffer stays in use)."""
    loss = _loss_with_mlps()
    td = _off_policy_batch(OneHot(3))
    params = list(loss.parameters())
    for p in params:
        p.grad = torch.full_like(p, 7.0)
    held = [p.grad for p in params]
    loss.loss_and_grads(td)
    _, expected = _autograd_grads(loss, td, None)
    for p, grad, old in zip(params, expected, held, strict=True):
        assert p.grad is old
        assert torch.equal(p.grad, grad)


def _untouched(loss, td, keys=None) -> bool:
    before = [p.grad for p in loss.parameters()]
    result = loss.loss_and_grads(td, keys)
    return result is None and all(p.grad is g for p, g in zip(loss.parameters(), before))


def test_loss_and_grads_declines_where_it_cannot_and_changes_nothing():
    td = _off_policy_batch(OneHot(3))
    assert _untouched(
        _loss_with_mlps(clip_value=0.5), td.clone().set("state_value", torch.zeros(64, 1))
    )
    assert _untouched(
        _loss_with_mlps(), td, ["loss_objective", "loss_kl"]
    )  # not an entry of this loss
    assert _untouched(_loss_with_mlps(entropy_bonus=False), td, ["loss_entropy"])
    hooked = _loss_with_mlps()
    hooked.register_forward_hook(lambda *args: None)  # a hook must see the call
    assert _untouched(hooked, td)
    not_mlp = _loss_with_mlps()
    not_mlp.critic_network.module = nn.Sequential(*not_mlp.critic_network.module)
    assert _untouched(not_mlp, td)
    with torch.no_grad():
        assert _untouched(_loss_with_mlps(), td)
    actor = make_actor(Composite(observation=Unbounded(shape=(3,))), Unbounded(shape=(1,)))
    q = make_value(Composite(observation=Unbounded(shape=(3,))))
    assert SACLoss(actor, q).loss_and_grads(td) is None  # the base class: not implemented


@pytest.mark.parametrize("path", ["networks_and_terms", "terms", "op_by_op"])
@pytest.mark.parametrize("entropy_bonus", [False, True])
def test_one_backward_pass_per_network_through_the_same_forward(path, entropy_bonus, monkeypatch):
    """torchrl lets each loss term have its own optimizer (one OptimizerHook per term: the
    actor's on loss_objective, the critic's on loss_critic), each running its own backward
    pass on the same loss output. Every path gives each network the gradient of its own
    terms, and the second pass runs after the first."""
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, Categorical(3)), make_value(obs)
    loss = ClipPPOLoss(actor, critic, entropy_bonus=entropy_bonus, entropy_coef=0.05)
    td = _off_policy_batch(Categorical(3))
    actor_params, critic_params = list(actor.parameters()), list(critic.parameters())
    actor_terms = ["loss_objective", *(["loss_entropy"] if entropy_bonus else [])]
    with monkeypatch.context() as patch:  # reference: the op-by-op graph, one forward each
        patch.setattr(ClipPPOLoss, "_actor_critic_terms", lambda *args: False)
        patch.setattr(ClipPPOLoss, "_categorical_terms", lambda *args: False)
        expected_actor = torch.autograd.grad(
            sum(loss(td.clone())[k] for k in actor_terms), actor_params
        )
        expected_critic = torch.autograd.grad(loss(td.clone())["loss_critic"], critic_params)
    with monkeypatch.context() as patch:
        if path != "networks_and_terms":
            patch.setattr(ClipPPOLoss, "_actor_critic_terms", lambda *args: False)
        if path == "op_by_op":
            patch.setattr(ClipPPOLoss, "_categorical_terms", lambda *args: False)
        out = loss(td.clone())
    sum(out[k] for k in actor_terms).backward()
    assert all(p.grad is None or not p.grad.any() for p in critic_params)
    for param, grad in zip(actor_params, expected_actor, strict=True):
        torch.testing.assert_close(param.grad, grad)
    loss.zero_grad()
    out["loss_critic"].backward()
    assert all(p.grad is None or not p.grad.any() for p in actor_params)
    for param, grad in zip(critic_params, expected_critic, strict=True):
        torch.testing.assert_close(param.grad, grad)


def _gaussian_batch(n: int = 64, d: int = 3, seed: int = 0) -> TensorDict:
    """Actions drawn away from the policy's mean, stored log-probabilities off the current
    ones: ratios on both sides of the clip range, both advantage signs."""
    gen = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation": torch.randn(n, 4, generator=gen),
            "action": torch.randn(n, d, generator=gen) * 1.5,
            "sample_log_prob": torch.randn(n, generator=gen) - 4.0,
            "advantage": torch.randn(n, 1, generator=gen),
            "value_target": torch.randn(n, 1, generator=gen) * 3,
        },
        batch_size=[n],
    )


@pytest.mark.parametrize("loss_type", ["l2", "smooth_l1"])
@pytest.mark.parametrize("entropy_bonus", [False, True])
@pytest.mark.parametrize("diagnostics", [False, True])
@pytest.mark.parametrize("log_std_init", [0.0, -0.5, -12.0], ids=["std1", "std0.6", "clamped"])
def test_gaussian_clip_terms_match_the_op_by_op_graph(
    loss_type, entropy_bonus, diagnostics, log_std_init, monkeypatch
):
    """SB3's Gaussian policy (an MLP's loc and a state-independent exp scale) with an MLP
    critic runs as one node (GaussianActorCriticClipPPOTerms): the op-by-op graph's losses,
    diagnostics and gradients (the scale's parameter included; none where the scale sits at
    its lower bound)."""
    from rl_trainers.envs.specs import Bounded
    from rl_trainers.fast.ppo import GaussianActorCriticClipPPOTerms

    obs = Composite(observation=Unbounded(shape=(4,)))
    action_spec = Bounded(-1.0, 1.0, torch.Size([3]))
    torch.manual_seed(0)
    actor = make_actor(
        obs, action_spec, state_dependent_scale=False, squash=False, log_std_init=log_std_init
    )
    critic = make_value(obs)

    def run(fused: bool):
        loss = ClipPPOLoss(
            actor,
            critic,
            clip_epsilon=0.2,
            entropy_bonus=entropy_bonus,
            entropy_coef=0.05,
            critic_coef=0.7,
            loss_critic_type=loss_type,
        )
        loss.diagnostics = diagnostics
        declined = [] if fused else ["_actor_critic_terms"]
        node = GaussianActorCriticClipPPOTerms
        out, grads, ran = _run_on_path(
            loss, _gaussian_batch(), node, declined, monkeypatch, allow_unused=True
        )
        assert ran == fused, "the expected path was not taken"
        return out, grads

    fused, plain = run(True), run(False)
    _assert_same_entries_and_grads(fused, plain)
    fused_grads, plain_out = fused[1], plain[0]
    log_std = actor.module.module[1].state_independent_scale
    loss_params = list(ClipPPOLoss(actor, critic).parameters())
    index = next(i for i, q in enumerate(loss_params) if q is log_std)
    assert bool(fused_grads[index].any()) == (log_std_init > -10)  # the clamp stops it
    if diagnostics and log_std_init > -10:
        assert 0 < plain_out["clip_fraction"] < 1  # both clipped and unclipped samples


@pytest.mark.parametrize("entropy_bonus", [False, True])
@pytest.mark.parametrize(
    "keys", [None, ["loss_objective"], ["loss_critic"], ["loss_critic", "loss_objective"]]
)
def test_gaussian_loss_and_grads_gives_forward_and_backward_bitwise(entropy_bonus, keys):
    """SB3's Gaussian policy: the gradients without autograd are bitwise those of a backward
    pass through its one node (the scale's parameter included)."""
    from rl_trainers.envs.specs import Bounded

    torch.manual_seed(0)
    actor = make_actor(
        Composite(observation=Unbounded(shape=(4,))),
        Bounded(-1.0, 1.0, torch.Size([3])),
        state_dependent_scale=False,
        squash=False,
        log_std_init=-0.5,
    )
    loss = ClipPPOLoss(
        actor,
        make_value(Composite(observation=Unbounded(shape=(4,)))),
        entropy_bonus=entropy_bonus,
        entropy_coef=0.05,
        critic_coef=0.7,
        normalize_advantage=True,
    )
    td = _gaussian_batch()
    expected_out, expected_grads = _autograd_grads(loss, td, keys)
    out = loss.loss_and_grads(td.clone(), keys)
    assert out is not None
    assert list(out.keys()) == list(expected_out.keys())
    for key in expected_out.keys():
        assert torch.equal(out[key], expected_out[key].detach()), key
    for param, grad in zip(loss.parameters(), expected_grads, strict=True):
        assert torch.equal(param.grad, grad)


def test_value_clipping_takes_the_larger_of_the_clipped_and_unclipped_losses():
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, OneHot(3)), make_value(obs)
    td = _off_policy_batch(OneHot(3))
    with torch.no_grad():
        value = critic(td.clone())["state_value"]
    # stored values on both sides of the prediction, near and far
    td["state_value"] = value + torch.linspace(-2.0, 2.0, 64).unsqueeze(-1)
    target = td["value_target"]
    clipped = td["state_value"] + (value - td["state_value"]).clamp(-0.5, 0.5)
    expected = torch.maximum((value - target) ** 2, (clipped - target) ** 2).mean()
    loss = ClipPPOLoss(actor, critic, clip_value=0.5, loss_critic_type="l2", critic_coef=1.0)
    torch.testing.assert_close(loss(td.clone())["loss_critic"], expected)
    unclipped = ClipPPOLoss(actor, critic, loss_critic_type="l2", critic_coef=1.0)
    assert unclipped(td.clone())["loss_critic"] < expected  # some predictions were clipped


def test_every_ppo_loss_measures_the_kl_to_the_collecting_policy():
    obs = Composite(observation=Unbounded(shape=(4,)))
    torch.manual_seed(0)
    actor, critic = make_actor(obs, OneHot(3)), make_value(obs)
    td = _off_policy_batch(OneHot(3))
    log_prob = actor.get_dist(td.clone()).log_prob(td["action"])
    log_r = log_prob - td["sample_log_prob"]
    expected = (log_r.exp() - 1 - log_r).mean()
    for loss in (ClipPPOLoss(actor, critic), KLPENPPOLoss(actor, critic)):
        torch.testing.assert_close(loss.measure_kl(td), expected)
