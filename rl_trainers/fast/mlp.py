"""The fused MLP: a plain ``MLP``'s whole Linear/activation stack as one autograd node.

Replaces ``MLP.forward``'s layer-by-layer call (``nn.Linear``, ``FastTanh``/``nn.ReLU``...)
under the switch ``FUSE_MLP``, for plain CPU float32/float64 MLPs (``nn.Linear`` layers with
tanh/ReLU activations, no module hooks, outside ``torch.compile``/``vmap``/autocast/tracing);
:func:`fused_mlp` returns None for anything else, and the caller runs the layers.

PPO runs two small MLPs ([256, 4] -> 64 -> 64 -> out) forward and backward per minibatch.
Layer by layer that is 3 AddmmBackward nodes plus 2 Python autograd nodes (numpy tanh) per
call; fused it is one Python node whose backward is a short loop of mm calls. Besides the
bookkeeping, the hand-written backward orders each weight-gradient product for MKL's fast
case (see _weight_grad). Measured by benchmarks/mlp_fast_path.py, one thread: ~235 -> ~205 us
per forward+backward of the PPO actor. 256-wide layers are compute-bound (the 256x256x256
products run near the core's peak) and gain only the saved overhead.

The forward and backward maths (:func:`mlp_forward`, :func:`mlp_backward`, on
:mod:`rl_trainers.fast.gemm`'s products) also serve the other fast paths built on MLPs: the
critic ensemble (:mod:`rl_trainers.fast.ensemble`), SAC's and PPO's one-node losses
(:mod:`rl_trainers.fast.sac`, :mod:`rl_trainers.fast.ppo`), DQN's autograd-free step and the
collectors' lean acting (:mod:`rl_trainers.fast.acting`).
"""

from __future__ import annotations

import types
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.modules import module as _module_mod

from rl_trainers import fast
from rl_trainers.fast import gemm
from rl_trainers.fast.tanh import FastTanh, numpy_ok

__all__ = [
    "ACT_CODES",
    "ACT_NONE",
    "ACT_RELU",
    "ACT_TANH",
    "GLOBAL_HOOKS",
    "SEQUENTIAL_FORWARDS",
    "activation_backward",
    "backward_plan",
    "dense",
    "fusable_input",
    "fused_mlp",
    "fused_mlp_node",
    "fused_mlp_parts",
    "has_hooks",
    "mlp_backward",
    "mlp_forward",
]

#: The forwards that run a module's layers one after the other, all of them, on one input:
#: ``nn.Sequential``'s, and ``MLP``'s (which registers its own). Only a module called
#: through one of these may have its layers fused: any other (a network of the user's own
#: with a skip connection, a ``Sequential`` subclass with its own forward) runs as written.
SEQUENTIAL_FORWARDS = {nn.Sequential.forward}

ACT_NONE, ACT_TANH, ACT_RELU = 0, 1, 2
ACT_CODES = {nn.Tanh: ACT_TANH, FastTanh: ACT_TANH, nn.ReLU: ACT_RELU}
GLOBAL_HOOKS = (
    _module_mod._global_forward_hooks,
    _module_mod._global_forward_pre_hooks,
    _module_mod._global_backward_hooks,
    _module_mod._global_backward_pre_hooks,
)


def fusable_input(x: torch.Tensor) -> bool:
    """Whether ``x`` may take the fused path: a plain CPU float tensor outside any transform."""
    return (
        (type(x) is torch.Tensor or type(x) is nn.Parameter)
        and numpy_ok(x)
        and torch._C._functorch.peek_interpreter_stack() is None
        and not torch.jit.is_tracing()
        and not torch.is_autocast_enabled("cpu")
    )


def _build_plan(mlp: nn.Sequential) -> tuple | None:
    """``(linears, activation codes)`` if ``mlp`` is Linear[/act] blocks only, called
    through one of :data:`SEQUENTIAL_FORWARDS`, else None (a module's type does not change,
    so the cached plan keeps the answer)."""
    if not isinstance(mlp, nn.Sequential) or type(mlp).forward not in SEQUENTIAL_FORWARDS:
        return None
    linears: list[nn.Linear] = []
    acts: list[int] = []
    for module in mlp:
        kind = type(module)
        if kind is nn.Linear:
            linears.append(module)
            acts.append(ACT_NONE)
        elif kind in ACT_CODES and linears and acts[-1] == ACT_NONE:
            acts[-1] = ACT_CODES[kind]
        else:  # lazy/other layers, dropout, norms, other activations, two acts in a row
            return None
    if not linears:
        return None
    return tuple(linears), tuple(acts)


def _plan_for(mlp: nn.Sequential) -> tuple | None:
    """The cached plan of ``mlp``, rebuilt whenever its list of sub-modules changes."""
    modules = tuple(mlp._modules.values())
    cached = mlp.__dict__.get("_fused_plan_cache")
    if cached is not None and cached[0] == modules:
        plan = cached[1]
    else:
        plan = _build_plan(mlp)
        if plan is None and any(type(m) is nn.LazyLinear for m in modules):
            return None  # not cached: the lazy layer turns into nn.Linear on its first call
        mlp.__dict__["_fused_plan_cache"] = (modules, plan)
    if plan is None or any(GLOBAL_HOOKS):
        return None
    if any(has_hooks(m) for m in modules):
        return None  # a hook (spectral/weight norm, user hooks) must see every layer
    return plan


def has_hooks(module: nn.Module) -> bool:
    """Whether ``module`` itself has forward or backward hooks (a fused path that skips
    calling it must then decline)."""
    return bool(
        module._forward_hooks
        or module._forward_pre_hooks
        or module._backward_hooks
        or module._backward_pre_hooks
    )


def dense(
    bias: torch.Tensor | None, x: torch.Tensor, weight: torch.Tensor, act: int
) -> torch.Tensor:
    """``act(bias + x @ weight.T)`` as a fresh tensor (see :func:`gemm.addmm` for the bias
    shapes): ReLU runs inside the product's call, tanh with numpy's kernel in place."""
    y = gemm.linear(x, weight, bias, relu=act == ACT_RELU)
    if act == ACT_TANH:
        array = y.numpy()
        np.tanh(array, out=array)
    return y


def activation_backward(grad: torch.Tensor, out: torch.Tensor, act: int) -> torch.Tensor:
    """The gradient before a tanh or ReLU activation, from the gradient after it and the
    activated output."""
    if act == ACT_TANH:
        return torch.ops.aten.tanh_backward(grad, out)
    return torch.ops.aten.threshold_backward(grad, out, 0)


def mlp_forward(x, acts, biases, params, saved: list | None) -> torch.Tensor:
    """The forward maths on a 2-D ``x``.

    Appends to ``saved`` every layer's (activated) output that the backward needs: all hidden
    outputs, and the last output when it is activated.
    """
    j = 0
    last = len(acts) - 1
    for i, (act, has_bias) in enumerate(zip(acts, biases, strict=True)):
        bias = params[j + 1] if has_bias else None
        x = dense(bias, x, params[j], act)
        j += 2 if has_bias else 1
        if saved is not None and (i < last or act != ACT_NONE):
            saved.append(x)
    return x


def _weight_grad(
    grad: torch.Tensor,
    layer_in: torch.Tensor,
    weight: torch.Tensor,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``grad.T @ layer_in``, with the operands ordered for MKL's fast case; written into
    ``out`` (shaped like ``weight``) when given.

    MKL's sgemm is several times slower when the product has few columns (e.g. 61 us against
    8 us for a [256, 2] output gradient of a 256-wide layer), so a layer with fewer inputs than
    outputs computes the transposed product and returns its transpose (copied into ``out``:
    a product written straight into a transposed ``out`` rounds differently).
    """
    if weight.shape[1] < weight.shape[0]:
        transposed = gemm.mm(layer_in.t(), grad).t()
        return transposed if out is None else out.copy_(transposed)
    return gemm.mm(grad.t(), layer_in, out=out)


def _input_grad(grad: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``grad @ weight``, transposed like :func:`_weight_grad` for narrow layer inputs."""
    if weight.shape[1] < weight.shape[0]:
        return gemm.mm(weight.t(), grad.t()).t()
    return gemm.mm(grad, weight)


def fused_mlp_node(name: str, forward_fn, backward_fn, doc: str) -> type:
    """An autograd Function ``apply(acts, biases, x, *params)`` that runs
    ``forward_fn(x, acts, biases, params, saved)`` and, as its hand-written backward,
    ``backward_fn(grad, x, acts, biases, params, saved, needs_x, needs_params) -> (grad_x,
    grads)``, with the signatures of :func:`mlp_forward` and :func:`mlp_backward`. Not twice
    differentiable."""

    def forward(ctx, acts, biases, x, *params):
        saved: list[torch.Tensor] = []
        out = forward_fn(x, acts, biases, params, saved)
        ctx.acts, ctx.biases = acts, biases
        ctx.save_for_backward(x, *params, *saved)
        return out

    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        needs = ctx.needs_input_grad  # flags for (acts, biases, x, *params)
        n_params = len(needs) - 3
        saved = ctx.saved_tensors
        x, params, outs = saved[0], saved[1 : 1 + n_params], saved[1 + n_params :]
        grad_x, grads = backward_fn(
            grad.contiguous(), x, ctx.acts, ctx.biases, params, outs, needs[2], needs[3:]
        )
        return (None, None, grad_x, *grads)

    def body(namespace: dict) -> None:
        namespace.update(forward=staticmethod(forward), backward=staticmethod(backward))
        namespace.update(__doc__=doc, __module__=forward_fn.__module__)

    # types.new_class runs autograd's metaclass, which names the backward node after ``name``
    return types.new_class(name, (torch.autograd.Function,), exec_body=body)


def backward_plan(
    biases: tuple, needs_x: bool, needs_params: Sequence[bool]
) -> tuple[list[int], int]:
    """``(starts, lowest)`` for a hand-written MLP backward: the index in the parameter list
    of each layer's weight, and the lowest layer the backward must reach (the first layer
    whose parameters need a gradient, or 0 when the input does; ``len(biases)``: none)."""
    starts, j = [], 0
    for has_bias in biases:
        starts.append(j)
        j += 2 if has_bias else 1
    lowest = 0 if needs_x else len(biases)
    for i, has_bias in enumerate(biases):
        if needs_params[starts[i]] or (has_bias and needs_params[starts[i] + 1]):
            lowest = min(lowest, i)
            break
    return starts, lowest


def mlp_backward(
    grad: torch.Tensor,
    x: torch.Tensor,
    acts: tuple,
    biases: tuple,
    params: Sequence[torch.Tensor],
    outs: Sequence[torch.Tensor],
    needs_x: bool,
    needs_params: Sequence[bool],
    out: Sequence[torch.Tensor] | None = None,
) -> tuple[torch.Tensor | None, list[torch.Tensor | None]]:
    """Gradients of a fused MLP's input and parameters from its output gradient ``grad``.

    ``outs`` are the outputs :func:`mlp_forward` saved; layers below the lowest one whose
    parameters (or, for the first layer, input) need a gradient are skipped. With ``out``
    (one contiguous tensor per parameter, shaped like it), each parameter gradient is
    written into its ``out`` tensor, with the same values.
    """
    starts, lowest = backward_plan(biases, needs_x, needs_params)
    grads: list[torch.Tensor | None] = [None] * len(params)
    grad_x = None
    for i in range(len(acts) - 1, lowest - 1, -1):
        if acts[i] != ACT_NONE:
            grad = activation_backward(grad, outs[i], acts[i])
        p = starts[i]
        weight = params[p]
        if needs_params[p]:
            layer_in = x if i == 0 else outs[i - 1]
            grads[p] = _weight_grad(grad, layer_in, weight, None if out is None else out[p])
        if biases[i] and needs_params[p + 1]:
            grads[p + 1] = grad.sum(0) if out is None else torch.sum(grad, 0, out=out[p + 1])
        if i > lowest:
            grad = _input_grad(grad, weight)
        elif i == 0 and needs_x:
            grad_x = _input_grad(grad, weight)
    return grad_x, grads


_FusedMLP = fused_mlp_node(
    "_FusedMLP",
    mlp_forward,
    mlp_backward,
    """Forward and hand-written backward of a Linear/activation stack on 2-D inputs.

    ``apply(acts, biases, x, *params)``: ``acts`` holds one activation code per layer,
    ``biases`` one has-bias flag per layer, ``params`` the weights (and biases where present)
    in layer order. Not twice differentiable.
    """,
)


def _linear_tensors(lin: nn.Linear) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(lin.weight, lin.bias)`` where ``nn.Module`` finds them, without ``__getattr__``:
    its parameters, else its buffers (a target network holds its copies as buffers); the
    weight is None when neither holds it (replaced by a plain attribute)."""
    params, buffers = lin._parameters, lin._buffers
    weight = params["weight"] if "weight" in params else buffers.get("weight")
    bias = params["bias"] if "bias" in params else buffers.get("bias")
    return weight, bias


def fused_mlp_parts(mlp: nn.Sequential, x: torch.Tensor) -> tuple | None:
    """``(acts, biases, params)`` of ``mlp`` for the fused maths on input ``x``, or None.

    ``acts`` holds one activation code per layer, ``biases`` one has-bias flag per layer,
    ``params`` the weights (and biases where present) in layer order: the arguments of
    :func:`mlp_forward` and :func:`mlp_backward`. None when ``mlp`` or ``x`` cannot take the
    fused path (see the module docstring).
    """
    if not (fast.FUSE_MLP and fusable_input(x)):
        return None
    plan = _plan_for(mlp)
    if plan is None:
        return None
    linears, acts = plan
    params: list[torch.Tensor] = []
    biases: list[bool] = []
    for lin in linears:
        weight, bias = _linear_tensors(lin)
        if weight is None:
            return None  # weight replaced by a plain attribute: nn.Linear's own forward
        params.append(weight)
        biases.append(bias is not None)
        if bias is not None:
            params.append(bias)
    if x.shape[-1] != params[0].shape[-1]:
        return None  # let nn.Linear raise its usual shape error
    return acts, tuple(biases), params


def fused_mlp(mlp: nn.Sequential, x: torch.Tensor) -> torch.Tensor | None:
    """Runs ``mlp`` on ``x`` as one fused node, or returns None when it cannot be fused."""
    parts = fused_mlp_parts(mlp, x)
    if parts is None:
        return None
    acts, biases, params = parts
    lead = x.shape[:-1]
    x2 = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    if torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params)):
        out = _FusedMLP.apply(acts, biases, x2, *params)
    else:
        out = mlp_forward(x2, acts, biases, params, None)
    return out if x.dim() == 2 else out.reshape(*lead, out.shape[-1])
