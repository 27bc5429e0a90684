"""CrossQ (Bhatt et al. 2024): SAC without target networks, with batch-normalised critics.

The critics (typically MLPs with batch normalisation) evaluate the current and the next
state-action pairs in one call, so that the normalisation statistics cover both
distributions; the next-state half gives the target. With ``pi`` the actor and
``Q_1..Q_n`` the critics:

* ``a' , logp' ~ pi(s')`` (no gradient);
  ``[Q_i(s, a); Q_i(s', a')] = Q_i([(s, a); (s', a')])`` in one (training-mode) call;
* ``y = r + gamma * (1 - terminated) * (min_i Q_i(s', a') - alpha * logp')``, not
  differentiated; ``loss_qvalue = sum_i mean(d(Q_i(s, a), y))``;
* ``loss_actor = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))`` with the critics in eval
  mode (running statistics) and their parameters detached;
* the actor samples ``a~`` and ``a'`` in the loss's mode (training by default), whatever mode
  the module was left in for the collector;
* ``loss_alpha = -mean(log_alpha * (log pi(a~|s) + target_entropy))``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import distance_loss, one_step_target
from rl_trainers.objectives.sac import SACLoss

__all__ = ["CrossQLoss"]


@contextmanager
def _in_mode(module: nn.Module, training: bool) -> Iterator[None]:
    """Runs ``module`` in training (or eval) mode, then restores the modes of its
    submodules."""
    modes = [(m, m.training) for m in module.modules()]
    module.train(training)
    try:
        yield
    finally:
        module.train(modes[0][1])  # the critic ensemble's train() also sets its copies
        for m, mode in modes[1:]:
            m.training = mode


class CrossQLoss(SACLoss):
    """CrossQ loss, torchrl's signature (no ``delay_*`` options: there are no target networks).

    Build the critic with batch normalisation, e.g. ``MLP(..., norm_class=nn.BatchNorm1d,
    norm_kwargs={"num_features": 256, "momentum": 0.01})`` (torchrl's recipe uses
    ``BatchRenorm1d``). Optimise ``loss_actor``, ``loss_qvalue`` and ``loss_alpha``; the
    loss keeps the critics in training mode between calls.

    Args:
        actor_network: a probabilistic actor with reparameterised samples (TanhNormal).
        qvalue_network: a ValueOperator reading ``[obs, "action"]``.
        num_qvalue_nets: number of critics.
        loss_function: critic distance ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init, min_alpha, max_alpha, action_spec, fixed_alpha, target_entropy: the
            temperature, as in :class:`~rl_trainers.objectives.SACLoss`.
        priority_key: key of the per-sample TD errors written into the batch.
        separate_losses: as in SACLoss (accepted for networks sharing no parameter).
        reduction, deactivate_vmap: torchrl's options, accepted at ``"mean"``/any.
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).

    Example:
        >>> loss = CrossQLoss(actor, qvalue, action_spec=env.action_spec)
        >>> out = loss(batch)
        >>> (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec=None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        gamma: float | None = None,
    ) -> None:
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
            delay_qvalue=False,
            gamma=gamma,
            separate_losses=separate_losses,
            reduction=reduction,
            priority_key=priority_key,
        )

    def _default_out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]

    def _flat(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = super()._flat(tensordict)
        self._infer_target_entropy(td.get(self.action_key))
        return td

    def _sample(self, td: TensorDictBase, next_: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Samples with the actor in the loss's mode (training unless ``loss.eval()``),
        whatever mode the collector's policy was left in: a batch-normalised actor given to
        the collector as ``actor.eval()`` (torchrl's recipe) still trains on batch statistics
        and updates its running ones, as torchrl's loss, which runs its own copy of the actor
        in the mode it had when the loss was built."""
        with _in_mode(self.actor_network, self.training):
            return super()._sample(td, next_)

    # -- the terms, as torchrl's methods ----------------------------------------------------
    def qvalue_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The critics' loss, current and next pairs in one call; ``metadata["td_error"]``
        (``max_i |Q_i(s, a) - y|`` per sample)."""
        td = self._flat(tensordict)
        n = td.batch_size[0]
        alpha = self.alpha
        with torch.no_grad():
            a_next, logp_next = self._sample(td, True)
        current = self._q_inputs(td, False, td.get(self.action_key))
        following = self._q_inputs(td, True, a_next)
        joint = [torch.cat([c, f]) for c, f in zip(current, following, strict=True)]
        q = self.qvalue_network_params(*joint).squeeze(-1)  # [n_q, 2B]
        q_data, q_next = q[:, :n], q[:, n:].detach()
        with torch.no_grad():
            next_value = q_next.min(0).values - alpha * logp_next
            target = one_step_target(td, self.gamma, next_value.unsqueeze(-1), self).reshape(n)
        loss = distance_loss(q_data, target.unsqueeze(0), self.loss_function).mean(1).sum()
        td_error = (q_data.detach() - target).abs().max(0).values
        return loss, {"td_error": td_error}

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """``mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))`` with the critics in eval mode
        and detached; ``metadata["log_prob"]``."""
        td = self._flat(tensordict)
        a_pi, logp = self._sample(td, False)
        critics = self.qvalue_network_params
        with _in_mode(critics, False):
            q_pi = critics(*self._q_inputs(td, False, a_pi), detach=True)
        loss = (self.alpha * logp - q_pi.min(0).values.squeeze(-1)).mean()
        return loss, {"log_prob": logp.detach()}

    def alpha_loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        """``-mean(log_alpha * (log_prob + target_entropy))``."""
        return self._alpha_term(log_prob)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        loss_qvalue, value_metadata = self.qvalue_loss(tensordict)
        loss_actor, actor_metadata = self.actor_loss(tensordict)
        loss_alpha = self.alpha_loss(actor_metadata["log_prob"])
        self._write_priority(tensordict, value_metadata["td_error"])
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": loss_qvalue,
            "loss_alpha": loss_alpha,
            "alpha": self.alpha,
            "entropy": -actor_metadata["log_prob"].mean(),
        }
        return TensorDict(out, batch_size=[])
