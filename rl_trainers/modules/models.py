"""Plain torch networks: MLP, ConvNet and the dueling Q-network.

Input sizes are inferred lazily (``nn.LazyLinear`` / ``nn.LazyConv2d``) when not given, so a
user never types an observation size: the first forward pass fixes it.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.modules import module as _module_mod

from rl_trainers import fast
from rl_trainers.modules import gemm
from rl_trainers.modules.noisy import NoisyLazyLinear, NoisyLinear

__all__ = ["MLP", "ConvNet", "DuelingCnnDQNet", "SquashDims", "FastTanh"]

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


def torch_kernels() -> contextlib.AbstractContextManager[None]:
    """Inside the block, networks run layer by layer on torch's own kernels (no numpy
    ``tanh``, no fused MLP, :mod:`rl_trainers.fast`): the ops an exported graph
    (``torch.export``, TorchScript) of the same network runs, so its outputs agree bit for
    bit."""
    return fast.plain("FUSE_MLP", "NUMPY_TANH")


def _numpy_ok(x: torch.Tensor) -> bool:
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
        if not _numpy_ok(x):
            return torch.tanh(x)
        if x.requires_grad and torch.is_grad_enabled():
            return _NumpyTanh.apply(x)
        return torch.from_numpy(np.tanh(x.detach().numpy()))


# --------------------------------------------------------------------------------------------
# Fused MLP: the whole Linear/activation stack as one autograd node.
#
# PPO runs two small MLPs ([256, 4] -> 64 -> 64 -> out) forward and backward per minibatch.
# Layer by layer that is 3 AddmmBackward nodes plus 2 Python autograd nodes (_NumpyTanh) per
# call; fused it is one Python node whose backward is a short loop of mm calls. Besides the
# bookkeeping, the hand-written backward orders each weight-gradient product for MKL's fast
# case (see _weight_grad). Measured by benchmarks/mlp_fast_path.py, one thread: ~235 -> ~205 us
# per forward+backward of the PPO actor. 256-wide layers are compute-bound (the 256x256x256
# products run near the core's peak) and gain only the saved overhead.
# --------------------------------------------------------------------------------------------

_ACT_NONE, _ACT_TANH, _ACT_RELU = 0, 1, 2
_ACT_CODES = {nn.Tanh: _ACT_TANH, FastTanh: _ACT_TANH, nn.ReLU: _ACT_RELU}
_GLOBAL_HOOKS = (
    _module_mod._global_forward_hooks,
    _module_mod._global_forward_pre_hooks,
    _module_mod._global_backward_hooks,
    _module_mod._global_backward_pre_hooks,
)


def _fusable_input(x: torch.Tensor) -> bool:
    """Whether ``x`` may take the fused path: a plain CPU float tensor outside any transform."""
    return (
        (type(x) is torch.Tensor or type(x) is nn.Parameter)
        and _numpy_ok(x)
        and torch._C._functorch.peek_interpreter_stack() is None
        and not torch.jit.is_tracing()
        and not torch.is_autocast_enabled("cpu")
    )


def _build_plan(mlp: nn.Sequential) -> tuple | None:
    """``(linears, activation codes)`` if ``mlp`` is Linear[/act] blocks only, else None."""
    linears: list[nn.Linear] = []
    acts: list[int] = []
    for module in mlp:
        kind = type(module)
        if kind is nn.Linear:
            linears.append(module)
            acts.append(_ACT_NONE)
        elif kind in _ACT_CODES and linears and acts[-1] == _ACT_NONE:
            acts[-1] = _ACT_CODES[kind]
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
    if plan is None or any(_GLOBAL_HOOKS):
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
    y = gemm.linear(x, weight, bias, relu=act == _ACT_RELU)
    if act == _ACT_TANH:
        array = y.numpy()
        np.tanh(array, out=array)
    return y


def activation_backward(grad: torch.Tensor, out: torch.Tensor, act: int) -> torch.Tensor:
    """The gradient before a tanh or ReLU activation, from the gradient after it and the
    activated output."""
    if act == _ACT_TANH:
        return torch.ops.aten.tanh_backward(grad, out)
    return torch.ops.aten.threshold_backward(grad, out, 0)


def _mlp_forward(x, acts, biases, params, saved: list | None) -> torch.Tensor:
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
        if saved is not None and (i < last or act != _ACT_NONE):
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
    grads)``, with the signatures of :func:`_mlp_forward` and :func:`mlp_backward`. Not twice
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

    ``outs`` are the outputs :func:`_mlp_forward` saved; layers below the lowest one whose
    parameters (or, for the first layer, input) need a gradient are skipped. With ``out``
    (one contiguous tensor per parameter, shaped like it), each parameter gradient is
    written into its ``out`` tensor, with the same values.
    """
    starts, lowest = backward_plan(biases, needs_x, needs_params)
    grads: list[torch.Tensor | None] = [None] * len(params)
    grad_x = None
    for i in range(len(acts) - 1, lowest - 1, -1):
        if acts[i] != _ACT_NONE:
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
    _mlp_forward,
    mlp_backward,
    """Forward and hand-written backward of a Linear/activation stack on 2-D inputs.

    ``apply(acts, biases, x, *params)``: ``acts`` holds one activation code per layer,
    ``biases`` one has-bias flag per layer, ``params`` the weights (and biases where present)
    in layer order. Not twice differentiable.
    """,
)


def fused_mlp_parts(mlp: nn.Sequential, x: torch.Tensor) -> tuple | None:
    """``(acts, biases, params)`` of ``mlp`` for the fused maths on input ``x``, or None.

    ``acts`` holds one activation code per layer, ``biases`` one has-bias flag per layer,
    ``params`` the weights (and biases where present) in layer order: the arguments of
    :func:`_mlp_forward` and :func:`mlp_backward`. None when ``mlp`` or ``x`` cannot take the
    fused path (see :meth:`MLP.forward`).
    """
    if not (fast.FUSE_MLP and _fusable_input(x)):
        return None
    plan = _plan_for(mlp)
    if plan is None:
        return None
    linears, acts = plan
    params: list[torch.Tensor] = []
    biases: list[bool] = []
    for lin in linears:
        registered = lin._parameters  # what lin.weight / lin.bias read, without __getattr__
        if registered.get("weight") is None:
            return None  # weight replaced by a plain attribute: nn.Linear's own forward
        params.append(registered["weight"])
        bias = registered.get("bias")
        biases.append(bias is not None)
        if bias is not None:
            params.append(bias)
    if x.shape[-1] != params[0].shape[-1]:
        return None  # let nn.Linear raise its usual shape error
    return acts, tuple(biases), params


def _fused_mlp(mlp: nn.Sequential, x: torch.Tensor) -> torch.Tensor | None:
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
        out = _mlp_forward(x2, acts, biases, params, None)
    return out if x.dim() == 2 else out.reshape(*lead, out.shape[-1])


def _is_list(value) -> bool:
    """A per-layer sequence (what :func:`_as_list` spreads over the layers)."""
    return isinstance(value, Sequence) and not isinstance(value, str)


def _as_list(value, length: int, name: str) -> list:
    """Broadcasts a scalar to a list of ``length`` items, or checks a sequence's length."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        value = list(value)
        if len(value) != length:
            raise ValueError(f"{name} has {len(value)} entries but {length} layers were requested")
        return value
    return [value] * length


class MLP(nn.Sequential):
    """A multi-layer perceptron whose input size may be inferred lazily.

    Several inputs are concatenated along the last dimension, so a Q-network can be called as
    ``mlp(observation, action)``.

    Args:
        in_features: input size; ``None`` uses a lazy first layer.
        out_features: output size (an int, or a shape whose product is the output size).
        depth: number of hidden layers when ``num_cells`` is an int.
        num_cells: hidden sizes (a sequence), or one size repeated ``depth`` times.
        activation_class: activation constructor used after each hidden layer.
        activation_kwargs: keyword arguments for ``activation_class`` (or a list of them, one
            per activation: ``depth + activate_last_layer`` entries).
        norm_class: optional normalisation layer constructor, placed before each activation.
        norm_kwargs: keyword arguments for ``norm_class`` (or a list, like ``activation_kwargs``).
        dropout: dropout probability before each normalisation/activation (``None``: none).
        bias_last_layer: whether the output layer has a bias.
        single_bias_last_layer: not supported (torchrl raises ``NotImplementedError`` too).
        layer_class: linear layer constructor (``nn.Linear`` by default).
        layer_kwargs: keyword arguments for ``layer_class`` (or a list of ``depth + 1``); a
            ``bias`` entry overrides the layer's bias.
        activate_last_layer: also apply (dropout, norm and) the activation after the output
            layer.
        device: device of the parameters.

    The parameters are in torchrl's order, and the layers too: ``Linear``, then
    ``Dropout``, norm and activation after each hidden layer.

    Example:
        >>> mlp = MLP(out_features=2, num_cells=[64, 64])
        >>> mlp(torch.zeros(8, 4)).shape
        torch.Size([8, 2])
    """

    def __init__(
        self,
        in_features: int | None = None,
        out_features: int | Sequence[int] | None = None,
        depth: int | None = None,
        num_cells: int | Sequence[int] | None = None,
        activation_class: type[nn.Module] = nn.Tanh,
        activation_kwargs: dict | Sequence[dict] | None = None,
        norm_class: type[nn.Module] | None = None,
        norm_kwargs: dict | Sequence[dict] | None = None,
        dropout: float | None = None,
        bias_last_layer: bool = True,
        single_bias_last_layer: bool = False,
        layer_class: type[nn.Module] = nn.Linear,
        layer_kwargs: dict | Sequence[dict] | None = None,
        activate_last_layer: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        if out_features is None:
            raise ValueError("MLP needs out_features (an int or a shape)")
        if single_bias_last_layer:
            raise NotImplementedError("single_bias_last_layer is not supported")
        if isinstance(out_features, Sequence):
            self.out_shape = torch.Size(out_features)
            out_size = int(torch.Size(out_features).numel())
        else:
            self.out_shape = None
            out_size = int(out_features)
        if num_cells is None:
            num_cells = [32] * (3 if depth is None else int(depth))
        if isinstance(num_cells, Sequence):
            cells = [int(c) for c in num_cells]
            if depth is not None and depth != len(cells):
                raise ValueError(f"depth={depth} does not match len(num_cells)={len(cells)}")
        else:
            if depth is None:
                raise ValueError(
                    "MLP with an int num_cells needs depth (the number of hidden layers)"
                )
            cells = [int(num_cells)] * int(depth)
        self.in_features = in_features
        self.out_features = out_features
        self.num_cells = cells
        self.depth = len(cells)
        self.activation_class = activation_class
        self.norm_class = norm_class
        self.dropout = dropout
        self.bias_last_layer = bias_last_layer
        self.layer_class = layer_class
        self.activate_last_layer = activate_last_layer
        n_act = len(cells) + int(bool(activate_last_layer))
        act_kws = _kwargs_list(activation_kwargs, n_act, "activation_kwargs")
        norm_kws = _kwargs_list(norm_kwargs, n_act, "norm_kwargs")
        lay_kws = _kwargs_list(layer_kwargs, len(cells) + 1, "layer_kwargs")
        if activation_class is nn.Tanh:
            activation_class = FastTanh  # same function, faster CPU kernel
        layers: list[nn.Module] = []
        sizes = [in_features, *cells]
        widths = [*cells, out_size]
        for i, width in enumerate(widths):
            lay_kw = dict(lay_kws[i])
            bias = lay_kw.pop("bias", bias_last_layer if i == len(cells) else True)
            layers.append(_linear(layer_class, sizes[i], width, device, lay_kw, bias))
            if i < len(cells) or activate_last_layer:
                if dropout is not None:
                    layers.append(nn.Dropout(dropout))
                if norm_class is not None:
                    layers.append(_on_device(norm_class(**norm_kws[i]), device))
                layers.append(_on_device(activation_class(**act_kws[i]), device))
        super().__init__(*layers)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Concatenates the inputs along the last dim and runs the layers.

        Plain CPU float32/float64 MLPs (``nn.Linear`` layers with tanh/ReLU activations, no
        module hooks, outside ``torch.compile``/``vmap``/autocast/tracing) run as one fused
        autograd node with the same results and gradients (see :func:`_fused_mlp`); anything
        else runs layer by layer. ``rl_trainers.fast.FUSE_MLP = False`` turns the fused path off.
        A bool or integer input (the one-hot observation of a ``Discrete`` space, a
        ``MultiBinary`` one) is cast to the default float dtype first.
        """
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        out = _fused_mlp(self, x)
        if out is not None:
            x = out
        else:
            for layer in self:
                x = layer(x)
        if self.out_shape is not None:
            x = x.reshape(*x.shape[:-1], *self.out_shape)
        return x


def _kwargs_list(kwargs, n: int, name: str) -> list[dict]:
    """One keyword dict per layer: ``kwargs`` repeated, or a list of ``n`` of them (torchrl's
    per-layer form)."""
    if kwargs is None:
        return [{} for _ in range(n)]
    if isinstance(kwargs, dict):
        return [dict(kwargs) for _ in range(n)]
    kwargs = list(kwargs)
    if len(kwargs) != n:
        raise ValueError(f"{name} has {len(kwargs)} entries, expected {n} (one per layer)")
    return [dict(k) for k in kwargs]


def _on_device(module: nn.Module, device) -> nn.Module:
    return module.to(device) if device is not None and isinstance(module, nn.Module) else module


def _linear(layer_class, n_in, n_out, device, kwargs, bias):
    if n_in is None:
        if layer_class is nn.Linear:
            return nn.LazyLinear(n_out, bias=bias, device=device, **kwargs)
        if layer_class is NoisyLinear:
            return NoisyLazyLinear(n_out, bias=bias, device=device, **kwargs)
        raise ValueError(
            "in_features=None needs layer_class=nn.Linear or NoisyLinear (their lazy "
            f"versions), got {layer_class!r}"
        )
    return layer_class(n_in, n_out, bias=bias, device=device, **kwargs)


class SquashDims(nn.Module):
    """Flattens the last ``ndims_in`` dimensions into one."""

    def __init__(self, ndims_in: int = 3) -> None:
        super().__init__()
        self.ndims_in = ndims_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(-self.ndims_in, -1)


class ConvNet(nn.Sequential):
    """A stack of 2D convolutions with a lazily inferred number of input channels.

    Inputs are ``[*B, C, H, W]``; any number of leading batch dims is accepted. The output is
    flattened to ``[*B, features]`` (or squeezed to ``[*B, C_out]`` with ``squeeze_output`` and
    a global aggregator).

    Args:
        in_features: input channels; ``None`` infers them on the first call.
        depth: number of conv layers when ``num_cells`` is an int.
        num_cells: output channels per layer.
        kernel_sizes: kernel size per layer (or one for all).
        strides: stride per layer (or one for all).
        paddings: padding per layer (or one for all).
        activation_class: activation after each conv.
        activation_kwargs: keyword arguments of the activation.
        norm_class: optional normalisation after each conv.
        norm_kwargs: keyword arguments of the normalisation.
        bias_last_layer: whether the last conv has a bias.
        aggregator_class: module applied after the convs (default: flatten C, H, W).
        aggregator_kwargs: keyword arguments of the aggregator.
        squeeze_output: squeeze singleton spatial dims left by the aggregator.
        device: device of the parameters.
    """

    def __init__(
        self,
        in_features: int | None = None,
        depth: int | None = None,
        num_cells: int | Sequence[int] | None = None,
        kernel_sizes: int | Sequence[int] = 3,
        strides: int | Sequence[int] = 1,
        paddings: int | Sequence[int] = 0,
        activation_class: type[nn.Module] = nn.ELU,
        activation_kwargs: dict | None = None,
        norm_class: type[nn.Module] | None = None,
        norm_kwargs: dict | None = None,
        bias_last_layer: bool = True,
        aggregator_class: type[nn.Module] | None = SquashDims,
        aggregator_kwargs: dict | None = None,
        squeeze_output: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        if num_cells is None:
            num_cells = [32, 32, 32]
        if isinstance(num_cells, Sequence):
            cells = [int(c) for c in num_cells]
        else:
            if depth is None:  # torchrl takes the depth from any per-layer list
                lists = [v for v in (kernel_sizes, strides, paddings) if _is_list(v)]
                depth = len(lists[0]) if lists else None
            if depth is None:
                raise ValueError(
                    "ConvNet with an int num_cells needs depth (or a per-layer list of "
                    "kernel_sizes, strides or paddings)"
                )
            cells = [int(num_cells)] * depth
        n = len(cells)
        kernels = _as_list(kernel_sizes, n, "kernel_sizes")
        strides_ = _as_list(strides, n, "strides")
        pads = _as_list(paddings, n, "paddings")
        act_kws = _kwargs_list(activation_kwargs, n, "activation_kwargs")
        norm_kws = _kwargs_list(norm_kwargs, n, "norm_kwargs")
        layers: list[nn.Module] = []
        prev = in_features
        for i, ch in enumerate(cells):
            bias = bias_last_layer if i == n - 1 else True
            if prev is None:
                conv = nn.LazyConv2d(ch, kernels[i], strides_[i], pads[i], bias=bias, device=device)
            else:
                conv = nn.Conv2d(
                    prev, ch, kernels[i], strides_[i], pads[i], bias=bias, device=device
                )
            layers.append(conv)
            layers.append(_on_device(activation_class(**act_kws[i]), device))
            if norm_class is not None:
                layers.append(_on_device(norm_class(**norm_kws[i]), device))
            prev = ch
        if aggregator_class is not None:
            kw = aggregator_kwargs if aggregator_kwargs is not None else {}
            if aggregator_class is SquashDims and not kw:
                kw = {"ndims_in": 3}
            layers.append(aggregator_class(**kw))
        self.squeeze_output = squeeze_output
        super().__init__(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Runs the convs over ``[*B, C, H, W]`` inputs."""
        if x.dim() < 3:
            raise ValueError(f"ConvNet expects inputs shaped [*B, C, H, W], got {tuple(x.shape)}")
        batch = x.shape[:-3]
        x = x.reshape(-1, *x.shape[-3:])
        for layer in self:
            x = layer(x)
        if self.squeeze_output:
            while x.dim() > 2 and x.shape[-1] == 1:
                x = x.squeeze(-1)
        return x.reshape(*batch, *x.shape[1:])


class DuelingCnnDQNet(nn.Module):
    """Dueling Q-network: a CNN trunk, then advantage and value MLP heads.

    ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)``.

    Args:
        out_features: number of actions.
        out_features_value: size of the value head (1).
        cnn_kwargs: keyword arguments of the :class:`ConvNet` trunk.
        mlp_kwargs: keyword arguments of both :class:`MLP` heads.
        device: device of the parameters.
    """

    def __init__(
        self,
        out_features: int,
        out_features_value: int = 1,
        cnn_kwargs: dict | None = None,
        mlp_kwargs: dict | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        cnn_kw = {"num_cells": [32, 64, 64], "kernel_sizes": [8, 4, 3], "strides": [4, 2, 1]}
        cnn_kw.update(cnn_kwargs or {})
        mlp_kw = {"depth": 1, "num_cells": 512, "activation_class": nn.ELU}
        mlp_kw.update(mlp_kwargs or {})
        mlp_kw.pop("out_features", None)
        self.features = ConvNet(device=device, **cnn_kw)
        self.advantage = MLP(out_features=out_features, device=device, **mlp_kw)
        self.value = MLP(out_features=out_features_value, device=device, **mlp_kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns action values ``[*B, out_features]``."""
        h = self.features(x)
        adv = self.advantage(h)
        return self.value(h) + adv - adv.mean(-1, keepdim=True)


def _register_submodules() -> None:
    """``rl_trainers.modules.models.batchrenorm`` (torchrl's import path) names the module
    :mod:`rl_trainers.modules.batchrenorm`."""
    import sys

    from rl_trainers.modules import batchrenorm

    sys.modules.setdefault(f"{__name__}.batchrenorm", batchrenorm)
    globals()["batchrenorm"] = batchrenorm


_register_submodules()
