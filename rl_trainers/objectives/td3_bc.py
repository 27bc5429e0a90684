"""TD3+BC (Fujimoto & Gu 2021): TD3 for offline data, with a behaviour-cloning actor term.

The critics learn as in :class:`~rl_trainers.objectives.TD3Loss`; the actor minimises
``-lambda * mean(Q_1(s, mu(s))) + mean((mu(s) - a)^2)`` with
``lambda = alpha / mean(|Q_1(s, mu(s))|)`` (not differentiated).
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_trainers.objectives.common import check_critic_reads_action
from rl_trainers.objectives.td3 import TD3Loss

__all__ = ["TD3BCLoss"]


class TD3BCLoss(TD3Loss):
    """TD3+BC loss.

    Args:
        actor_network: a deterministic actor.
        qvalue_network: a ValueOperator reading ``[obs, "action"]``.
        action_spec, bounds, num_qvalue_nets, policy_noise, noise_clip, loss_function,
            priority_key, separate_losses, reduction, deactivate_vmap, gamma: as in
            :class:`~rl_trainers.objectives.TD3Loss` (target actor and critics are always kept).
        alpha: weight of the Q term against behaviour cloning.
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        *,
        action_spec=None,
        bounds: tuple | None = None,
        num_qvalue_nets: int = 2,
        policy_noise: float = 0.2,
        noise_clip: float = 0.5,
        alpha: float = 2.5,
        loss_function: str = "smooth_l1",
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        gamma: float | None = None,
    ) -> None:
        super().__init__(
            actor_network,
            qvalue_network,
            action_spec=action_spec,
            bounds=bounds,
            num_qvalue_nets=num_qvalue_nets,
            policy_noise=policy_noise,
            noise_clip=noise_clip,
            loss_function=loss_function,
            priority_key=priority_key,
            separate_losses=separate_losses,
            reduction=reduction,
            deactivate_vmap=deactivate_vmap,
            gamma=gamma,
        )
        self.alpha = float(alpha)

    def _default_out_keys(self) -> list[str]:
        return [*super()._default_out_keys(), "bc_loss", "lmbd"]

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The actor's TD3+BC loss alone, as torchrl's ``TD3BCLoss.actor_loss``:
        ``(loss, {"bc_loss": ..., "lmbd": ...})``; the critics get no gradient."""
        check_critic_reads_action(self, self._q_in_keys)
        action = self._actor_module(*self._obs(tensordict, False))
        inputs = self._q_inputs(tensordict, False, action)
        q_pi = self.qvalue_network_params(*inputs, detach=True)[0]
        lmbd = self.alpha / q_pi.abs().mean().detach().clamp_min(torch.finfo(q_pi.dtype).tiny)
        bc_loss = (action - tensordict.get(self.action_key)).pow(2).mean()
        return -lmbd * q_pi.mean() + bc_loss, {"bc_loss": bc_loss.detach(), "lmbd": lmbd}
