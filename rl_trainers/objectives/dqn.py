"""Deep Q-learning loss (Mnih et al. 2015), with optional double-DQN targets.

``y = r + gamma_n * (1 - terminated) * Q'(s', argmax_a Q(s', a))`` (double DQN) or
``max_a Q'(s', a)`` (plain), where ``gamma_n`` honours multi-step batches (see
:func:`~rl_trainers.objectives.common.discount`); ``loss = mean(distance(Q(s, a), y))``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from torch import nn

from rl_trainers.fast.mlp import (
    GLOBAL_HOOKS,
    fused_mlp_parts,
    has_hooks,
    mlp_backward,
    mlp_forward,
)
from rl_trainers.modules.actors import QValueActor, discrete_kind
from rl_trainers.modules.models import MLP
from rl_trainers.objectives.common import (
    OFF_POLICY_KEYS,
    LossModule,
    check_loss_function,
    check_torchrl_options,
    current_and_next,
    distance_loss,
    gradient_buffers,
    next_step,
    one_step_target,
    params_view,
    transition_in_keys,
)

__all__ = ["DQNLoss"]


class _ActionValueNetwork(nn.Module):
    """A tensordict module writing ``"action_value"`` (e.g. torchrl's
    ``TensorDictSequential(TensorDictModule(net, out_keys=["action_value"]),
    QValueModule(...))``) seen through the QValueActor interface the loss uses."""

    def __init__(self, module: TensorDictModuleBase, action_value_key, action_space) -> None:
        super().__init__()
        self.module = module
        self.action_value_key = action_value_key
        self.action_space = action_space
        self.in_keys = [k for k in module.in_keys if k != action_value_key]

    def action_values(self, tensordict: TensorDictBase) -> torch.Tensor:
        return self.module(tensordict.select(*self.in_keys)).get(self.action_value_key)


def _unwrap_qactor(network: nn.Module, action_space) -> nn.Module:
    while not hasattr(network, "action_values") and hasattr(network, "td_module"):
        network = network.td_module
    if hasattr(network, "action_values"):
        return network
    if isinstance(network, TensorDictSequential):  # e.g. (QValueActor, EGreedyModule)
        first = network.module[0]
        if hasattr(first, "action_values") and len(network.module) > 1:
            if all(not list(m.parameters()) for m in network.module[1:]):
                return first
    if isinstance(network, TensorDictModuleBase) and "action_value" in network.out_keys:
        if action_space is None:  # read from a QValueModule inside
            found = (getattr(m, "action_space", None) for m in network.modules())
            action_space = next((a for a in found if isinstance(a, str)), None)
        if action_space is None:
            raise ValueError("DQNLoss: give action_space ('one_hot' or 'categorical')")
        return _ActionValueNetwork(network, "action_value", action_space)
    raise TypeError(
        "DQNLoss needs a QValueActor (or an exploration wrapper around one), or a tensordict "
        f"module writing 'action_value', got {type(network).__name__}"
    )


class DQNLoss(LossModule):
    """DQN loss over a :class:`~rl_trainers.modules.QValueActor`.

    Args:
        value_network: the Q-value actor (an EGreedyWrapper, or a ``TensorDictSequential``
            of it and an exploration module, is unwrapped), or any tensordict module
            writing ``"action_value"``.
        loss_function: ``"l2"``, ``"smooth_l1"`` or ``"l1"``.
        delay_value: keep a target network (update it with SoftUpdate/HardUpdate).
        double_dqn: choose next actions with the online network, value them with the target.
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        action_space: ``"one_hot"``, ``"categorical"`` or the action spec (read from the
            actor by default).
        priority_key: key where per-sample TD errors are written (for prioritized replay).
        reduction: torchrl's option, accepted at ``"mean"`` (or None).
    """

    one_step_targets = True
    _key_attrs = OFF_POLICY_KEYS
    _dispatch_exclude = ("q_mean", "td_error")

    def __init__(
        self,
        value_network: nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        double_dqn: bool = False,
        gamma: float | None = None,
        action_space=None,
        priority_key: str | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        check_torchrl_options(1, (), reduction)
        if action_space is not None:
            action_space, _ = discrete_kind(action_space, None, "DQNLoss")
        self.value_network = _unwrap_qactor(value_network, action_space)
        self.loss_function = check_loss_function(loss_function)
        self.delay_value = delay_value
        self.double_dqn = double_dqn
        self.action_space = action_space or self.value_network.action_space
        self.priority_key = "td_error" if priority_key is None else priority_key
        self._target_ready = False
        if gamma is not None:
            self.gamma = float(gamma)
        if delay_value:
            try:
                self._register_target("value_network", self.value_network)
                self._target_ready = True
            except RuntimeError:
                self._target_names.append("value_network")  # lazy layers: copy on first forward

    @property
    def value_network_params(self):
        """The Q-network's parameters as a TensorDict (torchrl's ``value_network_params``)."""
        return params_view(self.value_network)

    @property
    def _q_in_keys(self) -> list:
        """The batch entries the Q-network reads."""
        return getattr(self.value_network, "_net_keys", self.value_network.in_keys)

    @property
    def in_keys(self) -> list:
        """The batch entries :meth:`forward` reads."""
        return transition_in_keys(self._q_in_keys, loss=self)

    def _default_out_keys(self) -> list[str]:
        """The entries :meth:`forward` writes."""
        return ["loss", "q_mean", "td_error"]

    def target_pairs(self):
        self._ensure_target()
        return super().target_pairs()

    def _ensure_target(self) -> None:
        if self.delay_value and not self._target_ready:
            self._target_names.remove("value_network")
            self._register_target("value_network", self.value_network)
            self._target_ready = True

    def _chosen(self, values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        if self.action_space == "one_hot":
            return (values * action.to(values.dtype)).sum(-1, keepdim=True)
        return values.gather(-1, action.long().reshape(*values.shape[:-1], 1))

    def _q_terms(self, td: TensorDictBase) -> tuple[torch.Tensor, ...]:
        """``(Q(s, .), Q(s, a), target, |Q(s, a) - target|)``, the last three shaped
        ``[*batch, 1]``; writes the per-sample errors at ``priority_key``."""
        batch = td.batch_size
        if self.double_dqn:
            values, next_online = current_and_next(
                self.value_network.action_values, td, self._q_in_keys, self.value_network
            )
            next_online = next_online.detach()
        else:
            values = self.value_network.action_values(td)
            next_online = None
        if self.delay_value:
            self._ensure_target()
        chosen = self._chosen(values, td.get(self.action_key))
        with torch.no_grad():
            target_net = (
                self.target_value_network_params if self.delay_value else self.value_network
            )
            next_values = target_net.action_values(next_step(td, self._q_in_keys))
            if self.double_dqn:
                index = next_online.argmax(-1, keepdim=True)
                next_value = next_values.gather(-1, index)
            else:
                next_value = next_values.max(-1, keepdim=True).values
            target = one_step_target(td, self.gamma, next_value, self)
            target = target.reshape(chosen.shape)
            td_error = (chosen - target).abs()
            if not td.is_locked:
                td.set(self.priority_key, td_error.reshape(batch))
        return values, chosen, target, td_error

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = tensordict
        _, chosen, target, td_error = self._q_terms(td)
        loss = distance_loss(chosen, target, self.loss_function)
        weight = td.get("_weight", None)
        if weight is not None:
            loss = loss * weight.reshape(loss.shape)
        return self._outputs(loss.mean(), chosen.detach(), td_error)

    @staticmethod
    def _outputs(loss: torch.Tensor, chosen: torch.Tensor, td_error: torch.Tensor) -> TensorDict:
        return TensorDict(
            {"loss": loss, "q_mean": chosen.mean(), "td_error": td_error.mean()}, batch_size=[]
        )

    # -- the autograd-free step (LossModule.loss_and_grads) ------------------------------------
    def _fused_parts(self, td: TensorDictBase) -> tuple | None:
        """``(x, acts, biases, params)`` when the Q-network is a :class:`QValueActor` over one
        fusable :class:`MLP` reading one key of a flat, unweighted batch; else None."""
        qnet = self.value_network
        if type(qnet) is not QValueActor or qnet._td_module or len(qnet._net_keys) != 1:
            return None
        mlp = qnet.module
        if not isinstance(mlp, MLP) or has_hooks(self) or has_hooks(qnet) or any(GLOBAL_HOOKS):
            return None
        if td.batch_dims != 1 or "_weight" in td.keys():
            return None
        x = td.get(qnet._net_keys[0])
        parts = fused_mlp_parts(mlp, x) if x.dim() == 2 else None
        if parts is None or not all(p.requires_grad for p in parts[2]):
            return None
        return (x, *parts)

    @torch.no_grad()
    def _next_value(self, td: TensorDictBase) -> torch.Tensor:
        """``max_a Q'(s', a)`` (double DQN: ``Q'(s', argmax_a Q(s', a))``), ``[*B, 1]``."""
        next_td = next_step(td, self._q_in_keys)
        if self.delay_value:
            self._ensure_target()
        target_net = self.target_value_network_params if self.delay_value else self.value_network
        next_values = target_net.action_values(next_td)
        if self.double_dqn:
            index = self.value_network.action_values(next_td).argmax(-1, keepdim=True)
            return next_values.gather(-1, index)
        return next_values.max(-1, keepdim=True).values

    def loss_and_grads(self, tensordict: TensorDictBase, loss_keys=None) -> TensorDictBase | None:
        """See :meth:`LossModule.loss_and_grads`: done for an MLP Q-network (the app's),
        whose forward and backward run as plain products (the fused MLP's maths,
        :mod:`rl_trainers.fast.mlp`), the loss's gradient with respect to ``Q(s, a)``
        written in closed form. None (then
        :meth:`forward` and ``backward()``) for other networks, weighted (prioritized)
        batches, or hooks."""
        if loss_keys is not None and list(loss_keys) != ["loss"]:
            return None
        if not torch.is_grad_enabled():
            return None
        td = tensordict
        parts = self._fused_parts(td)
        if parts is None:
            return None
        x, acts, biases, params = parts
        with torch.no_grad():
            saved: list[torch.Tensor] = []
            values = mlp_forward(x, acts, biases, params, saved)
            action = td.get(self.action_key)
            chosen = self._chosen(values, action)
            target = one_step_target(td, self.gamma, self._next_value(td), self)
            diff = chosen - target.reshape(chosen.shape)
            td_error = diff.abs()
            if not td.is_locked:
                td.set(self.priority_key, td_error.reshape(td.batch_size))
            loss = distance_loss(chosen, target.reshape(chosen.shape), self.loss_function)
            n = diff.shape[0]
            if self.loss_function == "l2":
                grad_chosen = diff * (2.0 / n)
            elif self.loss_function == "l1":
                grad_chosen = diff.sign() / n
            else:  # smooth_l1 (Huber, beta 1)
                grad_chosen = diff.clamp(-1.0, 1.0) / n
            if self.action_space == "one_hot":
                grad = action.to(values.dtype) * grad_chosen
            else:
                index = action.long().reshape(chosen.shape)
                grad = torch.zeros_like(values).scatter_(-1, index, grad_chosen)
            mlp_backward(
                grad,
                x,
                acts,
                biases,
                params,
                saved,
                False,
                [True] * len(params),
                out=gradient_buffers(params),
            )
        return self._outputs(loss.mean(), chosen, td_error)


def __getattr__(name: str):
    # torchrl defines DistributionalDQNLoss in objectives/dqn.py; here in .distributional_dqn
    if name == "DistributionalDQNLoss":
        from rl_trainers.objectives.distributional_dqn import DistributionalDQNLoss

        return DistributionalDQNLoss
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
