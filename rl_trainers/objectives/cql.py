"""Discrete CQL (Kumar et al. 2020): DQN's TD loss plus a conservative term.

``loss_qvalue = 0.5 * mean(d(Q(s, a), r + gamma * (1 - terminated) * max_a' Q'(s', a')))``
and ``loss_cql = mean(logsumexp_a Q(s, .) - Q(s, a))``, which pushes down the values of
actions absent from the data. The continuous ``CQLLoss`` is not implemented.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import distance_loss
from rl_trainers.objectives.dqn import DQNLoss

__all__ = ["DiscreteCQLLoss"]


class DiscreteCQLLoss(DQNLoss):
    """Discrete CQL loss over a :class:`~rl_trainers.modules.QValueActor`.

    Optimise ``loss_qvalue + loss_cql`` (torchrl's sota script sums the two).

    Args:
        value_network: the Q-value actor (or an exploration wrapper around one), as for
            :class:`~rl_trainers.objectives.DQNLoss`.
        loss_function: ``"l2"``, ``"smooth_l1"`` or ``"l1"``.
        delay_value: keep a target network (update it with SoftUpdate/HardUpdate).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        action_space: ``"one_hot"``, ``"categorical"`` or the action spec.
        priority_key: key of the per-sample TD errors written into the batch.
        reduction: torchrl's option, accepted at ``"mean"`` (or None).

    Example:
        >>> loss = DiscreteCQLLoss(qvalue_actor, delay_value=True)
        >>> out = loss(batch)  # loss_qvalue, loss_cql, td_error, pred_value, target_value
        >>> (out["loss_qvalue"] + out["loss_cql"]).backward()
    """

    #: where :meth:`value_loss` writes ``Q(s, .)`` for :meth:`cql_loss` (torchrl's key)
    pred_val_key = "pred_val"

    def __init__(
        self,
        value_network: nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        gamma: float | None = None,
        action_space=None,
        priority_key: str | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            value_network,
            loss_function=loss_function,
            delay_value=delay_value,
            gamma=gamma,
            action_space=action_space,
            priority_key=priority_key,
            reduction=reduction,
        )

    def _default_out_keys(self) -> list[str]:
        return ["loss_qvalue", "loss_cql", "td_error", "pred_value", "target_value"]

    def value_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The TD loss alone: ``(loss, metadata)``; writes ``Q(s, .)`` at ``"pred_val"``
        (read by :meth:`cql_loss`) and the per-sample errors at ``priority_key``."""
        values, chosen, target, td_error = self._q_terms(tensordict)
        if not tensordict.is_locked:
            tensordict.set(self.pred_val_key, values)
        loss = 0.5 * distance_loss(chosen, target, self.loss_function).mean()
        metadata = {
            "td_error": td_error.mean(),
            "pred_value": values.detach().mean(),
            "target_value": target.mean(),
        }
        return loss, metadata

    def cql_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The conservative term alone, from the ``Q(s, .)`` :meth:`value_loss` wrote."""
        values = tensordict.get(self.pred_val_key, None)
        if values is None:
            raise KeyError(
                f"no predicted action values at {self.pred_val_key!r}: call value_loss "
                "before cql_loss"
            )
        chosen = self._chosen(values, tensordict.get("action"))
        return (torch.logsumexp(values, dim=-1, keepdim=True) - chosen).mean(), {}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        loss_qvalue, metadata = self.value_loss(tensordict)
        if tensordict.is_locked:  # cql_loss reads the values from the batch
            tensordict = tensordict.clone(False)
            tensordict.set(self.pred_val_key, self.value_network.action_values(tensordict))
        loss_cql, _ = self.cql_loss(tensordict)
        return TensorDict(
            {"loss_qvalue": loss_qvalue, "loss_cql": loss_cql, **metadata}, batch_size=[]
        )
