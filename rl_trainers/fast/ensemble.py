"""A critic ensemble's plain MLPs as one autograd node.

Replaces ``CriticEnsemble``'s batched products (one ``matmul``/``baddbmm`` per layer over the
copies' leading ``[num]`` dim) under the switch ``FUSE_MLP``, for ReLU/tanh MLP critics on
CPU: each copy runs the fused MLP's maths (:func:`~rl_trainers.fast.mlp.mlp_forward`,
:func:`~rl_trainers.fast.mlp.mlp_backward`, products on the faster of MKL and oneDNN, see
:mod:`rl_trainers.fast.gemm`) on views of the stacked parameters, in one forward and one
backward call for all copies. ``CriticEnsemble`` decides where it applies and passes the
stacked parameters (:meth:`~rl_trainers.objectives.CriticEnsemble._fused_params`).
"""

from __future__ import annotations

import torch
from torch import nn

from rl_trainers.fast.mlp import ACT_CODES, ACT_NONE, fused_mlp_node, mlp_backward, mlp_forward

__all__ = ["ensemble_activation_codes", "ensemble_backward", "ensemble_forward", "fused_ensemble"]


def _per_copy(params) -> list[tuple[torch.Tensor, ...]]:
    """The parameters of each copy (views of the stacked ones), copy by copy."""
    return list(zip(*(p.unbind(0) for p in params), strict=True))


def ensemble_forward(x, acts, biases, params, saved: list | None) -> torch.Tensor:
    """``num`` MLPs on a shared 2-D input ``x [N, in]``; returns ``[num, N, out]``.

    ``params`` are the stacked weights ``[num, out, in]`` (and biases ``[num, out]``) in layer
    order; each copy runs the fused MLP maths (:func:`~rl_trainers.fast.mlp.mlp_forward`) on
    its own views of them and appends its saved outputs to ``saved``, copy after copy.
    """
    outs = [mlp_forward(x, acts, biases, member, saved) for member in _per_copy(params)]
    return torch.stack(outs)


def ensemble_backward(grad, x, acts, biases, params, outs, needs_x, needs_params):
    """Gradients of ``x`` and ``params`` from the output gradient ``grad [num, N, out]``:
    :func:`~rl_trainers.fast.mlp.mlp_backward` copy by copy, the copies' parameter gradients
    stacked and their input gradients summed."""
    num = len(params[0])
    per_copy = len(outs) // num
    grad_x = None
    copy_grads = []
    for c, member in enumerate(_per_copy(params)):
        gx, grads = mlp_backward(
            grad[c],
            x,
            acts,
            biases,
            member,
            outs[c * per_copy : (c + 1) * per_copy],
            needs_x,
            needs_params,
        )
        grad_x = gx if grad_x is None else grad_x + gx
        copy_grads.append(grads)
    stacked = [None if g[0] is None else torch.stack(g) for g in zip(*copy_grads, strict=True)]
    return grad_x, stacked


_EnsembleMLP = fused_mlp_node(
    "_EnsembleMLP",
    ensemble_forward,
    ensemble_backward,
    """``apply(acts, biases, x, *params)`` -> ``[num, N, out]``: :func:`ensemble_forward`
    with the hand-written :func:`ensemble_backward`. Not twice differentiable.""",
)


def fused_ensemble(acts: tuple, biases: tuple, x: torch.Tensor, params: list) -> torch.Tensor:
    """``[num, N, out]``: the ensemble on ``x [N, in]`` as one node (:class:`_EnsembleMLP`)
    when gradients are needed, else the forward maths alone."""
    if torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params)):
        return _EnsembleMLP.apply(acts, biases, x, *params)
    return ensemble_forward(x, acts, biases, params, None)


def ensemble_activation_codes(plan: list, acts: nn.ModuleList) -> tuple[int, ...] | None:
    """One activation code per linear layer of ``plan`` (``CriticEnsemble``'s layer plan:
    ``("linear", i, has_bias)`` and ``("act", i, None)`` entries), or None if an activation
    is not ReLU/tanh or two follow each other."""
    codes: list[int] = []
    for kind, i, _ in plan:
        if kind == "linear":
            codes.append(ACT_NONE)
        elif type(acts[i]) in ACT_CODES and codes and codes[-1] == ACT_NONE:
            codes[-1] = ACT_CODES[type(acts[i])]
        else:
            return None
    return tuple(codes)
