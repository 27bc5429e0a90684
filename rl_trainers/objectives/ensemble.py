"""Several copies of a critic evaluated in one batched call.

Plain MLPs (Linear layers and elementwise activations) run as one ``matmul``/``baddbmm`` per
layer over a leading ``[num]`` dim; any other network falls back to
``torch.func.vmap(functional_call)``. Parameters live stacked on this module, so a buffer
copy of it (:func:`~rl_trainers.objectives.common.buffer_copy`) is a ready target network.

On CPU, ReLU/tanh MLPs run as one autograd node, the fast path of
:mod:`rl_trainers.fast.ensemble` (switch ``FUSE_MLP``); this module decides where it applies
(:meth:`CriticEnsemble._fused_params`).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from rl_trainers import fast
from rl_trainers.fast.ensemble import ensemble_activation_codes, fused_ensemble
from rl_trainers.fast.mlp import GLOBAL_HOOKS, fusable_input, has_hooks
from rl_trainers.objectives.common import ParamsView, _has_uninitialized

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


class CriticEnsemble(ParamsView, nn.Module):
    """``num`` independently initialised copies of ``template`` evaluated together.

    Args:
        template: the critic network (tensors in, ``[*B, 1]`` out); its inputs are
            concatenated along the last dim when it is a plain MLP.
        num: number of copies.
        reinit: re-initialise copies after the first (so the copies differ).

    With ``num=1`` (DDPG's critic, for instance) the template's own tensors become views of
    the stacked ones, so training the ensemble trains the module a user passed in, as a
    torchrl loss trains its critic's own parameters (they share storage; a later
    ``.to(...)`` of one side unties them). With more copies the template only gives the
    architecture and the first copy's initial values, as in torchrl.

    As a loss's ``qvalue_network_params`` it also reads as torchrl's TensorDict of stacked
    parameters (:class:`~rl_trainers.objectives.common.ParamsView`).
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
        self._plain_mlp = layers is not None
        if self._plain_mlp:
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
            self._act_codes = ensemble_activation_codes(self._plan, acts)
            self._has_bias = tuple(b for kind, _, b in self._plan if kind == "linear")
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
        if num == 1:
            self._share_storage_with(template, layers)

    def _share_storage_with(self, template: nn.Module, layers: list | None) -> None:
        """Makes ``template``'s parameters (and buffers) views of this single copy's."""
        if layers is not None:
            pairs = []
            i = 0
            for layer in layers:
                if isinstance(layer, nn.Linear):
                    pairs.append((layer.weight, getattr(self, f"weight{i}")))
                    if layer.bias is not None:
                        pairs.append((layer.bias, getattr(self, f"bias{i}")))
                    i += 1
        else:
            own = dict(template.named_parameters()) | dict(template.named_buffers())
            pairs = [(own[n], getattr(self, f"p{j}")) for j, n in enumerate(self._names)]
            pairs += [(own[n], getattr(self, f"b{j}")) for j, n in enumerate(self._buffer_names)]
        for theirs, stacked in pairs:
            theirs.data = stacked.data[0]  # .data: no autograd record, same storage

    def train(self, mode: bool = True) -> CriticEnsemble:
        """Sets the mode of the copies too (batch-norm critics: batch statistics and
        running-stat updates in training mode, running statistics in eval mode)."""
        super().train(mode)
        base = self.__dict__.get("_base")
        if base is not None:
            base.train(mode)
        return self

    def forward(self, *inputs: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """Returns ``[num, *B, out]``; ``detach=True`` blocks gradients to the parameters."""
        if self._plain_mlp:
            return self._mlp_forward(inputs, detach)
        params = {n: getattr(self, f"p{j}") for j, n in enumerate(self._names)}
        if detach:
            params = {k: v.detach() for k, v in params.items()}
        buffers = {n: getattr(self, f"b{j}") for j, n in enumerate(self._buffer_names)}

        def call(p, b):
            return functional_call(self._base, (p, b), inputs)

        return vmap(call, in_dims=(0, 0), randomness="different")(params, buffers)

    def _fused_params(self, x: torch.Tensor, detach: bool) -> list[torch.Tensor] | None:
        """The stacked parameters for the fused ensemble
        (:func:`rl_trainers.fast.ensemble.fused_ensemble`), or None when it cannot run."""
        if not (fast.FUSE_MLP and self._act_codes is not None and fusable_input(x)):
            return None
        if any(GLOBAL_HOOKS) or any(has_hooks(a) for a in self.acts):
            return None
        params = []
        for i, has_bias in enumerate(self._has_bias):
            params.append(getattr(self, f"weight{i}"))
            if has_bias:
                params.append(getattr(self, f"bias{i}"))
        if any(p.dtype != x.dtype or p.device != x.device for p in params):
            return None
        return [p.detach() for p in params] if detach else params

    def _mlp_forward(self, inputs, detach: bool) -> torch.Tensor:
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
        batch = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
        n = self.num
        params = self._fused_params(x, detach)
        if params is not None:  # the fast path
            out = fused_ensemble(self._act_codes, self._has_bias, x, params)
            return out.reshape(n, *batch, out.shape[-1])
        shared = True  # x has no leading [num] dim yet
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
