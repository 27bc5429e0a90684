"""``TruncatedNormal``: a diagonal Gaussian restricted to ``[low, high]`` (torchrl's
``TruncatedNormal``), with the standard-normal tail functions it needs.

Re-exported by :mod:`rl_trainers.modules.distributions` (and its ``continuous`` module);
same interface as the other distributions there.
"""

from __future__ import annotations

import math

import torch
from torch.special import erfcx

from rl_trainers.modules.distributions.utils import _HALF_LOG_2PI, _as_tensor

__all__ = ["TruncatedNormal"]

_SQRT2 = math.sqrt(2.0)


def _normal_log_cdf_plus(x: torch.Tensor) -> torch.Tensor:
    """``log cdf(x) + min(x, 0)^2 / 2`` of the standard normal, from one ``erfcx``
    (``cdf(-|x|) = erfcx(|x| / sqrt 2) exp(-x^2 / 2) / 2``). In the lower tail ``log cdf`` is
    about ``-x^2 / 2``; without that part the value (about ``-log|x|``) is moderate, so
    differences keep their digits. Derivative: ``mills(x) + min(x, 0)``."""
    lower = x <= 0
    scaled = erfcx(torch.where(lower, -x, x) / _SQRT2) / 2
    upper_tail = scaled * torch.exp(-0.5 * x.pow(2))  # 1 - cdf(x) for x > 0
    return torch.where(lower, scaled.log(), torch.log1p(-upper_tail))


def _normal_mills_ratio(x: torch.Tensor, log_cdf_plus: torch.Tensor) -> torch.Tensor:
    """``pdf(x) / cdf(x)`` of the standard normal, given ``_normal_log_cdf_plus(x)``."""
    return torch.exp(-0.5 * torch.relu(x).pow(2) - _HALF_LOG_2PI - log_cdf_plus)


def _normal_mills_excess(x: torch.Tensor) -> torch.Tensor:
    """``mills(x) + x`` for ``x <= 0``: about ``1 / |x|`` far in the tail, where the two
    terms are about ``|x|``, so below -20 it comes from the asymptotic series
    ``mills(x) = |x| / (1 - s)``, ``s = q - 3 q^2 + 15 q^3 - ...``, ``q = 1 / x^2`` (value and
    gradient keep their digits)."""
    bulk = x.clamp(min=-20.0)
    tail = x.clamp(max=-20.0)
    q = tail.pow(-2)
    s = q * (1 - q * (3 - q * (15 - q * (105 - 945 * q))))
    from_bulk = _normal_mills_ratio(bulk, _normal_log_cdf_plus(bulk)) + bulk
    return torch.where(x < -20.0, -tail * s / (1 - s), from_bulk)


# below this log-probability exp() loses the lower tail: ndtri gives way to Newton's method
_FAR_TAIL_LOG_P = -50.0


class TruncatedNormal:
    """A diagonal Gaussian ``N(loc, scale)`` restricted to ``[low, high]`` and renormalised.

    Samples are reparameterised through the inverse CDF, so gradients reach ``loc`` and
    ``scale``; ``log_prob`` and ``entropy`` are exact and summed over the last (event) dim.

    Numerics: the special functions run in float64 (float32 on mps) and results come back
    in ``loc``'s dtype. The interval is standardised, and mirrored if needed, to ``[a, b]``
    with ``a + b <= 0``: ``b`` faces the Gaussian's centre and is the bound ``near``. Every
    quantity is then taken relative to ``b`` (``log cdf(x) + x^2 / 2``, ``x - b``), so a
    ``loc`` thousands of ``scale`` outside the bounds keeps finite, accurate values and
    gradients, and samples land exactly inside ``[low, high]``.

    As torchrl's: ``mode`` is ``loc`` clamped onto ``[low, high]``, ``mean`` the truncated
    Gaussian's mean and ``deterministic_sample`` (what a non-random interaction acts with)
    the ``mean``; ``log_prob`` is ``-inf`` outside ``[low, high]``.

    Args:
        loc: mean of the untruncated Gaussian ``[*B, d]``.
        scale: its standard deviation ``[*B, d]`` (clamped to at least 1e-6, as torchrl).
        upscale: scale of the ``tanh_loc`` squashing.
        low: lower bound (scalar or tensor broadcasting with ``loc``), default -1.
        high: upper bound (scalar or tensor), default 1.
        tanh_loc: squash ``loc`` with ``upscale * tanh(loc / upscale)`` first.
        min, max: torchrl's older names of ``low`` and ``high``.
    """

    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor,
        scale: torch.Tensor,
        upscale: torch.Tensor | float = 5.0,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        tanh_loc: bool = False,
        *,
        min: torch.Tensor | float | None = None,  # noqa: A002 (torchrl's old names)
        max: torch.Tensor | float | None = None,  # noqa: A002
    ) -> None:
        low = _as_tensor(low if min is None else min, loc)
        high = _as_tensor(high if max is None else max, loc)
        if not (low < high).all():
            raise ValueError(f"TruncatedNormal needs low < high, got low={low} high={high}")
        if tanh_loc:
            loc = upscale * torch.tanh(loc / upscale)
        self.loc, self.scale = loc, scale.clamp_min(1e-6)
        self.low, self.high = low, high

        work = torch.float32 if loc.device.type == "mps" else torch.float64
        loc, scale = self.loc.to(work), self.scale.to(work)
        low, high = low.to(work), high.to(work)
        alpha, beta = (low - loc) / scale, (high - loc) / scale
        mirrored = alpha + beta > 0
        self._sign = torch.where(mirrored, -1.0, 1.0).to(work)
        self._near = torch.where(mirrored, low, high)
        self._a = a = torch.where(mirrored, -beta, alpha)
        self._b = b = torch.where(mirrored, -alpha, beta)
        self._width = (high - low) / scale  # b - a, without the rounding of b and a
        self._loc, self._scale = loc, scale
        self._log_cdf_plus_a = _normal_log_cdf_plus(a)
        self._log_cdf_plus_b = _normal_log_cdf_plus(b)
        # log(cdf(a) / cdf(b)) < 0
        m = b.clamp(max=0)
        a_minus_m = torch.where(b <= 0, -self._width, a)
        log_cdf_ratio = (
            self._log_cdf_plus_a - self._log_cdf_plus_b - 0.5 * a_minus_m * (a_minus_m + 2 * m)
        )
        self._log_cdf_ratio = log_cdf_ratio.clamp(max=-torch.finfo(work).tiny)
        # mass = cdf(b) - cdf(a) = cdf(b) (1 - cdf(a) / cdf(b)), and log(mass) + min(b, 0)^2 / 2
        self._mass_over_cdf_b = -torch.expm1(self._log_cdf_ratio)
        self._log_mass_plus = self._log_cdf_plus_b + self._mass_over_cdf_b.log()

    @property
    def batch_shape(self) -> torch.Size:
        return self._a.shape[:-1]

    @property
    def event_shape(self) -> torch.Size:
        return self._a.shape[-1:]

    @property
    def support(self) -> torch.distributions.constraints.Constraint:
        return torch.distributions.constraints.interval(self.low, self.high)

    def _clamp_to_bounds(self, value: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(value, self.high), self.low)

    def _edge_terms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``pdf(a) / mass`` and ``pdf(b) / mass + min(b, 0)``; the second one is small when
        ``b`` is far in the tail (``pdf(b) / mass`` is about ``-b``), so it is built from
        :func:`_normal_mills_excess` instead of subtracting ``b``."""
        a, b = self._a, self._b
        kept = self._log_cdf_ratio.exp()  # cdf(a) / cdf(b)
        share = self._mass_over_cdf_b
        pdf_a_over_mass = _normal_mills_ratio(a, self._log_cdf_plus_a) * kept / share
        tail = (_normal_mills_excess(b.clamp(max=0)) - b * kept) / share
        bulk = _normal_mills_ratio(b, self._log_cdf_plus_b) / share
        return pdf_a_over_mass, torch.where(b <= 0, tail, bulk)

    def _log_cdf_drop(self, z: torch.Tensor, log_cdf_plus_z: torch.Tensor, step: torch.Tensor):
        """``log cdf(z) - log cdf(b)`` for ``z = b + step <= b``, without cancellation."""
        b = self._b
        m_drop = torch.where(b <= 0, step, z.clamp(max=0))  # min(z, 0) - min(b, 0)
        return log_cdf_plus_z - self._log_cdf_plus_b - 0.5 * m_drop * (m_drop + 2 * b.clamp(max=0))

    @property
    def mode(self) -> torch.Tensor:
        return self._clamp_to_bounds(self.loc.expand(self._a.shape))

    @property
    def mean(self) -> torch.Tensor:
        """``near + sign * scale * (E[z] - b)``, ``E[z] = (pdf(a) - pdf(b)) / mass``."""
        pdf_a_over_mass, pdf_b_over_mass_plus = self._edge_terms()
        # relu, not clamp: no gradient at b = 0, where the terms above already take b's
        from_b = pdf_a_over_mass - pdf_b_over_mass_plus - torch.relu(self._b)
        mean = self._near + self._sign * self._scale * from_b
        return self._clamp_to_bounds(mean.to(self.loc.dtype))

    deterministic_sample = mean

    def entropy(self) -> torch.Tensor:
        """``log(sqrt(2 pi e) scale mass) + (a pdf(a) - b pdf(b)) / (2 mass)``, summed over
        the event dim (grouped so that no two large terms cancel)."""
        pdf_a_over_mass, pdf_b_over_mass_plus = self._edge_terms()
        # (E[z^2] - min(b, 0)^2) / 2
        half_moment = 0.5 * (1 + self._a * pdf_a_over_mass - self._b * pdf_b_over_mass_plus)
        entropy = half_moment + _HALF_LOG_2PI + self._scale.log() + self._log_mass_plus
        return entropy.sum(-1).to(self.loc.dtype)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Exact log-density summed over the event dim; ``-inf`` if any entry is outside
        ``[low, high]``."""
        x = value.to(self._loc.dtype)
        b, m = self._b, self._b.clamp(max=0)
        # z - min(b, 0), with z the standardised (mirrored) value
        from_b = torch.where(b <= 0, x - self._near, x - self._loc)
        from_b = self._sign * from_b / self._scale
        log_density = (
            -0.5 * from_b * (from_b + 2 * m)
            - _HALF_LOG_2PI
            - self._scale.log()
            - self._log_mass_plus
        )
        outside = (value < self.low) | (value > self.high)
        log_density = torch.where(outside, float("-inf"), log_density)
        return log_density.sum(-1).to(self.loc.dtype)

    def _solve_step(self, drop: torch.Tensor) -> torch.Tensor:
        """``step`` in ``[a - b, 0]`` with ``log cdf(b + step) - log cdf(b) = drop`` (no
        gradient): ndtri, or in the far tail (where exp() underflows) Newton's method from
        the tangent at ``b``, left of the root as ``log cdf`` is concave."""
        b, m = self._b, self._b.clamp(max=0)
        log_cdf_z = self._log_cdf_plus_b - 0.5 * m.pow(2) + drop
        step = torch.special.ndtri(log_cdf_z.exp()) - b
        far_tail = log_cdf_z <= _FAR_TAIL_LOG_P
        if far_tail.any():
            newton = drop / _normal_mills_ratio(b, self._log_cdf_plus_b)
            for _ in range(5):
                z = b + newton
                log_cdf_plus_z = _normal_log_cdf_plus(z)
                residual = self._log_cdf_drop(z, log_cdf_plus_z, newton) - drop
                newton = newton - residual / _normal_mills_ratio(z, log_cdf_plus_z)
            step = torch.where(far_tail, newton, step)
        return torch.maximum(step.clamp(max=0), -self._width)

    def rsample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        """Inverse-CDF samples ``z = b + step``, ``cdf(z) = (1 - u) cdf(a) + u cdf(b)`` for
        ``u ~ U(0, 1)``, solved in log space; the gradient is the implicit one,
        ``d step = -d residual / mills(z)``."""
        b = self._b
        work = b.dtype
        u = torch.rand(torch.Size(sample_shape) + b.shape, dtype=work, device=b.device)
        u = u.clamp_min(torch.finfo(work).tiny)
        # log cdf(z) - log cdf(b), in [log(cdf(a) / cdf(b)), 0]; u is the quantile of the
        # value (1 - u that of z when mirrored), so samples move continuously with loc
        log_u, log_1mu = u.log(), torch.log1p(-u)
        mirrored = self._sign < 0
        log_up = torch.where(mirrored, log_1mu, log_u)
        log_down = torch.where(mirrored, log_u, log_1mu)
        drop = torch.logaddexp(log_up, log_down + self._log_cdf_ratio)
        with torch.no_grad():
            step = self._solve_step(drop)
        z = b + step
        log_cdf_plus_z = _normal_log_cdf_plus(z)
        residual = self._log_cdf_drop(z, log_cdf_plus_z, step) - drop
        slope = _normal_mills_ratio(z, log_cdf_plus_z).detach()
        step = step - (residual - residual.detach()) / slope
        value = (self._near + self._sign * self._scale * step).to(self.loc.dtype)
        # rounding may step just outside the bounds: clamp the value, keep the gradient
        return self._clamp_to_bounds(value.detach()) + (value - value.detach())

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        value = self.rsample()
        return value, self.log_prob(value)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return self.rsample_and_log_prob()
