"""Plain torch networks: MLP, ConvNet and the dueling Q-network.

Input sizes are inferred lazily (``nn.LazyLinear`` / ``nn.LazyConv2d``) when not given, so a
user never types an observation size: the first forward pass fixes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch
from torch import nn

from rl_trainers import fast
from rl_trainers.fast.mlp import SEQUENTIAL_FORWARDS, fused_mlp
from rl_trainers.fast.tanh import FastTanh
from rl_trainers.modules.noisy import NoisyLazyLinear, NoisyLinear

__all__ = ["MLP", "ConvNet", "DuelingCnnDQNet", "SquashDims", "FastTanh"]


def torch_kernels() -> contextlib.AbstractContextManager[None]:
    """Inside the block, networks run layer by layer on torch's own kernels (no numpy
    ``tanh``, no fused MLP, :mod:`rl_trainers.fast`): the ops an exported graph
    (``torch.export``, TorchScript) of the same network runs, so its outputs agree bit for
    bit."""
    return fast.plain("FUSE_MLP", "NUMPY_TANH")


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
        autograd node with the same results and gradients (:func:`rl_trainers.fast.mlp.fused_mlp`);
        anything else runs layer by layer. ``rl_trainers.fast.FUSE_MLP = False`` turns the
        fused path off.
        A bool or integer input (the one-hot observation of a ``Discrete`` space, a
        ``MultiBinary`` one) is cast to the default float dtype first.
        """
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        out = fused_mlp(self, x)  # the fast path, or None
        if out is not None:
            x = out
        else:
            for layer in self:
                x = layer(x)
        if self.out_shape is not None:
            x = x.reshape(*x.shape[:-1], *self.out_shape)
        return x


SEQUENTIAL_FORWARDS.add(MLP.forward)  # its layers, in order: the fused paths may take it


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
    """torchrl's import paths ``rl_trainers.modules.models.batchrenorm`` and
    ``rl_trainers.modules.models.utils`` name the modules :mod:`rl_trainers.modules.batchrenorm`
    and :mod:`rl_trainers.modules.models_utils`."""
    import sys

    from rl_trainers.modules import batchrenorm, models_utils

    for name, module in (("batchrenorm", batchrenorm), ("utils", models_utils)):
        sys.modules.setdefault(f"{__name__}.{name}", module)
        globals()[name] = module


_register_submodules()
