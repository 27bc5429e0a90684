"""Lean action distributions for actors and losses.

These avoid ``torch.distributions`` (argument validation, broadcasting, transform stacks) in
the hot paths of acting and of the losses. Each distribution treats the last dimension as the
event: ``log_prob`` and ``entropy`` return ``[*B]``.

Every class exposes ``sample()``, ``log_prob(value)``, ``entropy()``, ``mode``, ``mean`` and
``deterministic_sample``; the reparameterised ones also have ``rsample()`` and
``rsample_and_log_prob()``. ``TruncatedNormal`` lives in
:mod:`rl_trainers.modules.truncated_normal` (its tail functions) and is re-exported here.
"""

from __future__ import annotations

import math
from builtins import min as min_

import torch
import torch.nn.functional as F

from rl_trainers.modules.truncated_normal import TruncatedNormal

__all__ = [
    "TanhNormal",
    "TruncatedNormal",
    "IndependentNormal",
    "Categorical",
    "OneHotCategorical",
    "Delta",
    "TanhDelta",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "Ordinal",
    "OneHotOrdinal",
]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG2 = math.log(2.0)


def _as_tensor(value, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


class IndependentNormal:
    """Diagonal Gaussian over the trailing ``event_dim`` dimensions (the last one by default).

    Args:
        loc: mean ``[*B, d]``.
        scale: standard deviation ``[*B, d]`` (positive).
        upscale: scale of the ``tanh_loc`` squashing.
        tanh_loc: squash ``loc`` with ``upscale * tanh(loc / upscale)`` first.
        event_dim: number of trailing dims summed in ``log_prob``/``entropy``.
    """

    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor,
        scale: torch.Tensor,
        upscale: float = 5.0,
        tanh_loc: bool = False,
        event_dim: int = 1,
    ) -> None:
        if tanh_loc:
            loc = upscale * torch.tanh(loc / upscale)
        self.loc = loc
        self.scale = scale
        self.event_dim = event_dim

    @property
    def batch_shape(self) -> torch.Size:
        return self.loc.shape[: self.loc.dim() - self.event_dim]

    def _sum_event(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(tuple(range(-self.event_dim, 0))) if self.event_dim else x

    @property
    def mode(self) -> torch.Tensor:
        return self.loc

    mean = mode
    deterministic_sample = mode

    def rsample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        shape = torch.Size(sample_shape) + self.loc.shape
        return self.loc + self.scale * torch.randn(
            shape, dtype=self.loc.dtype, device=self.loc.device
        )

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        z = (value - self.loc) / self.scale
        return self._sum_event(-0.5 * z.pow(2) - self.scale.log() - _HALF_LOG_2PI)

    def rsample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        noise = torch.randn_like(self.loc)
        value = self.loc + self.scale * noise
        log_prob = self._sum_event(-0.5 * noise.pow(2) - self.scale.log() - _HALF_LOG_2PI)
        return value, log_prob

    def entropy(self) -> torch.Tensor:
        return self._sum_event((0.5 + _HALF_LOG_2PI + self.scale.log()).expand_as(self.loc))


class TanhNormal:
    """A Gaussian squashed by ``tanh`` and affinely mapped onto ``[low, high]``.

    ``u ~ N(loc, scale)``, ``action = mid + half * tanh(u)`` with ``mid = (high + low) / 2`` and
    ``half = (high - low) / 2``. The log-density uses the stable identity
    ``log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))``.

    The parameters are in torchrl's order (``loc, scale, upscale, low, high, event_dims,
    tanh_loc, safe_tanh``).

    Args:
        loc: pre-squash mean ``[*B, d]``.
        scale: pre-squash standard deviation ``[*B, d]``.
        upscale: scale of the ``tanh_loc`` squashing.
        low: lower bound of the action (scalar or ``[d]``), default -1.
        high: upper bound of the action (scalar or ``[d]``), default 1.
        event_dims: number of trailing event dims summed in ``log_prob`` (None: 1, or 0
            for a scalar ``loc``).
        tanh_loc: squash ``loc`` with ``upscale * tanh(loc / upscale)`` first (keeps it bounded).
        min, max: torchrl's older names of ``low`` and ``high``.
        safe_tanh: torchrl's option; ``log_prob`` always clamps just inside the bounds.
    """

    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor,
        scale: torch.Tensor,
        upscale: float = 5.0,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        event_dims: int | None = None,
        tanh_loc: bool = False,
        safe_tanh: bool = True,
        *,
        min: torch.Tensor | float | None = None,  # noqa: A002 (torchrl's old names)
        max: torch.Tensor | float | None = None,  # noqa: A002
    ) -> None:
        if event_dims is None:
            event_dims = min_(1, loc.dim())
        if min is not None:
            low = min
        if max is not None:
            high = max
        if tanh_loc:
            loc = upscale * torch.tanh(loc / upscale)
        self.loc = loc
        self.scale = scale
        low = _as_tensor(low, loc)
        high = _as_tensor(high, loc)
        if torch.is_tensor(low) and low.numel() > 1 and not (low < high).all():
            raise ValueError(f"TanhNormal needs low < high, got low={low} high={high}")
        self.low = low
        self.high = high
        self._mid = (high + low) / 2
        self._half = (high - low) / 2
        self.event_dims = event_dims
        eps = torch.finfo(loc.dtype).eps
        self._clamp = 1.0 - 2 * eps if loc.dtype == torch.float64 else 1.0 - 1e-6

    @property
    def batch_shape(self) -> torch.Size:
        return self.loc.shape[: self.loc.dim() - self.event_dims]

    def _sum_event(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(tuple(range(-self.event_dims, 0))) if self.event_dims else x

    def _log_det(self, u: torch.Tensor) -> torch.Tensor:
        # log |d action / d u| = log(half) + log(1 - tanh(u)^2)
        return 2.0 * (_LOG2 - u - F.softplus(-2.0 * u)) + self._half.log()

    @property
    def mode(self) -> torch.Tensor:
        """The squashed location ``mid + half * tanh(loc)`` (used for deterministic acting)."""
        return self._mid + self._half * torch.tanh(self.loc)

    deterministic_sample = mode

    @property
    def mean(self) -> torch.Tensor:
        """Approximated by :attr:`mode` (the exact mean has no closed form)."""
        return self.mode

    def _base_log_prob(self, noise: torch.Tensor) -> torch.Tensor:
        return -0.5 * noise.pow(2) - self.scale.log() - _HALF_LOG_2PI

    def rsample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        shape = torch.Size(sample_shape) + self.loc.shape
        u = self.loc + self.scale * torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self._mid + self._half * torch.tanh(u)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Draws a reparameterised action and its log-density in one pass (no atanh)."""
        _, action, log_prob = self.from_noise(torch.randn_like(self.loc))
        return action, log_prob

    def from_noise(self, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(tanh(u), action, log_prob)`` for ``u = loc + scale * noise`` and a standard
        normal ``noise`` shaped like ``loc`` (what :meth:`rsample_and_log_prob` draws)."""
        u = self.loc + self.scale * noise
        squashed = torch.tanh(u)
        action = self._mid + self._half * squashed
        log_prob = self._sum_event(self._base_log_prob(noise) - self._log_det(u))
        return squashed, action, log_prob

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return self.rsample_and_log_prob()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log-density of actions in ``[low, high]`` (clamped just inside the bounds)."""
        x = ((value - self._mid) / self._half).clamp(-self._clamp, self._clamp)
        u = torch.atanh(x)
        noise = (u - self.loc) / self.scale
        return self._sum_event(self._base_log_prob(noise) - self._log_det(u))

    def entropy(self) -> torch.Tensor:
        """One-sample Monte-Carlo estimate ``-log p(a)`` (no closed form exists)."""
        return -self.rsample_and_log_prob()[1]


class Categorical:
    """Categorical over the last dim of ``logits``; samples are int64 indices ``[*B]``.

    Args:
        logits: unnormalised log-probabilities ``[*B, n]``.
        probs: probabilities instead of logits.
    """

    has_rsample = False

    def __init__(
        self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None
    ) -> None:
        if (logits is None) == (probs is None):
            raise ValueError("Categorical needs exactly one of logits or probs")
        if logits is None:
            logits = probs.clamp_min(torch.finfo(probs.dtype).tiny).log()
        self.logits = logits
        self._logp: torch.Tensor | None = None

    @property
    def batch_shape(self) -> torch.Size:
        return self.logits.shape[:-1]

    @property
    def log_probs(self) -> torch.Tensor:
        """Normalised log-probabilities ``[*B, n]``."""
        if self._logp is None:
            self._logp = torch.log_softmax(self.logits, -1)
        return self._logp

    @property
    def probs(self) -> torch.Tensor:
        return self.log_probs.exp()

    def _sample_index(
        self, sample_shape: torch.Size = torch.Size(), keepdim: bool = False
    ) -> torch.Tensor:
        """Gumbel-max sampling, with the Gumbel noise drawn as ``-log(E)``, ``E ~ Exp(1)``
        (four small ops; ``-log(-log(U))`` from uniforms takes six). ``keepdim`` keeps the
        sampled dim as size 1 (what ``gather`` and ``scatter_`` take)."""
        if torch.is_grad_enabled():  # acting runs without grad: skip the context there
            with torch.no_grad():
                return self._sample_index(sample_shape, keepdim)
        logits = self.logits
        shape = torch.Size(sample_shape) + logits.shape
        exp_noise = torch.empty(shape, dtype=logits.dtype, device=logits.device)
        # E == 0 would give an infinite Gumbel draw, and nan against a -inf logit
        exp_noise.exponential_().clamp_min_(torch.finfo(logits.dtype).tiny)
        return (logits - exp_noise.log_()).argmax(-1, keepdim=keepdim)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self._sample_index(sample_shape)

    def _index_log_prob(self, index: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        """Log-probabilities at ``index`` (``[*B]``, or ``[*B, 1]`` with ``keepdim``)."""
        index = index if keepdim else index.unsqueeze(-1)
        return self.log_probs.gather(-1, index).squeeze(-1)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A sample and its log-probability, read from the index (no one-hot round trip)."""
        index = self._sample_index(keepdim=True)
        return index.squeeze(-1), self._index_log_prob(index, keepdim=True)

    @property
    def mode(self) -> torch.Tensor:
        return self.logits.argmax(-1)

    deterministic_sample = mode

    @property
    def mean(self) -> torch.Tensor:
        raise NotImplementedError("a categorical distribution has no mean; use mode")

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return self._index_log_prob(value.long())

    def entropy(self) -> torch.Tensor:
        logp = self.log_probs
        return -(logp.exp() * logp).sum(-1)


class OneHotCategorical(Categorical):
    """Categorical whose samples are one-hot vectors ``[*B, n]`` (float unless ``dtype`` is set)."""

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(logits=logits, probs=probs)
        self.dtype = dtype or self.logits.dtype

    def _one_hot(self, index: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        """One-hot vectors of ``index`` (``[*B]``, or ``[*B, 1]`` with ``keepdim``)."""
        index = index if keepdim else index.unsqueeze(-1)
        shape = (*index.shape[:-1], self.logits.shape[-1])
        hot = torch.zeros(shape, dtype=self.dtype, device=index.device)
        return hot.scatter_(-1, index, 1)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self._one_hot(self._sample_index(sample_shape, keepdim=True), keepdim=True)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A one-hot sample and its log-probability, read from the sampled index."""
        index = self._sample_index(keepdim=True)
        return self._one_hot(index, keepdim=True), self._index_log_prob(index, keepdim=True)

    @property
    def mode(self) -> torch.Tensor:
        return self._one_hot(self.logits.argmax(-1))

    deterministic_sample = mode

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        # the hot index, not a product with the one-hot vector: a masked action (-inf logit)
        # would turn that product into nan
        return self._index_log_prob(one_hot_index(value))


class _Masked:
    """Masking shared by the masked categoricals: disallowed actions get ``neg_inf`` logits
    (probability 0, never sampled, log-probability ``-inf``)."""

    def _masked_logits(self, logits, probs, mask, indices, neg_inf, padding_value):
        if mask is None:
            raise ValueError("a masked categorical needs mask= (True for allowed actions)")
        if indices is not None or padding_value is not None:
            raise NotImplementedError("indices= / padding_value= (sparse masks) are not supported")
        if (logits is None) == (probs is None):
            raise ValueError("a masked categorical needs exactly one of logits or probs")
        if logits is None:
            logits = probs.clamp_min(torch.finfo(probs.dtype).tiny).log()
        self.mask = mask.bool()
        return logits.masked_fill(~self.mask, neg_inf)

    def entropy(self) -> torch.Tensor:
        logp = self.log_probs
        return -torch.where(self.mask, logp.exp() * logp, 0.0).sum(-1)


class MaskedCategorical(_Masked, Categorical):
    """Categorical over the allowed actions only (torchrl's ``MaskedCategorical``), e.g.
    ``ProbabilisticActor(..., in_keys={"logits": "logits", "mask": "action_mask"},
    distribution_class=MaskedCategorical)``.

    Args:
        logits: unnormalised log-probabilities ``[*B, n]``.
        probs: probabilities instead of logits.
        mask: bool ``[*B, n]``, True for the allowed actions.
        neg_inf: logit given to the masked actions.
        indices, padding_value, use_cross_entropy, padding_side: torchrl's sparse-mask
            options (not supported, or no effect).
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        use_cross_entropy: bool = True,
        padding_side: str = "left",
    ) -> None:
        logits = self._masked_logits(logits, probs, mask, indices, neg_inf, padding_value)
        Categorical.__init__(self, logits=logits)


class MaskedOneHotCategorical(_Masked, OneHotCategorical):
    """:class:`MaskedCategorical` with one-hot samples (torchrl's ``MaskedOneHotCategorical``).

    Args: as :class:`MaskedCategorical`, plus ``dtype`` of the samples.
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        use_cross_entropy: bool = True,
        padding_side: str = "left",
        dtype: torch.dtype | None = None,
    ) -> None:
        logits = self._masked_logits(logits, probs, mask, indices, neg_inf, padding_value)
        OneHotCategorical.__init__(self, logits=logits, dtype=dtype)


def one_hot_index(value: torch.Tensor) -> torch.Tensor:
    """The index of the hot entry of one-hot vectors ``[*B, n]`` (bool, int or float)."""
    if value.dtype == torch.bool:
        value = value.to(torch.uint8)  # argmax has no bool kernel
    return value.argmax(-1)


def _ordinal_logits(scores: torch.Tensor) -> torch.Tensor:
    """Logits of an ordinal distribution over ``n`` ordered classes from ``scores [*B, n]``
    (Tang & Agrawal 2020, eq. 4): class ``k`` gets ``sum_{j <= k} log sigmoid(s_j) +
    sum_{j > k} log(1 - sigmoid(s_j))``, so neighbouring classes share most of their terms."""
    log_up_to = F.logsigmoid(scores).cumsum(-1)
    log_not = F.logsigmoid(-scores)  # log(1 - sigmoid(s))
    log_after = log_not.flip(-1).cumsum(-1).flip(-1) - log_not
    return log_up_to + log_after


class Ordinal(Categorical):
    """A categorical over ordered classes (torchrl's ``Ordinal``): its logits are
    built from ``scores`` by :func:`_ordinal_logits`, samples are int64 indices ``[*B]``.

    Args:
        scores: ``[*B, n]``, typically a network's output.
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=_ordinal_logits(scores))


class OneHotOrdinal(OneHotCategorical):
    """:class:`Ordinal` with one-hot samples ``[*B, n]`` (torchrl's ``OneHotOrdinal``).

    Args:
        scores: ``[*B, n]``, typically a network's output.
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=_ordinal_logits(scores))


class Delta:
    """A point mass at ``param`` (deterministic policies inside a probabilistic actor).

    As torchrl's: ``log_prob`` is ``+inf`` where a value matches ``param`` (within
    ``atol + rtol * |param|`` on every event entry) and ``-inf`` elsewhere.

    Args:
        param: the point ``[*B, *event]``.
        atol: absolute tolerance of the match.
        rtol: relative tolerance of the match.
        batch_shape: default ``param.shape[:-1]``.
        event_shape: default ``param.shape[-1:]``.
    """

    has_rsample = True

    def __init__(
        self,
        param: torch.Tensor,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        batch_shape: torch.Size | None = None,
        event_shape: torch.Size | None = None,
    ) -> None:
        self.param = param
        self.atol = atol
        self.rtol = rtol
        if batch_shape is None and event_shape is None:
            batch_shape, event_shape = param.shape[:-1], param.shape[-1:]
        elif event_shape is None:
            event_shape = param.shape[len(batch_shape) :]
        elif batch_shape is None:
            batch_shape = param.shape[: param.dim() - len(event_shape)]
        self.batch_shape = torch.Size(batch_shape)
        self.event_shape = torch.Size(event_shape)

    @property
    def mode(self) -> torch.Tensor:
        return self.param

    @property
    def mean(self) -> torch.Tensor:
        return self.mode

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mode

    def rsample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        point = self.mode
        return point.expand(torch.Size(sample_shape) + point.shape)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self.rsample(sample_shape).detach()

    def rsample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        value = self.rsample()
        return value, self.log_prob(value)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        value = self.sample()
        return value, self.log_prob(value)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        point = self.mode.detach()
        close = (value - point).abs() <= self.atol + self.rtol * point.abs()
        if self.event_shape:
            close = close.flatten(-len(self.event_shape)).all(-1)
        inf = torch.tensor(float("inf"), dtype=value.dtype, device=value.device)
        return torch.where(close, inf, -inf)

    def entropy(self) -> torch.Tensor:
        return torch.zeros(self.batch_shape, dtype=self.param.dtype, device=self.param.device)


class TanhDelta(Delta):
    """A point mass at ``low + (high - low) * (tanh(param) + 1) / 2`` (bounded deterministic
    actions from a probabilistic actor, e.g. DDPG's ``ProbabilisticActor(...,
    distribution_class=TanhDelta, distribution_kwargs={"low": spec.low, "high": spec.high})``).

    Args:
        param: the pre-squash point ``[*B, *event]``.
        low: lower bound (scalar or tensor), default -1.
        high: upper bound (scalar or tensor), default 1.
        event_dims: number of trailing event dims (1).
        atol, rtol: tolerances of ``log_prob``'s match (see :class:`Delta`).
        batch_shape, event_shape: as in :class:`Delta`.
        min, max: torchrl's older names of ``low`` and ``high``.
    """

    def __init__(
        self,
        param: torch.Tensor,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        event_dims: int = 1,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        batch_shape: torch.Size | None = None,
        event_shape: torch.Size | None = None,
        *,
        min: torch.Tensor | float | None = None,  # noqa: A002 (torchrl's old names)
        max: torch.Tensor | float | None = None,  # noqa: A002
    ) -> None:
        low = low if min is None else min
        high = high if max is None else max
        low = _as_tensor(low, param)
        high = _as_tensor(high, param)
        if not (low < high).all():
            raise ValueError(f"TanhDelta needs low < high, got low={low} high={high}")
        if batch_shape is None and event_shape is None:
            split = param.dim() - event_dims
            batch_shape, event_shape = param.shape[:split], param.shape[split:]
        super().__init__(param, atol, rtol, batch_shape, event_shape)
        self.low = low
        self.high = high

    @property
    def mode(self) -> torch.Tensor:
        mid = (self.high + self.low) / 2
        half = (self.high - self.low) / 2
        return mid + half * torch.tanh(self.param)
