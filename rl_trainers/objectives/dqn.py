"""Deep Q-learning loss (Mnih et al. 2015), with optional double-DQN targets.

``y = r + gamma_n * (1 - terminated) * Q'(s', argmax_a Q(s', a))`` (double DQN) or
``max_a Q'(s', a)`` (plain), where ``gamma_n`` honours multi-step batches (see
:func:`~rl_trainers.objectives.common.discount`); ``loss = mean(distance(Q(s, a), y))``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import (
    LossModule,
    check_loss_function,
    discount,
    distance_loss,
    stack_current_next,
)

__all__ = ["DQNLoss"]


def _unwrap_qactor(network: nn.Module) -> nn.Module:
    while not hasattr(network, "action_values") and hasattr(network, "td_module"):
        network = network.td_module
    if not hasattr(network, "action_values"):
        raise TypeError(
            f"DQNLoss needs a QValueActor (or an exploration wrapper around one), got {type(network).__name__}"
        )
    return network


class DQNLoss(LossModule):
    """DQN loss over a :class:`~rl_trainers.modules.QValueActor`.

    Args:
        value_network: the Q-value actor (an EGreedyWrapper around it is unwrapped).
        loss_function: ``"l2"``, ``"smooth_l1"`` or ``"l1"``.
        delay_value: keep a target network (update it with SoftUpdate/HardUpdate).
        double_dqn: choose next actions with the online network, value them with the target.
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        action_space: ``"one_hot"`` or ``"categorical"`` (read from the actor by default).
        priority_key: key where per-sample TD errors are written (for prioritized replay).
    """

    def __init__(
        self,
        value_network: nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        double_dqn: bool = False,
        gamma: float | None = None,
        action_space: str | None = None,
        priority_key: str = "td_error",
    ) -> None:
        super().__init__()
        self.value_network = _unwrap_qactor(value_network)
        self.loss_function = check_loss_function(loss_function)
        self.delay_value = delay_value
        self.double_dqn = double_dqn
        self.action_space = action_space or self.value_network.action_space
        self.priority_key = priority_key
        self._target_ready = False
        if gamma is not None:
            self.gamma = float(gamma)
        if delay_value:
            try:
                self._register_target("value_network", self.value_network)
                self._target_ready = True
            except RuntimeError:
                self._target_names.append("value_network")  # lazy layers: copy on first forward

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

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = tensordict
        batch = td.batch_size
        n = batch[0] if len(batch) else 1
        keys = self.value_network.in_keys
        if self.double_dqn:
            both = self.value_network.action_values(stack_current_next(td, keys))
            values, next_online = both[:n], both[n:].detach()
        else:
            values = self.value_network.action_values(td)
            next_online = None
        if self.delay_value:
            self._ensure_target()
        chosen = self._chosen(values, td.get("action"))
        with torch.no_grad():
            target_net = (
                self.target_value_network_params if self.delay_value else self.value_network
            )
            next_values = target_net.action_values(td.get("next"))
            if self.double_dqn:
                index = next_online.argmax(-1, keepdim=True)
                next_value = next_values.gather(-1, index)
            else:
                next_value = next_values.max(-1, keepdim=True).values
            reward = td.get(("next", "reward"))
            terminated = td.get(("next", "terminated"), None)
            if terminated is None:
                terminated = td.get(("next", "done"))
            not_term = (~terminated.bool()).to(reward.dtype).reshape(reward.shape)
            target = reward + discount(td, self.gamma, reward) * not_term * next_value.reshape(
                reward.shape
            )
            td_error = (chosen - target.reshape(chosen.shape)).abs()
            if not td.is_locked:
                td.set(self.priority_key, td_error.reshape(batch))
        loss = distance_loss(chosen, target.reshape(chosen.shape), self.loss_function)
        weight = td.get("_weight", None)
        if weight is not None:
            loss = loss * weight.reshape(loss.shape)
        return TensorDict(
            {
                "loss": loss.mean(),
                "q_mean": chosen.detach().mean(),
                "td_error": td_error.mean(),
            },
            batch_size=[],
        )
