import pytest
import torch
from torch import distributions as D

from rl_trainers.modules import Categorical, IndependentNormal, OneHotCategorical, TanhNormal


def _reference(loc, scale, low, high):
    base = D.Independent(D.Normal(loc, scale), 1)
    transforms = [D.TanhTransform(), D.AffineTransform((high + low) / 2, (high - low) / 2)]
    return D.TransformedDistribution(base, transforms)


def test_tanh_normal_log_prob_matches_torch_reference():
    torch.manual_seed(0)
    loc = torch.randn(6, 2, dtype=torch.float64)
    scale = torch.rand(6, 2, dtype=torch.float64) + 0.2
    low = torch.tensor([-2.0, 0.0], dtype=torch.float64)
    high = torch.tensor([2.0, 1.0], dtype=torch.float64)
    dist = TanhNormal(loc, scale, low=low, high=high)
    ref = _reference(loc, scale, low, high)
    action = ref.sample()
    torch.testing.assert_close(dist.log_prob(action), ref.log_prob(action))
    # the sample path's log-prob (computed from the pre-tanh value) agrees with log_prob()
    a, lp = dist.rsample_and_log_prob()
    torch.testing.assert_close(lp, ref.log_prob(a), rtol=1e-6, atol=1e-6)


def test_tanh_normal_bounds_and_mode():
    loc = torch.tensor([[10.0], [-10.0], [0.3]])
    dist = TanhNormal(loc, torch.full_like(loc, 3.0), low=-2.0, high=2.0)
    samples = dist.sample((1000,))
    assert samples.shape == (1000, 3, 1)
    assert (samples.abs() <= 2.0).all()
    torch.testing.assert_close(dist.mode, 2.0 * torch.tanh(loc))
    # saturated actions at the bound still give a finite log-prob
    assert torch.isfinite(dist.log_prob(torch.tensor([[2.0], [-2.0], [0.0]]))).all()


def test_tanh_normal_rsample_has_gradients():
    loc = torch.zeros(4, 1, requires_grad=True)
    a, lp = TanhNormal(loc, torch.ones(4, 1)).rsample_and_log_prob()
    (a.sum() + lp.sum()).backward()
    assert loc.grad is not None and loc.grad.abs().sum() > 0


def test_independent_normal_matches_torch():
    loc, scale = torch.randn(3, 2), torch.rand(3, 2) + 0.1
    ref = D.Independent(D.Normal(loc, scale), 1)
    x = ref.sample()
    dist = IndependentNormal(loc, scale)
    torch.testing.assert_close(dist.log_prob(x), ref.log_prob(x))
    torch.testing.assert_close(dist.entropy(), ref.entropy())


def test_categorical_log_prob_entropy_and_one_hot():
    logits = torch.randn(5, 4)
    ref = D.Categorical(logits=logits)
    idx = torch.tensor([0, 1, 2, 3, 1])
    dist = Categorical(logits=logits)
    torch.testing.assert_close(dist.log_prob(idx), ref.log_prob(idx))
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    oh = OneHotCategorical(logits=logits, dtype=torch.bool)
    sample = oh.sample()
    assert sample.dtype == torch.bool and (sample.sum(-1) == 1).all()
    torch.testing.assert_close(
        oh.log_prob(torch.nn.functional.one_hot(idx, 4).bool()), ref.log_prob(idx)
    )


def test_categorical_sampling_frequencies():
    torch.manual_seed(0)
    probs = torch.tensor([0.1, 0.2, 0.7])
    samples = Categorical(probs=probs).sample((20000,))
    freq = torch.bincount(samples, minlength=3).float() / 20000
    torch.testing.assert_close(freq, probs, atol=0.015, rtol=0)


@pytest.mark.parametrize("cls", [Categorical, OneHotCategorical])
def test_categorical_sample_and_log_prob_match_sample_then_log_prob(cls):
    logits = torch.randn(16, 3, generator=torch.Generator().manual_seed(0))
    logits[:, 2] = -float("inf")  # an impossible action: a one-hot product would give nan
    dist = cls(logits=logits)
    torch.manual_seed(1)
    action, log_prob = dist.sample_and_log_prob()
    torch.manual_seed(1)
    assert torch.equal(action, dist.sample())
    assert torch.isfinite(log_prob).all()
    index = action.argmax(-1) if cls is OneHotCategorical else action
    assert torch.equal(log_prob, torch.log_softmax(logits, -1).gather(-1, index[:, None])[:, 0])


def test_one_hot_log_prob_is_finite_with_a_masked_action():
    dist = OneHotCategorical(logits=torch.tensor([[0.0, 0.0, -float("inf")]]))
    for action in (torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[True, False, False]])):
        torch.testing.assert_close(dist.log_prob(action), -torch.log(torch.tensor([2.0])))
