"""An optimizer's parameters and their gradients, each stored in one flat tensor.

PPO's two 64-wide MLPs have twelve parameter tensors of at most 4,096 elements. Per-tensor
work around a step then costs more than the arithmetic: norm clipping (twelve norms, their
stack, twelve multiplies) took ~86 us per step on the 2-core benchmark machine against
~21 us for one norm and one multiply over a single tensor, and fused Adam over twelve
tensors ~36 us against ~23 us over one. :class:`FlatParameters` moves the parameters' values
into one tensor (each ``Parameter`` keeps its identity and becomes a view of it, so modules,
``state_dict()`` and the optimizer's state keys are unchanged) and keeps one gradient
buffer whose views are the parameters' ``.grad``. Each parameter starts on a 64-byte boundary,
as a tensor of its own would: MKL's products round differently into outputs at other
alignments, and results must not depend on whether a gradient went to the buffer or to a
fresh tensor.

Gradients land in the buffer only when they are written in place: by
:meth:`~rl_trainers.objectives.common.LossModule.loss_and_grads`, which
:meth:`~rl_trainers.core.loop.OptimizerHook.loss_and_step` uses (autograd's
``backward()`` after ``.grad = None`` makes new tensors instead). Anything that replaces a
parameter's storage (``module.to(...)``, ``p.data = ...``) is noticed by :meth:`matches`, and
the trainer's hook then builds a new instance.

In data-parallel training (docs/distributed.md) the hook all-reduces :attr:`grad` in place, one
message per step, before clipping and the fused step.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["FlatParameters"]


class FlatParameters:
    """Moves ``params`` into one flat tensor (:attr:`data`) and gives them gradient views
    of a second one (:attr:`grad`); their values and current gradients are kept."""

    def __init__(self, params: Sequence[nn.Parameter]) -> None:
        if not self.supports(params):
            raise ValueError(
                "FlatParameters needs dense float parameters on one device and dtype, all "
                "requiring grad."
            )
        self.params = tuple(params)
        self._offsets = _aligned_offsets([p.numel() for p in self.params], params[0].element_size())
        self.data, views = self.flat_like(self.params)
        self.grad, self.grad_views = self.flat_like([p.grad for p in self.params])
        for p, view, grad in zip(self.params, views, self.grad_views):
            p.data = view
            p.grad = grad
        self._pointers = tuple(p.data_ptr() for p in self.params)

    def flat_like(self, tensors: Sequence[torch.Tensor | None]) -> tuple[torch.Tensor, list]:
        """``(buffer, views)``: a copy of ``tensors`` (one per parameter, shaped like it;
        None: zeros) laid out in one tensor as the parameters are in :attr:`data`, with the
        parameters' dtype and device. The gaps between them are zeros: in the gradient and
        Adam's moments they add nothing to the norm, and a step leaves them at 0."""
        first = self.params[0]
        buffer = torch.zeros(self._offsets[-1], dtype=first.dtype, device=first.device)
        views = []
        with torch.no_grad():
            for param, tensor, offset in zip(self.params, tensors, self._offsets):
                view = buffer[offset : offset + param.numel()].view(param.shape)
                if tensor is not None:
                    view.copy_(tensor)
                views.append(view)
        return buffer, views

    @staticmethod
    def supports(params: Sequence[torch.Tensor]) -> bool:
        """Whether ``params`` can share one flat tensor."""
        if not params or len({id(p) for p in params}) != len(params):
            return False
        first = params[0]
        return all(
            p.requires_grad
            and p.layout is torch.strided
            and p.dtype is first.dtype
            and p.device == first.device
            and p.dtype.is_floating_point
            for p in params
        )

    def matches(self, params: Sequence[torch.Tensor]) -> bool:
        """Whether ``params`` are these parameters, in this order, still stored here."""
        if len(params) != len(self.params):
            return False
        return all(
            p is q and p.data_ptr() == ptr for p, q, ptr in zip(params, self.params, self._pointers)
        )

    def attach_grads(self) -> None:
        """Make every parameter's ``.grad`` its view of :attr:`grad` again (after a
        ``.grad = None`` or an autograd backward pass replaced it)."""
        for p, grad in zip(self.params, self.grad_views):
            if p.grad is not grad:
                p.grad = grad

    def grads_attached(self) -> bool:
        """Whether every parameter's ``.grad`` is its view of :attr:`grad`."""
        return all(p.grad is grad for p, grad in zip(self.params, self.grad_views))

    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """Scale the gradients to a 2-norm of at most ``max_norm`` (the factor
        ``max_norm / (norm + 1e-6)`` capped at 1, as ``torch.nn.utils.clip_grad_norm_``);
        returns the norm before clipping. The norm is taken over the flat buffer in one
        reduction, so it can differ from torch's per-tensor version in the last bits."""
        total = torch.linalg.vector_norm(self.grad)
        self.grad.mul_(torch.clamp(max_norm / (total + 1e-6), max=1.0))
        return total


def _aligned_offsets(sizes: Sequence[int], element_size: int) -> list[int]:
    """Where each tensor starts, every start on a 64-byte boundary as a fresh allocation's
    is (MKL's products round differently into outputs at other alignments), then the total
    length."""
    step = max(1, _ALIGNMENT // element_size)
    offsets, end = [], 0
    for size in sizes:
        offsets.append(end)
        end += -(-size // step) * step
    return [*offsets, end]


_ALIGNMENT = 64  # bytes; torch's CPU allocator aligns every tensor to it
