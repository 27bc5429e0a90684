"""Soft actor-critic for discrete actions (Christodoulou 2019).

With ``pi(.|s)`` the policy's probabilities over the ``n`` actions, ``Q_1..Q_k(s, .)`` the
critics (one value per action) and ``Q'`` their targets:

* ``V(s') = sum_a pi(a|s') (min_i Q'_i(s', a) - alpha * log pi(a|s'))``
* ``y = r + gamma * (1 - terminated) * V(s')``;  ``loss_qvalue = sum_i mean(d(Q_i(s, a), y))``
* ``loss_actor = mean(sum_a pi(a|s) (alpha * log pi(a|s) - min_i Q_i(s, a)))``, critics detached
* ``loss_alpha = -mean(log_alpha * (sum_a pi log pi + target_entropy))`` with
  ``target_entropy = target_entropy_weight * log(n)`` by default.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.modules.actors import discrete_kind
from rl_trainers.modules.distributions import one_hot_index
from rl_trainers.objectives.common import (
    batch_entry,
    check_torchrl_options,
    distance_loss,
    next_key,
    one_step_target,
)
from rl_trainers.objectives.sac import SACLoss

__all__ = ["DiscreteSACLoss"]


class DiscreteSACLoss(SACLoss):
    """Discrete SAC loss.

    Args:
        actor_network: a probabilistic actor over the actions (``Categorical`` or
            ``OneHotCategorical`` from logits).
        qvalue_network: a critic writing one value per action (e.g. ``ValueOperator(net,
            in_keys=["observation"], out_keys=["action_value"])``).
        action_space: ``"one_hot"``/``"categorical"`` or the action spec (default: the
            actor's spec).
        num_actions: number of actions (default: read from the action spec).
        num_qvalue_nets: number of critics.
        loss_function: critic distance (``"smooth_l1"``, ``"l2"``, ``"l1"``).
        alpha_init, min_alpha, max_alpha, fixed_alpha: the temperature, as in :class:`SACLoss`.
        target_entropy_weight: fraction of the maximum entropy ``log(n)`` targeted.
        target_entropy: ``"auto"`` or a number.
        delay_qvalue: keep target critics (update them with SoftUpdate/HardUpdate).
        priority_key: key of the per-sample TD errors written into the batch.
        separate_losses, reduction, skip_done_states, deactivate_vmap: torchrl's options,
            accepted at the values implemented here.
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        *,
        action_space=None,
        num_actions: int | None = None,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        fixed_alpha: bool = False,
        target_entropy_weight: float = 0.98,
        target_entropy: str | float = "auto",
        delay_qvalue: bool = True,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        skip_done_states: bool = False,
        deactivate_vmap: bool = False,
        gamma: float | None = None,
    ) -> None:
        check_torchrl_options(1, (), reduction)
        if skip_done_states:
            raise NotImplementedError("skip_done_states=True is not supported")
        spec = getattr(actor_network, "spec", None)
        if action_space is None and spec is None:
            raise ValueError("DiscreteSACLoss needs action_space (or an actor with a spec)")
        kind, spec = discrete_kind(action_space, spec, "DiscreteSACLoss")
        if num_actions is None:
            if spec is None or getattr(spec, "n", None) is None:
                raise ValueError("DiscreteSACLoss needs num_actions (or an action spec)")
            num_actions = int(spec.n)
        if target_entropy == "auto":
            target_entropy = target_entropy_weight * math.log(num_actions)
        super().__init__(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            loss_function=loss_function,
            alpha_init=alpha_init,
            min_alpha=min_alpha,
            max_alpha=max_alpha,
            fixed_alpha=fixed_alpha,
            target_entropy=float(target_entropy),
            delay_qvalue=delay_qvalue,
            gamma=gamma,
            separate_losses=separate_losses,
            priority_key=priority_key,
        )
        self.action_space = kind
        self.num_actions = num_actions

    def _probs(self, td: TensorDictBase, next_: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(probs, log_probs)`` ``[*B, n]`` of the policy at ``s`` (or ``s'``)."""
        keys = self._obs_keys
        inputs = {k: batch_entry(td, next_key(k) if next_ else k) for k in keys}
        dist = self.actor_network.get_dist(TensorDict(inputs, batch_size=td.batch_size))
        log_probs = dist.log_probs
        probs = log_probs.exp()
        # masked actions (log-probability -inf) weigh nothing: 0 * -inf would be nan
        return probs, log_probs.masked_fill(probs == 0, 0.0)

    def _action_index(self, action: torch.Tensor, batch: torch.Size) -> torch.Tensor:
        if self.action_space == "one_hot":
            return one_hot_index(action)
        return action.reshape(batch).long()

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = tensordict
        batch = td.batch_size
        alpha = self.alpha
        with torch.no_grad():
            next_probs, next_log_probs = self._probs(td, True)
            q_next = self._target_net()(*self._q_inputs(td, True, None)).min(0).values
            next_value = (next_probs * (q_next - alpha * next_log_probs)).sum(-1, keepdim=True)
            target = one_step_target(td, self.gamma, next_value, self)
        q_all = self.qvalue_network_params(*self._q_inputs(td, False, None))  # [k, *B, n]
        index = self._action_index(td.get(self.action_key), batch)
        q_data = q_all.gather(-1, index.expand(q_all.shape[:-1]).unsqueeze(-1))  # [k, *B, 1]
        target = target.reshape(q_data.shape[1:])
        dist_q = distance_loss(q_data, target.unsqueeze(0), self.loss_function)
        loss_q = dist_q.reshape(self.num_qvalue_nets, -1).mean(1).sum()

        probs, log_probs = self._probs(td, False)
        q_pi = q_all.detach().min(0).values
        loss_actor = (probs * (alpha * log_probs - q_pi)).sum(-1).mean()
        neg_entropy = (probs * log_probs).sum(-1).detach()
        loss_alpha = self._alpha_term(neg_entropy)
        with torch.no_grad():
            td_error = (q_data - target.unsqueeze(0)).abs().max(0).values
        self._write_priority(td, td_error)
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": loss_q,
            "loss_alpha": loss_alpha,
            "alpha": alpha,
            "entropy": -neg_entropy.mean(),
        }
        if self.diagnostics:
            out["q_mean"] = q_data.detach().mean()
            out["td_error"] = td_error.mean()
        return TensorDict(out, batch_size=[])
