"""Distributional (C51) Q-value actors: action values as log-probabilities over a support.

A network writes ``action_value`` ``[*B, atoms, n]``: for each of the ``n`` actions, the
log-probabilities of the return taking each of the ``atoms`` values of ``support``. The greedy
action maximises the expected return ``sum_k support[k] * p[k, a]`` (Bellemare et al. 2017).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, dispatch
from torch import nn

from rl_trainers.modules.actors import discrete_kind, greedy_action

__all__ = ["DistributionalQValueModule", "DistributionalQValueActor", "expected_action_values"]

NestedKey = str | tuple


def expected_action_values(log_probs: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """``[*B, n]`` expected returns of log-probabilities ``[*B, atoms, n]`` over ``support``."""
    if log_probs.shape[-2] != support.shape[-1]:
        raise RuntimeError(
            f"the action values have {log_probs.shape[-2]} atoms (dim -2) but the support "
            f"{support.shape[-1]}"
        )
    support = support.to(log_probs.device, log_probs.dtype)
    return (log_probs.exp() * support.unsqueeze(-1)).sum(-2)


class DistributionalQValueModule(TensorDictModuleBase):
    """The greedy action of distributional action values (torchrl's
    ``DistributionalQValueModule``).

    Reads ``action_value_key`` (log-probabilities ``[*B, atoms, n]``), writes ``out_keys``
    (``["action", action_value_key]``). Works on tensordicts and on tensors.

    Args:
        action_space: ``"one_hot"``/``"categorical"`` or an action spec.
        support: the return values of the atoms ``[atoms]``.
        action_value_key: key of the action values (``"action_value"``).
        out_keys: the two output keys.
        var_nums: torchrl's multi-one-hot cardinalities (not supported; must be None).
        spec: the action spec (or a composite with an ``"action"`` entry).
        safe: torchrl's projection onto the spec (greedy actions always lie in it).
    """

    def __init__(
        self,
        action_space,
        support: torch.Tensor,
        action_value_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        var_nums: int | None = None,
        spec=None,
        safe: bool = False,
    ) -> None:
        super().__init__()
        if var_nums is not None:
            raise NotImplementedError("var_nums (mult-one-hot actions) is not supported")
        self.action_space, self.spec = discrete_kind(action_space, spec, type(self).__name__)
        self.safe = safe
        action_value_key = "action_value" if action_value_key is None else action_value_key
        self.in_keys = [action_value_key]
        self.out_keys = ["action", action_value_key] if out_keys is None else list(out_keys)
        self.register_buffer("support", torch.as_tensor(support).clone())
        self._action_dtype = getattr(self.spec, "dtype", None)

    @property
    def action_value_key(self) -> NestedKey:
        return self.in_keys[0]

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        log_probs = tensordict.get(self.action_value_key)
        if (log_probs > 0).any():
            raise ValueError(
                "the distributional action values must be log-probabilities (non-positive), "
                f"got a maximum of {log_probs.max():.4f}"
            )
        values = expected_action_values(log_probs, self.support)
        action, _ = greedy_action(values, self.action_space, self._action_dtype)
        tensordict.update(dict(zip(self.out_keys, (action, log_probs))))
        return tensordict


class DistributionalQValueActor(TensorDictModuleBase):
    """A network followed by :class:`DistributionalQValueModule` (torchrl's
    ``DistributionalQValueActor``); the loss is
    :class:`~rl_trainers.objectives.DistributionalDQNLoss`.

    Args:
        module: network mapping the inputs to ``[*B, atoms, n]`` scores (or a tensordict
            module writing ``action_value_key``).
        support: the return values of the atoms ``[atoms]``.
        in_keys: input keys (``["observation"]``).
        spec: the action spec (OneHot or Categorical).
        safe: torchrl's option (greedy actions always lie in the spec).
        var_nums: not supported (must be None).
        action_space: ``"one_hot"``/``"categorical"`` when no spec is given.
        action_value_key: key of the action values (``"action_value"``).
        make_log_softmax: apply ``log_softmax`` over the atoms (dim -2) to the scores.
    """

    def __init__(
        self,
        module: nn.Module,
        support: torch.Tensor,
        in_keys: Sequence[NestedKey] | None = None,
        spec=None,
        safe: bool = False,
        var_nums: int | None = None,
        action_space=None,
        action_value_key: NestedKey = "action_value",
        make_log_softmax: bool = True,
    ) -> None:
        super().__init__()
        if isinstance(module, TensorDictModuleBase):
            if action_value_key not in module.out_keys:
                raise KeyError(f"The key '{action_value_key}' is not part of the module out-keys.")
        else:
            in_keys = ["observation"] if in_keys is None else list(in_keys)
            module = TensorDictModule(module, in_keys=in_keys, out_keys=[action_value_key])
        self.module = module
        self.qvalue = DistributionalQValueModule(
            action_space,
            support,
            action_value_key=action_value_key,
            var_nums=var_nums,
            spec=spec,
            safe=safe,
        )
        self.action_space = self.qvalue.action_space
        self.spec = self.qvalue.spec
        self.action_value_key = action_value_key
        self.make_log_softmax = make_log_softmax
        self.in_keys = list(module.in_keys)
        self.out_keys = ["action", action_value_key]

    @property
    def support(self) -> torch.Tensor:
        return self.qvalue.support

    def log_probs(self, tensordict: TensorDictBase) -> torch.Tensor:
        """The log-probabilities ``[*B, atoms, n]`` without writing anything."""
        scores = self.module(tensordict.select(*self.in_keys)).get(self.action_value_key)
        return scores.log_softmax(-2) if self.make_log_softmax else scores

    def action_values(self, tensordict: TensorDictBase) -> torch.Tensor:
        """The expected returns ``[*B, n]`` of the actions."""
        return expected_action_values(self.log_probs(tensordict), self.support)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set(self.action_value_key, self.log_probs(tensordict))
        return self.qvalue(tensordict)
