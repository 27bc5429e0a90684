"""``torchrl.objectives.gail``: the discriminator loss of Generative Adversarial Imitation
Learning (Ho & Ermon 2016)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import LossModule

__all__ = ["GAILLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class GAILLoss(LossModule):
    """Trains a discriminator to tell expert transitions (label 1) from the agent's (label 0).

    The batch holds both, row by row: the expert's observation and action at
    ``observation``/``action`` and the agent's at ``collector_observation``/
    ``collector_action`` (torchrl's keys, renamed with :meth:`set_keys`). The discriminator
    reads the expert keys and writes the probability that a transition is the expert's at
    ``d_logits`` (despite the name: end it with a sigmoid, as torchrl's recipe does).
    The policy is then trained by any RL loss on a reward built from the discriminator,
    e.g. ``-log(1 - D(s, a))``.

    Entries: ``loss`` (binary cross-entropy of both halves, plus the gradient penalty when
    enabled) and, with ``use_grad_penalty``, ``gp_loss`` (detached, for logging).

    Args:
        discriminator_network: tensordict module reading the expert observation and action
            keys, writing the probability at the ``discriminator_pred`` key.
        use_grad_penalty: add ``gp_lambda * E[(|grad D(x_mix)| - 1)^2]`` over points
            ``x_mix = eps * agent + (1 - eps) * expert``, one ``eps ~ U(0, 1)`` per row
            shared by its observation and action (Gulrajani et al. 2017). torchrl draws a
            separate ``eps`` for every element.
        gp_lambda: weight of the gradient penalty.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` over the rows.
    """

    _key_attrs = {
        "expert_action": "expert_action_key",
        "expert_observation": "expert_observation_key",
        "collector_action": "collector_action_key",
        "collector_observation": "collector_observation_key",
        "discriminator_pred": "discriminator_pred_key",
    }
    expert_action_key = "action"
    expert_observation_key = "observation"
    collector_action_key = "collector_action"
    collector_observation_key = "collector_observation"
    discriminator_pred_key = "d_logits"

    def __init__(
        self,
        discriminator_network: nn.Module,
        *,
        use_grad_penalty: bool = False,
        gp_lambda: float = 10.0,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        reduction = "mean" if reduction is None else reduction
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction={reduction!r}; one of {_REDUCTIONS}")
        self.convert_to_functional(discriminator_network, "discriminator_network")
        self.use_grad_penalty = use_grad_penalty
        self.gp_lambda = float(gp_lambda)
        self.reduction = reduction

    @property
    def in_keys(self) -> list:
        keys = {
            *getattr(self.discriminator_network, "in_keys", ()),
            self.expert_observation_key,
            self.expert_action_key,
            self.collector_observation_key,
            self.collector_action_key,
        }
        return sorted(keys, key=str)

    def _default_out_keys(self) -> list[str]:
        return ["loss", "gp_loss"] if self.use_grad_penalty else ["loss"]

    def _discriminate(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        batch = TensorDict(
            {self.expert_observation_key: observation, self.expert_action_key: action},
            batch_size=observation.shape[:-1],
        )
        return self.discriminator_network(batch).get(self.discriminator_pred_key)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        expert_obs = tensordict.get(self.expert_observation_key)
        expert_act = tensordict.get(self.expert_action_key)
        agent_obs = tensordict.get(self.collector_observation_key)
        agent_act = tensordict.get(self.collector_action_key)
        if expert_obs.shape != agent_obs.shape or expert_act.shape != agent_act.shape:
            raise ValueError(
                "GAILLoss pairs expert and agent transitions row by row: "
                f"{self.expert_observation_key!r} {tuple(expert_obs.shape)} and "
                f"{self.collector_observation_key!r} {tuple(agent_obs.shape)} (actions "
                f"{tuple(expert_act.shape)} and {tuple(agent_act.shape)}) must match"
            )
        rows = expert_obs.shape[0]
        probs = self._discriminate(
            torch.cat([expert_obs, agent_obs]), torch.cat([expert_act, agent_act])
        )
        if probs.detach().min() < 0 or probs.detach().max() > 1:
            raise ValueError(
                f"GAILLoss reads probabilities at {self.discriminator_pred_key!r}, got values "
                "outside [0, 1]: end the discriminator with a sigmoid"
            )
        expert_probs, agent_probs = probs[:rows], probs[rows:]
        loss = F.binary_cross_entropy(
            expert_probs, torch.ones_like(expert_probs), reduction="none"
        ) + F.binary_cross_entropy(agent_probs, torch.zeros_like(agent_probs), reduction="none")
        out = {}
        if self.use_grad_penalty:
            penalty = self._gradient_penalty(expert_obs, expert_act, agent_obs, agent_act)
            loss = loss + penalty
            out["gp_loss"] = penalty.detach()
        if self.reduction == "mean":
            loss = loss.mean()
        elif self.reduction == "sum":
            loss = loss.sum()
        out["loss"] = loss
        return TensorDict(out, batch_size=[]).select(*self.out_keys)

    def _gradient_penalty(self, expert_obs, expert_act, agent_obs, agent_act) -> torch.Tensor:
        eps = torch.rand(
            (*expert_obs.shape[:-1], 1), dtype=expert_obs.dtype, device=expert_obs.device
        )
        obs = (eps * agent_obs + (1 - eps) * expert_obs).detach().requires_grad_(True)
        act = (eps * agent_act + (1 - eps) * expert_act).detach().requires_grad_(True)
        with torch.enable_grad():
            probs = self._discriminate(obs, act)
            grads = torch.autograd.grad(probs.sum(), (obs, act), create_graph=True)
        norm = torch.cat(grads, dim=-1).norm(dim=-1)
        return self.gp_lambda * (norm - 1).pow(2).mean()
