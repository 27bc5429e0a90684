"""``log_prob`` of values with leading sample dims (``d.log_prob(d.sample((n,)))``), and
broadcasting of the value against the batch shape as ``torch.distributions`` does."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from rl_trainers.modules.distributions import (
    Categorical,
    Delta,
    IndependentNormal,
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    OneHotOrdinal,
    Ordinal,
    TanhDelta,
    TanhNormal,
    TruncatedNormal,
)

SAMPLE_SHAPES = [(), (5,), (2, 5)]
BATCH_SHAPES = [(4,), (2, 3)]
N = 6


def _logits(batch_shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*batch_shape, N, generator=gen, dtype=torch.float64)


# ---------------------------------------------------------------------------- categorical


@pytest.mark.parametrize("batch_shape", BATCH_SHAPES)
@pytest.mark.parametrize("sample_shape", SAMPLE_SHAPES)
def test_categorical_log_prob_of_samples_matches_torch(sample_shape, batch_shape):
    torch.manual_seed(0)
    logits = _logits(batch_shape)
    dist, ref = Categorical(logits=logits), D.Categorical(logits=logits)
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, *batch_shape)
    assert value.dtype == torch.int64
    log_prob = dist.log_prob(value)
    assert log_prob.shape == ref.log_prob(value).shape == (*sample_shape, *batch_shape)
    torch.testing.assert_close(log_prob, ref.log_prob(value))


@pytest.mark.parametrize("batch_shape", BATCH_SHAPES)
@pytest.mark.parametrize("sample_shape", SAMPLE_SHAPES)
def test_one_hot_categorical_log_prob_of_samples_matches_torch(sample_shape, batch_shape):
    torch.manual_seed(0)
    logits = _logits(batch_shape)
    dist, ref = OneHotCategorical(logits=logits), D.OneHotCategorical(logits=logits)
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, *batch_shape, N)
    assert ((value == 0) | (value == 1)).all() and (value.sum(-1) == 1).all()
    log_prob = dist.log_prob(value)
    assert log_prob.shape == (*sample_shape, *batch_shape)
    torch.testing.assert_close(log_prob, ref.log_prob(value))
    # bool one-hot vectors too
    torch.testing.assert_close(dist.log_prob(value.bool()), log_prob)


@pytest.mark.parametrize("sample_shape", [(5,), (2, 5)])
def test_categorical_log_prob_gradient_with_sample_dims_matches_torch(sample_shape):
    torch.manual_seed(0)
    logits = _logits((3,)).requires_grad_()
    ref_logits = logits.detach().clone().requires_grad_()
    dist = Categorical(logits=logits)
    value = dist.sample(sample_shape)
    weights = torch.randn(*sample_shape, 3, dtype=torch.float64)
    (dist.log_prob(value) * weights).sum().backward()
    (D.Categorical(logits=ref_logits).log_prob(value) * weights).sum().backward()
    torch.testing.assert_close(logits.grad, ref_logits.grad)


# value shape, batch shape: broadcast as torch.distributions.Categorical
BROADCASTS = [
    ((4,), (4,)),  # a [B] value against batch [B] (the fast path)
    ((3,), (2, 3)),  # a [B] value against batch [A, B]
    ((2, 1), (2, 3)),  # a [A, 1] value against batch [A, B]
    ((1,), (4,)),
    ((), (4,)),
    ((5, 1, 3), (2, 3)),
]


@pytest.mark.parametrize(("value_shape", "batch_shape"), BROADCASTS)
def test_categorical_log_prob_broadcasts_value_against_batch(value_shape, batch_shape):
    logits = _logits(batch_shape)
    value = torch.randint(N, value_shape, generator=torch.Generator().manual_seed(1))
    dist, ref = Categorical(logits=logits), D.Categorical(logits=logits)
    expected = ref.log_prob(value)
    assert expected.shape == torch.broadcast_shapes(value_shape, batch_shape)
    torch.testing.assert_close(dist.log_prob(value), expected)
    one_hot = torch.nn.functional.one_hot(value, N).to(logits.dtype)
    torch.testing.assert_close(
        OneHotCategorical(logits=logits).log_prob(one_hot),
        D.OneHotCategorical(logits=logits).log_prob(one_hot),
    )


def test_same_shape_log_prob_takes_the_fast_path(monkeypatch):
    """Values shaped like the batch (acting, the PPO loss) are read by one ``gather``."""

    def fail(self, index):
        raise AssertionError("the broadcasting path ran for a value of the batch's shape")

    monkeypatch.setattr(Categorical, "_broadcast_index_log_prob", fail)
    logits = _logits((2, 3))
    dist, ref = Categorical(logits=logits), D.Categorical(logits=logits)
    value = dist.sample()
    torch.testing.assert_close(dist.log_prob(value), ref.log_prob(value))
    action, log_prob = dist.sample_and_log_prob()
    torch.testing.assert_close(log_prob, ref.log_prob(action))
    one_hot, one_hot_ref = OneHotCategorical(logits=logits), D.OneHotCategorical(logits=logits)
    value = one_hot.sample()
    torch.testing.assert_close(one_hot.log_prob(value), one_hot_ref.log_prob(value))
    action, log_prob = one_hot.sample_and_log_prob()
    torch.testing.assert_close(log_prob, one_hot_ref.log_prob(action))


@pytest.mark.parametrize("batch_shape", BATCH_SHAPES)
def test_entropy_mode_and_sample_shapes_are_unaffected(batch_shape):
    logits = _logits(batch_shape)
    dist, ref = Categorical(logits=logits), D.Categorical(logits=logits)
    torch.testing.assert_close(dist.entropy(), ref.entropy())
    torch.testing.assert_close(dist.mode, ref.mode)
    one_hot = OneHotCategorical(logits=logits)
    torch.testing.assert_close(one_hot.entropy(), ref.entropy())
    torch.testing.assert_close(
        one_hot.mode, D.OneHotCategorical(logits=logits).mode.to(one_hot.mode.dtype)
    )
    assert dist.sample().shape == batch_shape
    assert dist.sample((7,)).shape == (7, *batch_shape)
    assert one_hot.sample((7,)).shape == (7, *batch_shape, N)
    action, log_prob = dist.sample_and_log_prob()
    assert action.shape == log_prob.shape == batch_shape


# ---------------------------------------------------------------------------- masked, ordinal


def _mask(batch_shape):
    gen = torch.Generator().manual_seed(2)
    mask = torch.rand(*batch_shape, N, generator=gen) < 0.5
    mask[..., 0] = True  # at least one allowed action
    return mask


@pytest.mark.parametrize("sample_shape", [(5,), (2, 5)])
def test_masked_categorical_log_prob_with_sample_dims(sample_shape):
    torch.manual_seed(0)
    batch_shape = (2, 3)
    logits, mask = _logits(batch_shape), _mask(batch_shape)
    dist = MaskedCategorical(logits=logits, mask=mask)
    ref = D.Categorical(logits=logits.masked_fill(~mask, float("-inf")))
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, *batch_shape)
    assert mask.expand(*sample_shape, *batch_shape, N).gather(-1, value.unsqueeze(-1)).all()
    log_prob = dist.log_prob(value)
    assert torch.isfinite(log_prob).all()
    torch.testing.assert_close(log_prob, ref.log_prob(value))
    # every action, as a leading dim: -inf exactly at the masked ones
    every = torch.arange(N).reshape(N, 1, 1).expand(N, *batch_shape)
    every_log_prob = dist.log_prob(every)
    assert every_log_prob.shape == (N, *batch_shape)
    masked = ~mask.movedim(-1, 0)
    assert torch.isneginf(every_log_prob[masked]).all()
    assert torch.isfinite(every_log_prob[~masked]).all()
    torch.testing.assert_close(every_log_prob[~masked], ref.log_prob(every)[~masked])


@pytest.mark.parametrize("sample_shape", [(5,), (2, 5)])
def test_masked_one_hot_categorical_log_prob_with_sample_dims(sample_shape):
    torch.manual_seed(0)
    batch_shape = (2, 3)
    logits, mask = _logits(batch_shape), _mask(batch_shape)
    dist = MaskedOneHotCategorical(logits=logits, mask=mask)
    ref = D.OneHotCategorical(logits=logits.masked_fill(~mask, float("-inf")))
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, *batch_shape, N)
    assert not (value.bool() & ~mask).any()
    log_prob = dist.log_prob(value)
    assert torch.isfinite(log_prob).all()
    torch.testing.assert_close(log_prob, ref.log_prob(value))
    every = torch.eye(N, dtype=logits.dtype).reshape(N, 1, 1, N).expand(N, *batch_shape, N)
    every_log_prob = dist.log_prob(every)
    masked = ~mask.movedim(-1, 0)
    assert torch.isneginf(every_log_prob[masked]).all()
    assert torch.isfinite(every_log_prob[~masked]).all()


@pytest.mark.parametrize("sample_shape", SAMPLE_SHAPES)
def test_ordinal_log_prob_with_sample_dims_matches_torch(sample_shape):
    torch.manual_seed(0)
    scores = _logits((4,))
    dist = Ordinal(scores)
    ref = D.Categorical(logits=dist.logits)
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, 4)
    torch.testing.assert_close(dist.log_prob(value), ref.log_prob(value))
    one_hot = OneHotOrdinal(scores)
    value = one_hot.sample(sample_shape)
    assert value.shape == (*sample_shape, 4, N)
    torch.testing.assert_close(
        one_hot.log_prob(value), D.OneHotCategorical(logits=one_hot.logits).log_prob(value)
    )


# ---------------------------------------------------------------------------- continuous


def _continuous(name, loc=None):
    gen = torch.Generator().manual_seed(3)
    if loc is None:
        loc = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    scale = torch.rand(4, 3, generator=gen, dtype=torch.float64) + 0.2
    low = torch.tensor([-2.0, 0.0, -1.0], dtype=torch.float64)
    high = torch.tensor([2.0, 1.0, 3.0], dtype=torch.float64)
    return {
        "IndependentNormal": lambda: IndependentNormal(loc, scale),
        "TanhNormal": lambda: TanhNormal(loc, scale, low=low, high=high),
        "TruncatedNormal": lambda: TruncatedNormal(loc, scale, low=low, high=high),
        "Delta": lambda: Delta(loc),
        "TanhDelta": lambda: TanhDelta(loc, low=low, high=high),
    }[name]()


CONTINUOUS = ["IndependentNormal", "TanhNormal", "TruncatedNormal", "Delta", "TanhDelta"]


@pytest.mark.parametrize("sample_shape", SAMPLE_SHAPES)
@pytest.mark.parametrize("name", CONTINUOUS)
def test_continuous_log_prob_with_sample_dims_equals_the_loop(name, sample_shape):
    torch.manual_seed(0)
    dist = _continuous(name)
    value = dist.sample(sample_shape)
    assert value.shape == (*sample_shape, 4, 3)
    log_prob = dist.log_prob(value)
    assert log_prob.shape == (*sample_shape, 4)
    flat = value.reshape(-1, 4, 3)
    one_by_one = torch.stack([dist.log_prob(v) for v in flat]).reshape(*sample_shape, 4)
    torch.testing.assert_close(log_prob, one_by_one)
    if name.endswith("Delta"):
        assert torch.isposinf(log_prob).all()
    else:
        assert torch.isfinite(log_prob).all()


@pytest.mark.parametrize("name", ["IndependentNormal", "TanhNormal", "TruncatedNormal"])
def test_continuous_rsample_with_sample_dims_keeps_gradients(name):
    loc = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    dist = _continuous(name, loc)
    value = dist.rsample((5,))
    assert value.shape == (5, 4, 3) and value.requires_grad
    (value.sum() + dist.log_prob(value).sum()).backward()
    assert loc.grad is not None and torch.isfinite(loc.grad).all()
