"""Distributional DQN loss (C51, Bellemare et al. 2017).

With ``z`` the support (``atoms`` values from ``v_min`` to ``v_max``), ``p(s, a)`` the
predicted return distribution and ``a* = argmax_a E[p(s', a)]`` chosen by the online
network, the target distribution is ``p'(s', a*)`` (target network) moved to
``r + gamma_n * (1 - terminated) * z``, clipped to ``[v_min, v_max]`` and split between the
two nearest atoms; the loss is its cross-entropy with ``log p(s, a)``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.modules.distributional import expected_action_values
from rl_trainers.objectives.common import (
    discount,
    next_step,
    reward_and_not_terminated,
)
from rl_trainers.objectives.dqn import DQNLoss

__all__ = ["DistributionalDQNLoss"]


def project_distribution(
    probs: torch.Tensor, returns: torch.Tensor, support: torch.Tensor
) -> torch.Tensor:
    """Projects the distribution putting mass ``probs`` ``[N, atoms]`` on ``returns``
    ``[N, atoms]`` onto the fixed ``support`` ``[atoms]`` (evenly spaced)."""
    atoms = support.shape[0]
    v_min, v_max = support[0], support[-1]
    pos = (returns.clamp(v_min, v_max) - v_min) / ((v_max - v_min) / (atoms - 1))
    lower, upper = pos.floor(), pos.ceil()
    # a return on an atom (lower == upper) keeps its whole mass there
    to_lower = probs * (upper - pos + (lower == upper).to(probs.dtype))
    to_upper = probs * (pos - lower)
    out = torch.zeros_like(probs)
    out.scatter_add_(-1, lower.long(), to_lower)
    out.scatter_add_(-1, upper.long(), to_upper)
    return out


class DistributionalDQNLoss(DQNLoss):
    """C51 loss over a :class:`~rl_trainers.modules.DistributionalQValueActor`.

    Args:
        value_network: the distributional Q-value actor (an exploration wrapper around it is
            unwrapped).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        delay_value: keep a target network (update it with SoftUpdate/HardUpdate).
        priority_key: key where the per-sample losses are written (prioritized replay).
        reduction: torchrl's option, accepted at ``"mean"`` (or None).
    """

    def __init__(
        self,
        value_network: nn.Module,
        *,
        gamma: float | None = None,
        delay_value: bool = True,
        priority_key: str | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            value_network,
            delay_value=delay_value,
            gamma=gamma,
            priority_key=priority_key,
            reduction=reduction,
        )
        if not hasattr(self.value_network, "log_probs"):
            raise TypeError(
                "DistributionalDQNLoss needs a DistributionalQValueActor, got "
                f"{type(self.value_network).__name__}"
            )

    def _default_out_keys(self) -> list[str]:
        return ["loss"]

    def _action_index(self, action: torch.Tensor, n: int) -> torch.Tensor:
        if self.action_space == "one_hot":
            return action.reshape(-1, action.shape[-1]).long().argmax(-1)
        return action.reshape(n).long()

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = tensordict
        net = self.value_network
        support = net.support
        log_p = net.log_probs(td)  # [*B, atoms, n]
        atoms, n_actions = log_p.shape[-2:]
        log_p = log_p.reshape(-1, atoms, n_actions)
        n = log_p.shape[0]
        index = self._action_index(td.get(self.action_key), n)
        log_p_a = log_p.gather(-1, index.reshape(n, 1, 1).expand(n, atoms, 1)).squeeze(-1)
        if self.delay_value:
            self._ensure_target()
        with torch.no_grad():
            next_td = next_step(td, self._q_in_keys)
            online = net.log_probs(next_td).reshape(n, atoms, n_actions)
            best = expected_action_values(online, support).argmax(-1)
            target_net = self.target_value_network_params if self.delay_value else net
            next_p = target_net.log_probs(next_td).reshape(n, atoms, n_actions).exp()
            next_p = next_p.gather(-1, best.reshape(n, 1, 1).expand(n, atoms, 1)).squeeze(-1)
            reward, not_term = reward_and_not_terminated(td, self)
            gamma = discount(td, self.gamma, reward)
            scale = (gamma * not_term).reshape(n, 1)
            returns = reward.reshape(n, 1) + scale * support.to(reward.dtype).unsqueeze(0)
            target = project_distribution(next_p, returns, support.to(reward.dtype))
        loss = -(target * log_p_a).sum(-1)
        weight = td.get("_weight", None)
        if not td.is_locked:
            td.set(self.priority_key, loss.detach().reshape(td.batch_size))
        if weight is not None:
            loss = loss * weight.reshape(loss.shape)
        return TensorDict({"loss": loss.mean()}, batch_size=[])
