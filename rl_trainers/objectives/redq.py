"""Randomized ensembled double Q-learning (REDQ, Chen et al. 2021).

SAC with a large critic ensemble (``N = num_qvalue_nets``, 10 by default) whose target takes
the minimum over a random subset of ``M = sub_sample_len`` target critics, drawn anew for
every batch. With ``pi`` the actor and ``Q_1..Q_N`` the critics:

* ``a~, logp ~ pi(s)`` (reparameterised), ``a', logp' ~ pi(s')`` (no gradient);
* ``y = r + gamma * (1 - terminated) * (min_{j in subset} Q'_j(s', a') - alpha * logp')``;
* ``loss_qvalue = mean_i mean(d(Q_i(s, a), y))`` (a mean over the critics, as torchrl);
* ``loss_actor = mean(alpha * logp - mean_i Q_i(s, a~))`` with the critics detached: the
  actor follows the ensemble's average, not its minimum;
* ``loss_alpha = -mean(alpha * ([logp, logp'] + target_entropy))`` with
  ``alpha = exp(log_alpha)`` kept in ``[min_alpha, max_alpha]`` (0.1 and 10 by default).
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import distance_loss, one_step_target
from rl_trainers.objectives.sac import SACLoss

__all__ = ["REDQLoss"]


class REDQLoss(SACLoss):
    """REDQ loss, torchrl's signature.

    Optimise ``loss_actor + loss_qvalue + loss_alpha`` (torchrl's REDQ recipe sums them);
    update the target critics with :class:`~rl_trainers.objectives.SoftUpdate`.

    Args:
        actor_network: a probabilistic actor with reparameterised samples (TanhNormal).
        qvalue_network: a ValueOperator reading ``[obs, "action"]`` (``num_qvalue_nets``
            independently initialised copies are made).
        num_qvalue_nets: ``N``, the size of the critic ensemble.
        sub_sample_len: ``M``, the target critics drawn per batch (kept in ``[1, N - 1]``).
        loss_function: critic distance ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature.
        min_alpha, max_alpha: bounds of the temperature (``log_alpha`` is clamped into them
            before each forward, as torchrl does).
        action_spec, fixed_alpha, target_entropy: as in :class:`~rl_trainers.objectives.SACLoss`.
        delay_qvalue: keep target critics.
        gSDE: torchrl's option for gSDE actors; only ``False`` is supported.
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        priority_key: key of the per-sample squared TD errors written into the batch.
        separate_losses: as in SACLoss (accepted for networks sharing no parameter).
        reduction, deactivate_vmap: torchrl's options, accepted at ``"mean"``/any.

    Example:
        >>> loss = REDQLoss(actor, qvalue, num_qvalue_nets=10, sub_sample_len=2)
        >>> out = loss(batch)
        >>> (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        *,
        num_qvalue_nets: int = 10,
        sub_sample_len: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = 0.1,
        max_alpha: float | None = 10.0,
        action_spec=None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_qvalue: bool = True,
        gSDE: bool = False,  # noqa: N803 (torchrl's name)
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
    ) -> None:
        if gSDE:
            raise NotImplementedError("REDQLoss(gSDE=True) is not supported")
        if num_qvalue_nets < 2:
            raise ValueError(f"REDQ needs num_qvalue_nets >= 2, got {num_qvalue_nets}")
        super().__init__(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            loss_function=loss_function,
            alpha_init=alpha_init,
            min_alpha=min_alpha,
            max_alpha=max_alpha,
            action_spec=action_spec,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            delay_qvalue=delay_qvalue,
            gamma=gamma,
            separate_losses=separate_losses,
            reduction=reduction,
            priority_key=priority_key,
        )
        self.sub_sample_len = max(1, min(int(sub_sample_len), num_qvalue_nets - 1))
        self.gSDE = gSDE

    def _default_out_keys(self) -> list[str]:
        return [
            "loss_actor",
            "loss_qvalue",
            "loss_alpha",
            "alpha",
            "entropy",
            "state_action_value_actor",
            "action_log_prob_actor",
            "next.state_value",
            "target_value",
        ]

    def _subset(self) -> torch.Tensor:
        """The indices of the target critics used for this batch (sorted)."""
        return torch.randperm(self.num_qvalue_nets)[: self.sub_sample_len].sort().values

    def _clamp_log_alpha(self) -> None:
        if self.min_log_alpha is not None or self.max_log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.clamp_(self.min_log_alpha, self.max_log_alpha)

    def _alpha_log_probs(self, logp_pi: torch.Tensor, logp_next: torch.Tensor) -> torch.Tensor:
        """The log-probabilities the temperature loss and ``entropy`` average: the actions
        drawn at ``s`` and at ``s'``."""
        return torch.stack([logp_pi, logp_next])

    def _priority(self, errors: torch.Tensor) -> torch.Tensor:
        """Per-sample priority from the critics' errors ``[N, B]``: the largest square."""
        return errors.pow(2).max(0).values

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = self._flat(tensordict)
        action = td.get(self.action_key)
        self._infer_target_entropy(action)
        self._clamp_log_alpha()
        alpha = self.alpha
        subset = self._subset()

        a_pi, logp_pi = self._sample(td, False)
        q_pi = self.qvalue_network_params(*self._q_inputs(td, False, a_pi), detach=True)
        q_pi = q_pi.squeeze(-1)  # [N, B]
        loss_actor = (alpha * logp_pi - q_pi.mean(0)).mean()

        with torch.no_grad():
            a_next, logp_next = self._sample(td, True)
            q_next = self._target_net()(*self._q_inputs(td, True, a_next))[subset]
            next_value = q_next.squeeze(-1).min(0).values - alpha * logp_next  # [B]
            target = one_step_target(td, self.gamma, next_value.unsqueeze(-1), self)
            target = target.reshape(-1)

        q_data = self.qvalue_network_params(*self._q_inputs(td, False, action)).squeeze(-1)
        loss_qvalue = distance_loss(q_data, target.unsqueeze(0), self.loss_function).mean()

        log_probs = self._alpha_log_probs(logp_pi, logp_next).detach()
        alpha_grad = self.log_alpha.exp()
        loss_alpha = -(alpha_grad * (log_probs + self._target_entropy)).mean()
        if self.fixed_alpha:
            loss_alpha = loss_alpha.detach()

        with torch.no_grad():
            priority = self._priority(q_data - target)
        self._write_priority(tensordict, priority)
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": loss_qvalue,
            "loss_alpha": loss_alpha,
            "alpha": alpha,
            "entropy": -log_probs.mean(),
            "state_action_value_actor": q_pi.detach().mean(),
            "action_log_prob_actor": logp_pi.detach().mean(),
            "next.state_value": next_value.mean(),
            "target_value": target.mean(),
        }
        return TensorDict(out, batch_size=[])
