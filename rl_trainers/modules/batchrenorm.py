"""Batch renormalisation (Ioffe 2017), torchrl's ``BatchRenorm1d`` (CrossQ's critics).

In training mode a batch ``x`` is normalised with its own statistics and corrected towards
the running ones: with ``mu_B, sigma_B`` the batch mean and (biased) standard deviation,
``mu, sigma`` the running ones and ``w`` the warm-up factor,

* ``r = clamp(sigma_B / sigma, 1 / max_r, max_r)``, ``d = clamp((mu_B - mu) / sigma, -max_d,
  max_d)`` (no gradient), then ``r = 1 + w * (r - 1)``, ``d = w * d``;
* ``y = weight * ((x - mu_B) / sigma_B * r + d) + bias``;
* ``mu += momentum * (mu_B - mu)``, ``var += momentum * (var_B_unbiased - var)``.

``w`` is 0 during the first ``warmup_steps`` training batches and 1 afterwards (plain batch
norm, then batch renorm), or ``batches / warmup_steps`` (capped at 1) with ``smooth``. In eval
mode ``y = weight * (x - mu) / sigma + bias``. Written with tensor operations only, so a
critic ensemble can run its copies through ``torch.func.vmap``.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["BatchRenorm1d"]


class BatchRenorm1d(nn.Module):
    """Batch renormalisation over the features of dim 1 (``[N, C]`` or ``[N, C, L]``).

    Args:
        num_features: ``C``.

    Keyword Args:
        momentum: running-statistics update rate (0.01).
        eps: added to the variances (1e-5).
        max_r, max_d: bounds of the corrections ``r`` and ``d`` (3 and 5).
        warmup_steps: training batches of plain batch norm before the corrections apply
            (10000).
        smooth: ramp the corrections in linearly over the warm-up instead.
    """

    def __init__(
        self,
        num_features: int,
        *,
        momentum: float = 0.01,
        eps: float = 1e-5,
        max_r: float = 3.0,
        max_d: float = 5.0,
        warmup_steps: int = 10000,
        smooth: bool = False,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps
        self.max_r = max_r
        self.max_d = max_d
        self.warmup_steps = warmup_steps
        self.smooth = smooth
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, momentum={self.momentum}, eps={self.eps}, "
            f"max_r={self.max_r}, max_d={self.max_d}, warmup_steps={self.warmup_steps}, "
            f"smooth={self.smooth}"
        )

    def _warmup_factor(self) -> torch.Tensor:
        steps = self.num_batches_tracked.to(self.running_mean.dtype)
        if self.warmup_steps <= 0:
            return torch.ones_like(steps)
        if self.smooth:
            return (steps / self.warmup_steps).clamp(max=1.0)
        return (steps >= self.warmup_steps).to(steps.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2:
            raise ValueError(f"BatchRenorm1d expects a 2D (or more) tensor, got {x.dim()}D")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchRenorm1d({self.num_features}) got {x.shape[1]} features (dim 1)"
            )
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        running_std = (self.running_var + self.eps).sqrt()
        if not self.training:
            y = (x - self.running_mean.view(shape)) / running_std.view(shape)
            return self.weight.view(shape) * y + self.bias.view(shape)
        dims = [i for i in range(x.dim()) if i != 1]
        count = x.numel() // x.shape[1]
        if count < 2:
            raise ValueError("BatchRenorm1d needs more than one value per feature in training")
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False)
        std = (var + self.eps).sqrt()
        w = self._warmup_factor()
        with torch.no_grad():
            r = (std / running_std).clamp(1 / self.max_r, self.max_r)
            d = ((mean - self.running_mean) / running_std).clamp(-self.max_d, self.max_d)
            r = 1 + w * (r - 1)
            d = w * d
        y = (x - mean.view(shape)) / std.view(shape) * r.view(shape) + d.view(shape)
        with torch.no_grad():
            self.running_mean.add_(self.momentum * (mean.detach() - self.running_mean))
            unbiased = var.detach() * count / (count - 1)
            self.running_var.add_(self.momentum * (unbiased - self.running_var))
            self.num_batches_tracked.add_(1)
        return self.weight.view(shape) * y + self.bias.view(shape)
