"""Small helpers shared by the distributions of :mod:`rl_trainers.modules.distributions`."""

from __future__ import annotations

import math

import torch

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _as_tensor(value, like: torch.Tensor) -> torch.Tensor:
    """``value`` (a number or tensor) as a tensor of ``like``'s dtype and device."""
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)
