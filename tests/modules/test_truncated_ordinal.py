"""torchrl's TruncatedNormal and Ordinal/OneHotOrdinal distributions: behaviour against
independent references, and in a ProbabilisticActor trained by the PPO losses."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import distributions as D
from torch import nn

import rl_trainers.modules as modules
import rl_trainers.modules.distributions as distributions
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import (
    OneHotOrdinal,
    Ordinal,
    ProbabilisticActor,
    TruncatedNormal,
    ValueOperator,
)
from rl_trainers.objectives import A2CLoss, ClipPPOLoss, SACLoss

f64 = torch.float64


def _reference_log_density(x, loc, scale, low, high):
    """Per-entry log-density of N(loc, scale) renormalised on [low, high], in float64 from
    torch.distributions.Normal (valid where the mass does not underflow)."""
    normal = D.Normal(loc.to(f64), scale.to(f64))
    mass = normal.cdf(torch.as_tensor(high, dtype=f64)) - normal.cdf(
        torch.as_tensor(low, dtype=f64)
    )
    return normal.log_prob(x.to(f64)) - mass.log()


def _grid(low, high, n=200_001):
    return torch.linspace(low, high, n, dtype=f64)


# (loc, scale) pairs on [-1, 1]: inside, near a bound, outside, wide, narrow
CASES = [(0.0, 1.0), (0.3, 0.2), (0.9, 0.05), (-1.5, 0.4), (3.0, 0.5), (0.5, 1e3), (-0.7, 0.01)]


def _one_dim(loc, scale, dtype=f64):
    return TruncatedNormal(torch.tensor([[loc]], dtype=dtype), torch.tensor([[scale]], dtype=dtype))


def test_samples_stay_within_tensor_bounds_in_float32():
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0, -3.0]), torch.tensor([1.0, 0.5, -2.0])
    # inside, at, and far outside the bounds (thousands of scales away), with batch dims
    loc = torch.tensor([[0.0, 0.25, -2.5], [1.0, 0.0, -3.0], [40.0, -40.0, 7.0]]).expand(4, 3, 3)
    scale = torch.tensor([[1.0, 0.1, 0.01], [0.5, 1e-3, 2.0], [1e-3, 1e-2, 1e-4]]).expand(4, 3, 3)
    dist = TruncatedNormal(loc, scale, low=low, high=high)
    assert dist.batch_shape == (4, 3) and dist.event_shape == (3,)
    samples = dist.sample((500,))
    assert samples.shape == (500, 4, 3, 3) and samples.dtype == torch.float32
    assert ((samples >= low) & (samples <= high)).all()
    log_prob = dist.log_prob(samples)
    assert log_prob.shape == (500, 4, 3) and torch.isfinite(log_prob).all()
    assert torch.isfinite(dist.entropy()).all() and torch.isfinite(dist.mean).all()
    # the far-away locs put their samples against the nearer bound
    assert (samples[..., 2, 0] > 0.99).all() and (samples[..., 2, 1] < 0.01).all()


@pytest.mark.parametrize(("loc", "scale"), CASES)
def test_log_prob_matches_a_renormalised_normal(loc, scale):
    torch.manual_seed(0)
    dist = _one_dim(loc, scale)
    x = torch.rand(50, 1, 1, dtype=f64) * 2 - 1
    expected = _reference_log_density(x, dist.loc, dist.scale, -1.0, 1.0).sum(-1)
    torch.testing.assert_close(dist.log_prob(x), expected, rtol=1e-9, atol=1e-9)
    # float32 parameters: same values to float32 precision
    dist32 = _one_dim(loc, scale, torch.float32)
    torch.testing.assert_close(dist32.log_prob(x.float()).double(), expected, rtol=1e-5, atol=1e-5)


def test_log_prob_sums_the_event_dim_and_is_minus_inf_outside():
    loc, scale = torch.tensor([[0.1, -0.4]], dtype=f64), torch.tensor([[0.5, 2.0]], dtype=f64)
    low, high = torch.tensor([-1.0, 0.0], dtype=f64), torch.tensor([1.0, 3.0], dtype=f64)
    dist = TruncatedNormal(loc, scale, low=low, high=high)
    x = torch.tensor([[0.2, 2.5]], dtype=f64)
    expected = _reference_log_density(x, loc, scale, low, high).sum(-1)
    torch.testing.assert_close(dist.log_prob(x), expected)
    at_bounds = dist.log_prob(torch.stack([low, high]))
    assert torch.isfinite(at_bounds).all()
    assert dist.log_prob(torch.tensor([[1.01, 2.5]], dtype=f64)).item() == float("-inf")
    assert dist.log_prob(torch.tensor([[0.0, -0.01]], dtype=f64)).item() == float("-inf")


@pytest.mark.parametrize(("loc", "scale"), CASES)
def test_density_integrates_to_one_and_entropy_mean_match_integrals(loc, scale):
    dist = _one_dim(loc, scale)
    x = _grid(-1.0, 1.0)
    log_p = dist.log_prob(x.reshape(-1, 1, 1)).flatten()
    p = log_p.exp()
    assert torch.trapezoid(p, x).item() == pytest.approx(1.0, abs=1e-6)
    entropy = -torch.trapezoid(p * log_p, x)
    assert dist.entropy().item() == pytest.approx(entropy.item(), abs=1e-6)
    mean = torch.trapezoid(p * x, x)
    assert dist.mean.item() == pytest.approx(mean.item(), abs=1e-7)
    # float32 parameters give the same values to float32 precision
    dist32 = _one_dim(loc, scale, torch.float32)
    assert dist32.mean.item() == pytest.approx(mean.item(), abs=1e-6)
    assert dist32.entropy().item() == pytest.approx(entropy.item(), abs=1e-5)


def test_mode_mean_and_deterministic_sample_as_torchrl():
    loc = torch.tensor([[0.3, 5.0, -5.0]], dtype=f64)
    dist = TruncatedNormal(loc, torch.full_like(loc, 0.5))
    # mode: loc clamped onto the bounds; deterministic_sample: the (truncated) mean
    torch.testing.assert_close(dist.mode, torch.tensor([[0.3, 1.0, -1.0]], dtype=f64))
    torch.testing.assert_close(dist.deterministic_sample, dist.mean)
    assert dist.mean[0, 0] < 0.3  # pulled towards the centre of [-1, 1] by the truncation
    assert 0.8 < dist.mean[0, 1] < 1.0 and -1.0 < dist.mean[0, 2] < -0.8
    torch.manual_seed(0)
    samples = dist.sample((40_000,))
    torch.testing.assert_close(samples.mean(0), dist.mean, atol=5e-3, rtol=0)


def test_far_from_the_bounds_values_match_high_precision_references():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    for loc, scale in [(-38.0, 1e-3), (2.0, 1e-4), (12.0, 0.5)]:
        dist = _one_dim(loc, scale, torch.float32)
        loc32, scale32 = float(dist.loc), float(dist.scale)
        a, b = (mpmath.mpf(-1) - loc32) / scale32, (mpmath.mpf(1) - loc32) / scale32
        if a > 0:  # the mass as a difference of small lower-tail probabilities
            mass = mpmath.ncdf(-a) - mpmath.ncdf(-b)
        else:
            mass = mpmath.ncdf(b) - mpmath.ncdf(a)
        pdf_a, pdf_b = mpmath.npdf(a), mpmath.npdf(b)
        mean = loc32 + scale32 * (pdf_a - pdf_b) / mass
        entropy = mpmath.log(mpmath.sqrt(2 * mpmath.pi * mpmath.e) * scale32 * mass)
        entropy += (a * pdf_a - b * pdf_b) / (2 * mass)
        x = float(torch.tensor(float(mean)))  # the mean, rounded to float32
        z = (mpmath.mpf(x) - loc32) / scale32
        log_prob = -(z**2) / 2 - mpmath.log(scale32 * mpmath.sqrt(2 * mpmath.pi) * mass)
        assert dist.mean.item() == pytest.approx(float(mean), abs=1e-6)
        assert dist.entropy().item() == pytest.approx(float(entropy), abs=1e-5)
        got = dist.log_prob(torch.tensor([[x]])).item()
        assert got == pytest.approx(float(log_prob), rel=1e-6, abs=1e-5)


def test_rsample_gradients_reach_loc_and_scale():
    loc = torch.tensor([[0.2, -3.0]], dtype=f64, requires_grad=True)
    scale = torch.tensor([[0.5, 0.3]], dtype=f64, requires_grad=True)
    dist = TruncatedNormal(loc, scale)
    value = dist.rsample((7,))
    assert value.requires_grad
    value.sum().backward()
    assert torch.isfinite(loc.grad).all() and (loc.grad != 0).all()
    assert torch.isfinite(scale.grad).all() and (scale.grad != 0).all()


def _seeded_rsample(loc, scale, seed=1):
    torch.manual_seed(seed)
    return TruncatedNormal(loc, scale).rsample((6,))


@pytest.mark.parametrize(("loc", "scale"), [(0.3, 0.6), (1.7, 0.2), (-2.0, 1e-2)])
def test_rsample_gradient_matches_finite_differences_of_the_same_quantiles(loc, scale):
    loc_ = torch.tensor([[loc]], dtype=f64, requires_grad=True)
    scale_ = torch.tensor([[scale]], dtype=f64, requires_grad=True)
    grad_loc, grad_scale = torch.autograd.grad(_seeded_rsample(loc_, scale_).sum(), [loc_, scale_])
    loc_, scale_ = loc_.detach(), scale_.detach()
    h = 1e-6 * scale
    fd_loc = (_seeded_rsample(loc_ + h, scale_) - _seeded_rsample(loc_ - h, scale_)).sum() / (2 * h)
    fd_scale = (_seeded_rsample(loc_, scale_ + h) - _seeded_rsample(loc_, scale_ - h)).sum() / (
        2 * h
    )
    assert grad_loc.item() == pytest.approx(fd_loc.item(), rel=1e-5, abs=1e-8)
    assert grad_scale.item() == pytest.approx(fd_scale.item(), rel=1e-5, abs=1e-8)


@pytest.mark.parametrize(
    ("loc", "scale"), [(0.3, 0.6), (1.0, 0.2), (-1.0, 3.0), (-38.0, 1e-3), (2.0, 1e-4)]
)
def test_mean_and_entropy_gradients_match_finite_differences(loc, scale):
    """Including a bound exactly at loc and locs thousands of scales outside the bounds."""
    for quantity in ("mean", "entropy"):

        def value(loc_, scale_, quantity=quantity):
            dist = TruncatedNormal(loc_, scale_)
            return (dist.mean if quantity == "mean" else dist.entropy()).sum()

        loc_ = torch.tensor([[loc]], dtype=f64, requires_grad=True)
        scale_ = torch.tensor([[scale]], dtype=f64, requires_grad=True)
        grads = torch.autograd.grad(value(loc_, scale_), [loc_, scale_])
        loc_, scale_, h = loc_.detach(), scale_.detach(), 1e-4 * scale
        fd_loc = (value(loc_ + h, scale_) - value(loc_ - h, scale_)) / (2 * h)
        fd_scale = (value(loc_, scale_ + h) - value(loc_, scale_ - h)) / (2 * h)
        for got, expected in zip(grads, (fd_loc, fd_scale)):
            assert got.item() == pytest.approx(expected.item(), rel=1e-4, abs=1e-6), quantity


def test_samples_move_continuously_with_loc():
    """The same uniform draw gives nearly the same value on both sides of loc = centre of
    the bounds, where the computation switches to the mirrored interval."""
    scale = torch.tensor([[0.7]], dtype=f64)
    below = _seeded_rsample(torch.tensor([[-1e-9]], dtype=f64), scale)
    above = _seeded_rsample(torch.tensor([[1e-9]], dtype=f64), scale)
    torch.testing.assert_close(below, above, atol=1e-8, rtol=0)


def test_pathwise_gradient_of_the_sample_mean_matches_the_mean_gradient():
    torch.manual_seed(0)
    loc = torch.tensor([[0.6]], dtype=f64, requires_grad=True)
    scale = torch.tensor([[0.4]], dtype=f64, requires_grad=True)
    pathwise = torch.autograd.grad(
        TruncatedNormal(loc, scale).rsample((100_000,)).mean(), [loc, scale]
    )
    analytic = torch.autograd.grad(TruncatedNormal(loc, scale).mean.sum(), [loc, scale])
    for got, expected in zip(pathwise, analytic):
        assert got.item() == pytest.approx(expected.item(), abs=5e-3)


def test_bounds_as_floats_tensors_and_torchrl_min_max_names():
    loc, scale = torch.tensor([[0.5, 0.5]]), torch.tensor([[1.0, 1.0]])
    by_float = TruncatedNormal(loc, scale, low=0.0, high=2.0)
    by_tensor = TruncatedNormal(loc, scale, low=torch.zeros(2), high=torch.full((2,), 2.0))
    by_old_names = TruncatedNormal(loc, scale, min=0.0, max=2.0)
    x = torch.tensor([[0.1, 1.9]])
    torch.testing.assert_close(by_float.log_prob(x), by_tensor.log_prob(x))
    torch.testing.assert_close(by_float.log_prob(x), by_old_names.log_prob(x))
    assert by_float.support.check(x).all()
    with pytest.raises(ValueError, match="low < high"):
        TruncatedNormal(loc, scale, low=1.0, high=1.0)


def test_tanh_loc_squashes_the_location_first():
    loc = torch.tensor([[12.0, -0.3]])
    dist = TruncatedNormal(loc, torch.ones(1, 2), upscale=2.0, low=-5.0, high=5.0, tanh_loc=True)
    torch.testing.assert_close(dist.mode, 2.0 * torch.tanh(loc / 2.0))


def _truncated_normal_actor(low, high):
    net = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 4), NormalParamExtractor())
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        distribution_class=TruncatedNormal,
        distribution_kwargs={"low": low, "high": high},
        return_log_prob=True,
    )


def test_probabilistic_actor_acts_by_exploration_type():
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 2.0])
    actor = _truncated_normal_actor(low, high)
    td = TensorDict({"observation": torch.randn(64, 3)}, [64])
    with set_exploration_type(ExplorationType.RANDOM):
        random = actor(td.clone())
    action = random["action"]
    assert action.shape == (64, 2) and ((action >= low) & (action <= high)).all()
    dist = actor.get_dist(random.clone())
    torch.testing.assert_close(random["sample_log_prob"], dist.log_prob(action))
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        deterministic = actor(td.clone())
    torch.testing.assert_close(deterministic["action"], dist.mean)


@pytest.mark.parametrize("loss_class", [ClipPPOLoss, A2CLoss])
def test_truncated_normal_actor_trains_in_a_ppo_loss(loss_class):
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 2.0])
    actor = _truncated_normal_actor(low, high)
    critic = ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    loss = loss_class(actor, critic)
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        batch = actor(TensorDict({"observation": torch.randn(256, 3)}, [256]))
    target = torch.tensor([0.5, 1.5])  # actions near it are better
    advantage = -(batch["action"] - target).pow(2).sum(-1, keepdim=True)
    batch["advantage"] = (advantage - advantage.mean()) / advantage.std()
    batch["value_target"] = torch.randn(256, 1)
    optim = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=3e-3)

    def total_loss():
        out = loss(batch.clone())
        return sum(v for k, v in out.items() if k.startswith("loss_")), out

    first, out = total_loss()
    assert torch.isfinite(first) and torch.isfinite(out["entropy"])
    first.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in actor.parameters())
    for _ in range(25):
        optim.zero_grad()
        total, _ = total_loss()
        total.backward()
        optim.step()
    assert total_loss()[0].item() < first.item() - 0.05


def test_truncated_normal_actor_in_a_sac_loss():
    torch.manual_seed(0)
    actor = _truncated_normal_actor(torch.tensor(-1.0), torch.tensor(1.0))
    qvalue = ValueOperator(nn.Linear(5, 1), in_keys=["observation", "action"])
    loss = SACLoss(actor, qvalue)
    batch = TensorDict(
        {
            "observation": torch.randn(8, 3),
            "action": torch.rand(8, 2) * 2 - 1,
            ("next", "observation"): torch.randn(8, 3),
            ("next", "reward"): torch.randn(8, 1),
            ("next", "done"): torch.zeros(8, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(8, 1, dtype=torch.bool),
        },
        [8],
    )
    out = loss(batch)
    out["loss_actor"].backward()
    assert torch.isfinite(out["loss_actor"]) and torch.isfinite(out["loss_qvalue"])
    assert all(p.grad is not None for p in actor.parameters())


def _hand_ordinal_log_probs(scores):
    """log-probabilities of the ordinal construction, written out with Python floats:
    class k gets sum_{j<=k} log sigmoid(s_j) + sum_{j>k} log(1 - sigmoid(s_j)), normalised."""
    out = []
    for row in scores.tolist():
        sig = [1 / (1 + math.exp(-s)) for s in row]
        logits = [
            sum(math.log(p) for p in sig[: k + 1]) + sum(math.log(1 - p) for p in sig[k + 1 :])
            for k in range(len(row))
        ]
        norm = math.log(sum(math.exp(v) for v in logits))
        out.append([v - norm for v in logits])
    return torch.tensor(out, dtype=f64)


def test_ordinal_probabilities_match_a_hand_computation():
    torch.manual_seed(0)
    scores = torch.randn(4, 5, dtype=f64)
    expected = _hand_ordinal_log_probs(scores)
    torch.testing.assert_close(OneHotOrdinal(scores).log_probs, expected)
    torch.testing.assert_close(Ordinal(scores).log_probs, expected)
    probs = OneHotOrdinal(scores).probs
    torch.testing.assert_close(probs.sum(-1), torch.ones(4, dtype=f64))
    # equal scores of 1: the logits step by log sigmoid(1) - log sigmoid(-1) = 1 per class
    logits = OneHotOrdinal(torch.ones(4)).logits
    torch.testing.assert_close(
        logits, torch.tensor([-4.2530, -3.2530, -2.2530, -1.2530]), atol=1e-4, rtol=0
    )


def test_ordinal_structure_moves_mass_to_higher_classes():
    scores = torch.zeros(1, 6)
    base = Ordinal(scores).probs
    raised = scores.clone()
    raised[0, 3] = 3.0
    moved = Ordinal(raised).probs
    # raising s_3 moves mass from the classes below 3 to those from 3 up
    assert (moved[0, :3] < base[0, :3]).all() and (moved[0, 3:] > base[0, 3:]).all()
    assert Ordinal(torch.full((1, 6), 20.0)).mode.item() == 5
    assert Ordinal(torch.full((1, 6), -20.0)).mode.item() == 0


def test_one_hot_ordinal_samples_log_prob_mode_entropy():
    torch.manual_seed(0)
    scores = torch.randn(3, 4)
    dist = OneHotOrdinal(scores)
    samples = dist.sample((20_000,))
    assert samples.shape == (20_000, 3, 4)
    assert ((samples == 0) | (samples == 1)).all() and (samples.sum(-1) == 1).all()
    torch.testing.assert_close(samples.mean(0), dist.probs, atol=0.015, rtol=0)
    sample = dist.sample()
    index = sample.argmax(-1)
    torch.testing.assert_close(
        dist.log_prob(sample), dist.log_probs.gather(-1, index[:, None])[:, 0]
    )
    torch.testing.assert_close(dist.mode, nn.functional.one_hot(dist.probs.argmax(-1), 4).float())
    torch.testing.assert_close(dist.entropy(), -(dist.probs * dist.log_probs).sum(-1))
    # Ordinal is the index version of the same distribution
    as_index = Ordinal(scores)
    torch.testing.assert_close(as_index.log_prob(index), dist.log_prob(sample))
    assert as_index.sample((5,)).dtype == torch.int64


def test_ordinal_gradients_stay_finite_for_extreme_scores():
    big = torch.finfo(torch.float32).max
    scores = torch.tensor([[1.0, 0.0, big], [1.0, 0.0, -big]], requires_grad=True)
    for cls in (Ordinal, OneHotOrdinal):
        dist = cls(scores)
        dist.log_prob(dist.sample()).sum().backward()
        assert scores.grad is not None and not scores.grad.isnan().any()


def test_one_hot_ordinal_actor_in_a_clip_ppo_loss():
    torch.manual_seed(0)
    net = TensorDictModule(nn.Linear(3, 5), in_keys=["observation"], out_keys=["scores"])
    actor = ProbabilisticActor(
        net, in_keys=["scores"], distribution_class=OneHotOrdinal, return_log_prob=True
    )
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        batch = actor(TensorDict({"observation": torch.randn(32, 3)}, [32]))
    assert (batch["action"].sum(-1) == 1).all()
    batch["advantage"] = torch.randn(32, 1)
    out = ClipPPOLoss(actor, entropy_bonus=True)(batch)
    (out["loss_objective"] + out["loss_entropy"]).backward()
    assert torch.isfinite(out["loss_objective"]) and net.module.weight.grad.abs().sum() > 0


def test_torchrl_import_paths():
    for name in ("TruncatedNormal", "Ordinal", "OneHotOrdinal"):
        assert getattr(distributions, name) is getattr(modules, name)
        assert name in modules.__all__ and name in distributions.__all__
