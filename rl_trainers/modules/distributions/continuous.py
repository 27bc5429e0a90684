"""Continuous action distributions: ``IndependentNormal``, ``TanhNormal``, ``Delta`` and
``TanhDelta`` (torchrl's ``torchrl.modules.distributions.continuous``).

Each treats the last dimension(s) as the event: ``log_prob`` and ``entropy`` return ``[*B]``,
and ``log_prob`` broadcasts the value against the parameters, so samples with leading sample
dims (``log_prob(d.sample((n,)))``) give ``[n, *B]``. ``TruncatedNormal`` (in
:mod:`rl_trainers.modules.distributions.truncated_normal`) is importable from here too, as
in torchrl.
"""

from __future__ import annotations

import math
from builtins import min as min_

import torch
import torch.nn.functional as F

from rl_trainers.modules.distributions.truncated_normal import TruncatedNormal
from rl_trainers.modules.distributions.utils import _HALF_LOG_2PI, _as_tensor

__all__ = [
    "IndependentNormal",
    "TanhNormal",
    "TruncatedNormal",
    "Delta",
    "TanhDelta",
]

_LOG2 = math.log(2.0)


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
        # checked on real values only: traced (torch.export, torch.compile), the bounds
        # are symbolic and a data-dependent branch cannot be traced
        if (
            torch.is_tensor(low)
            and low.numel() > 1
            and not torch.compiler.is_compiling()
            and not (low < high).all()
        ):
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
