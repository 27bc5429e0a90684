"""Several copies of a critic evaluated in one batched call.

Plain MLPs (Linear layers and elementwise activations) run as one ``matmul``/``baddbmm`` per
layer over a leading ``[num]`` dim; any other network falls back to
``torch.func.vmap(functional_call)``. Parameters live stacked on this module, so a buffer
copy of it (:func:`~rl_trainers.objectives.common.buffer_copy`) is a ready target network.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from rl_trainers.objectives.common import _has_uninitialized

__all__ = ["CriticEnsemble"]

_ELEMENTWISE = (
    nn.ReLU,
    nn.Tanh,
    nn.ELU,
    nn.LeakyReLU,
    nn.SiLU,
    nn.GELU,
    nn.Sigmoid,
    nn.Softplus,
    nn.Mish,
    nn.Identity,
)


def _flatten(module: nn.Module) -> list[nn.Module] | None:
    """The layer list of a plain MLP, or None if the network is anything else."""
    if isinstance(module, nn.Sequential):
        if getattr(module, "out_shape", None) is not None:
            return None
        layers: list[nn.Module] = []
        for sub in module:
            flat = _flatten(sub)
            if flat is None:
                return None
            layers += flat
        return layers
    if type(module) is nn.Linear or isinstance(module, _ELEMENTWISE):
        return [module]
    return None


def _reinit(module: nn.Module) -> None:
    for sub in module.modules():
        if hasattr(sub, "reset_parameters"):
            sub.reset_parameters()


class CriticEnsemble(nn.Module):
    """``num`` independently initialised copies of ``template`` evaluated together.

    Args:
        template: the critic network (tensors in, ``[*B, 1]`` out); its inputs are
            concatenated along the last dim when it is a plain MLP.
        num: number of copies.
        reinit: re-initialise copies after the first (so the copies differ).
    """

    def __init__(self, template: nn.Module, num: int = 2, reinit: bool = True) -> None:
        super().__init__()
        if num < 1:
            raise ValueError(f"num_qvalue_nets must be >= 1, got {num}")
        if _has_uninitialized(template):
            raise RuntimeError(
                "the critic has uninitialized lazy layers: give in_features (make_qvalue does) "
                "or run it once on a batch before building the loss"
            )
        self.num = num
        copies = [template] + [copy.deepcopy(template) for _ in range(num - 1)]
        if reinit:
            for c in copies[1:]:
                _reinit(c)
        layers = _flatten(template)
        self._fast = layers is not None
        if self._fast:
            self._plan: list = []
            i = 0
            acts = nn.ModuleList()
            for layer in layers:
                if isinstance(layer, nn.Linear):
                    idx = layers.index(layer)
                    w = torch.stack([_flatten(c)[idx].weight.detach() for c in copies])
                    self.register_parameter(f"weight{i}", nn.Parameter(w.clone()))
                    if layer.bias is not None:
                        b = torch.stack([_flatten(c)[idx].bias.detach() for c in copies])
                        self.register_parameter(f"bias{i}", nn.Parameter(b.clone()))
                    self._plan.append(("linear", i, layer.bias is not None))
                    i += 1
                elif not isinstance(layer, nn.Identity):
                    acts.append(layer)
                    self._plan.append(("act", len(acts) - 1, None))
            self.acts = acts
        else:
            params, buffers = stack_module_state(copies)
            self._names = list(params)
            for j, name in enumerate(self._names):
                self.register_parameter(f"p{j}", nn.Parameter(params[name].detach().clone()))
            self._buffer_names = list(buffers)
            for j, name in enumerate(self._buffer_names):
                self.register_buffer(f"b{j}", buffers[name].clone())
            base = copy.deepcopy(template).to("meta")
            self.__dict__["_base"] = base

    def forward(self, *inputs: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """Returns ``[num, *B, out]``; ``detach=True`` blocks gradients to the parameters."""
        if self._fast:
            return self._fast_forward(inputs, detach)
        params = {n: getattr(self, f"p{j}") for j, n in enumerate(self._names)}
        if detach:
            params = {k: v.detach() for k, v in params.items()}
        buffers = {n: getattr(self, f"b{j}") for j, n in enumerate(self._buffer_names)}

        def call(p, b):
            return functional_call(self._base, (p, b), inputs)

        return vmap(call, in_dims=(0, 0), randomness="different")(params, buffers)

    def _fast_forward(self, inputs, detach: bool) -> torch.Tensor:
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
        shared = True  # x has no leading [num] dim yet
        batch = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
        n = self.num
        for kind, i, has_bias in self._plan:
            if kind == "act":
                x = self.acts[i](x)
                continue
            w = getattr(self, f"weight{i}")
            b = getattr(self, f"bias{i}") if has_bias else None
            if detach:
                w = w.detach()
                b = None if b is None else b.detach()
            if shared:
                out_f = w.shape[1]
                y = x @ w.reshape(n * out_f, -1).t()  # [N, n * out]
                if b is not None:
                    y = y + b.reshape(-1)
                x = y.reshape(-1, n, out_f).transpose(0, 1)  # [n, N, out]
                shared = False
            elif b is not None:
                x = torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))
            else:
                x = torch.bmm(x, w.transpose(1, 2))
        if shared:
            x = x.expand(n, *x.shape)
        return x.reshape(n, *batch, x.shape[-1])
