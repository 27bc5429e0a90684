"""``VecNorm``'s running statistics and normalisation in numpy, on views of its buffers.

Replaces ``VecNorm``'s tensor maths (the same float64 operations) on CPU tensors under the
switch ``VECNORM_ON_HOST``: a few microseconds per step where the tensor ops cost ~15x more
in dispatch. ``VecNorm`` decides where it applies (CPU input and statistics).

The operations are the plain path's, in its order, so the values are the same bit for bit;
only work whose result is known is skipped: scaling the sums by a ``decay`` of exactly 1,
and summing over the batch when it holds one row.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["host_update_and_normalize"]

_maximum, _minimum, _sqrt = np.maximum, np.minimum, np.sqrt


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
    s, q, c = buffers[0].numpy(), buffers[1].numpy(), buffers[2].numpy()
    x = x.astype(np.float64)
    if not frozen:
        batch_dims = x.ndim - s.ndim
        rows = math.prod(x.shape[:batch_dims])
        if decay != 1.0:  # a decay of 1 scales by 1: nothing to do
            s *= decay
            q *= decay
            c *= decay
        if batch_dims == 0:
            s += x
            q += x * x
        elif rows == 1:  # the sum over a single row is that row
            s += x.reshape(s.shape)
            q += (x * x).reshape(q.shape)
        else:
            axes = tuple(range(batch_dims))
            s += x.sum(axes)
            q += (x * x).sum(axes)
        c += float(rows)
    count = _maximum(c, 1e-8)
    mean = s / count
    var = _maximum(q / count - mean * mean, eps)
    out = (x - mean) / _sqrt(var)
    if clip is not None:
        out = _minimum(_maximum(out, -clip), clip)  # np.clip's values, fewer checks
    return out.astype(np.float32)
