"""``FastTanh``: ``nn.Tanh`` computed with numpy's SIMD ``tanh`` on CPU tensors.

Replaces ``torch.tanh`` in every ``MLP`` built with ``nn.Tanh`` (``MLP`` builds a
``FastTanh`` instead), under the switch ``NUMPY_TANH``; with it off, or on anything numpy
cannot take (GPU tensors, ``torch.compile`` tracing, ``vmap``), ``FastTanh`` runs
``torch.tanh``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from rl_trainers import fast

__all__ = ["FastTanh", "numpy_ok"]

_NUMPY_DTYPES = (torch.float32, torch.float64)


class _NumpyTanh(torch.autograd.Function):
    """``tanh`` computed by numpy's vectorised kernel, with torch's ``tanh_backward``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = torch.from_numpy(np.tanh(x.detach().numpy()))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


def numpy_ok(x: torch.Tensor) -> bool:
    """Whether numpy's kernels may compute on ``x``: ``NUMPY_TANH`` on, and ``x`` a CPU
    float32/float64 tensor with at least one dim, outside ``torch.compile`` and functorch
    transforms, neither conjugated nor negated lazily."""
    return (
        fast.NUMPY_TANH
        and x.device.type == "cpu"
        and x.dim() > 0
        and x.dtype in _NUMPY_DTYPES
        and not torch.compiler.is_compiling()
        and not torch._C._functorch.is_functorch_wrapped_tensor(x)
        and not x.is_conj()
        and not x.is_neg()
    )


class FastTanh(nn.Tanh):
    """``nn.Tanh`` that computes CPU float tensors with numpy's SIMD ``tanh``.

    torch's CPU ``tanh`` kernel runs ~10x slower than numpy's on the [256, 64] activations of
    a PPO minibatch (about 60 us against 5 us on the benchmark machine), which made it the
    single largest op of a PPO update. Results agree with ``torch.tanh`` to float rounding
    (1 ulp); the gradient is torch's ``tanh_backward``. Anything else (GPU tensors,
    ``torch.compile`` tracing, ``vmap``) falls back to ``torch.tanh``. ``MLP`` uses it
    wherever ``nn.Tanh`` is asked for.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not numpy_ok(x):
            return torch.tanh(x)
        if x.requires_grad and torch.is_grad_enabled():
            return _NumpyTanh.apply(x)
        return torch.from_numpy(np.tanh(x.detach().numpy()))
