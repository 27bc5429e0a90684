"""``torchrl.objectives.decision_transformer``: the losses of the (online) Decision
Transformer, for any actor that predicts actions from a context of past steps."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import (
    LossModule,
    check_loss_function,
    distance_loss,
    loss_action_spec,
)

__all__ = ["DTLoss", "OnlineDTLoss"]


class _ActionTargetKeys:
    """torchrl's two keys of both losses: the dataset's action and the model's prediction."""

    _key_attrs = {"action_target": "action_target_key", "action_pred": "action_pred_key"}
    action_target_key = "action"
    action_pred_key = "action"

    def _in_keys(self, actor: nn.Module, *extra) -> list:
        return sorted({*getattr(actor, "in_keys", ()), self.action_target_key, *extra}, key=str)


class DTLoss(_ActionTargetKeys, LossModule):
    """Decision Transformer (Chen et al. 2021): regress the dataset's actions.

    ``loss = mean(distance(actor(td)[action_pred], td[action_target]))``. The target is read
    before the actor runs (both keys default to ``"action"``, which the actor overwrites in a
    shallow copy of the batch).

    Args:
        actor_network: a tensordict module writing predicted actions.
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
    """

    def __init__(self, actor_network: nn.Module, *, loss_function: str = "l2") -> None:
        super().__init__()
        self.convert_to_functional(actor_network, "actor_network")
        self.loss_function = check_loss_function(loss_function)

    @property
    def in_keys(self) -> list:
        return self._in_keys(self.actor_network, self.action_pred_key)

    def _default_out_keys(self) -> list[str]:
        return ["loss"]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict = tensordict.clone(False)
        target = tensordict.get(self.action_target_key).detach()
        predicted = self.actor_network(tensordict).get(self.action_pred_key)
        loss = distance_loss(predicted, target, self.loss_function).mean()
        return TensorDict({"loss": loss}, batch_size=[]).select(*self.out_keys)


class OnlineDTLoss(_ActionTargetKeys, LossModule):
    """Online Decision Transformer (Zheng et al. 2022): maximise the likelihood of the
    dataset's actions under the actor's distribution, with an entropy bonus whose weight
    ``alpha`` is tuned toward a target entropy (as SAC's temperature).

    Entries: ``loss_log_likelihood = -mean(log pi(a_target))``, ``loss_entropy = -alpha * H``
    (``H`` estimated from ``samples_mc_entropy`` reparameterised samples per step),
    ``loss_alpha = alpha * (H - target_entropy)`` (gradient to ``log_alpha`` only), and the
    detached ``entropy`` and ``alpha``.

    Args:
        actor_network: a probabilistic actor (``get_dist``) over a reparameterisable
            distribution (e.g. TanhNormal).
        alpha_init: initial entropy weight.
        min_alpha, max_alpha: clamp of alpha (None: no bound on that side).
        fixed_alpha: keep alpha at ``alpha_init`` (``log_alpha`` is then a buffer).
        target_entropy: ``"auto"`` (``-prod(action shape)``, from the actor's spec, else from
            the first batch's actions) or a number.
        samples_mc_entropy: samples per step of the entropy estimate.
    """

    def __init__(
        self,
        actor_network: nn.Module,
        *,
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        samples_mc_entropy: int = 1,
    ) -> None:
        super().__init__()
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                "OnlineDTLoss needs a probabilistic actor (with get_dist), got "
                f"{type(actor_network).__name__}"
            )
        self.convert_to_functional(actor_network, "actor_network")
        if max_alpha is not None and max_alpha <= 0:
            raise ValueError(f"max_alpha must be None or positive, got {max_alpha}")
        log_alpha = torch.tensor(math.log(alpha_init))
        if fixed_alpha:
            self.register_buffer("log_alpha", log_alpha)
        else:
            self.log_alpha = nn.Parameter(log_alpha)
        self.fixed_alpha = fixed_alpha
        self.min_log_alpha = math.log(min_alpha) if min_alpha else None
        self.max_log_alpha = math.log(max_alpha) if max_alpha else None
        if target_entropy == "auto":
            spec = loss_action_spec(None, actor_network)
            self._target_entropy = None if spec is None else -float(spec.shape.numel())
        else:
            self._target_entropy = float(target_entropy)
        self.samples_mc_entropy = int(samples_mc_entropy)

    @property
    def in_keys(self) -> list:
        return self._in_keys(self.actor_network)

    def _default_out_keys(self) -> list[str]:
        return ["loss_log_likelihood", "loss_entropy", "loss_alpha", "alpha", "entropy"]

    @property
    def target_entropy(self) -> float | None:
        return self._target_entropy

    @property
    def alpha(self) -> torch.Tensor:
        """``exp(log_alpha)``, detached; ``log_alpha`` is first clamped in place onto
        ``[log(min_alpha), log(max_alpha)]`` when bounds are set (as torchrl does)."""
        if self.min_log_alpha is not None or self.max_log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.clamp_(self.min_log_alpha, self.max_log_alpha)
        return self.log_alpha.detach().exp()

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict = tensordict.clone(False)
        target = tensordict.get(self.action_target_key)
        if target.requires_grad:
            raise RuntimeError(
                f"the target actions at {self.action_target_key!r} require grad: they must "
                "come from the dataset, not from a graph"
            )
        if self._target_entropy is None:
            # -prod(action shape): the actions' dims beyond the batch's
            self._target_entropy = -float(target.shape[tensordict.batch_dims :].numel())
        dist = self.actor_network.get_dist(tensordict)
        log_likelihood = dist.log_prob(target).mean()
        samples = dist.rsample((self.samples_mc_entropy,))
        entropy = -dist.log_prob(samples).mean()
        alpha = self.alpha
        out = {
            "loss_log_likelihood": -log_likelihood,
            "loss_entropy": -alpha * entropy,
            "loss_alpha": self.log_alpha.exp() * (entropy - self._target_entropy).detach(),
            "alpha": alpha,
            "entropy": entropy.detach(),
        }
        return TensorDict(out, batch_size=[]).select(*self.out_keys)
