"""``VecNorm``'s running statistics and normalisation in numpy, on views of its buffers.

Replaces ``VecNorm``'s tensor maths (the same float64 operations) on CPU tensors under the
switch ``VECNORM_ON_HOST``: a few microseconds per step where the tensor ops cost ~15x more
in dispatch. ``VecNorm`` decides where it applies (CPU input and statistics).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["host_update_and_normalize"]


def host_update_and_normalize(
    x: np.ndarray,
    buffers: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    *,
    frozen: bool,
    decay: float,
    eps: float,
    clip: float | None,
) -> np.ndarray:
    """Folds ``x`` (``[*batch, *shape]``) into the decayed sums ``buffers = (sum, ssq,
    count)`` in place (unless ``frozen``) and returns it normalised by them, float32."""
    s, q, c = (b.numpy() for b in buffers)
    x = x.astype(np.float64)
    if not frozen:
        axes = tuple(range(x.ndim - s.ndim))
        d = decay
        s *= d
        s += x.sum(axes) if axes else x
        q *= d
        q += (x * x).sum(axes) if axes else x * x
        c *= d
        c += float(np.prod(x.shape[: x.ndim - s.ndim]))
    count = np.maximum(c, 1e-8)
    mean = s / count
    var = np.maximum(q / count - mean * mean, eps)
    out = (x - mean) / np.sqrt(var)
    if clip is not None:
        out = np.clip(out, -clip, clip)
    return out.astype(np.float32)
