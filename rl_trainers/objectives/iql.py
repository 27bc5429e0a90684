"""Implicit Q-learning (Kostrikov et al. 2021), for continuous and discrete actions.

With ``Q'_i`` the target critics, ``V`` the state-value network and ``pi`` the actor:

* ``loss_value = mean(|tau - 1[u < 0]| * u^2)`` with ``u = min_i Q'_i(s, a) - V(s)``
  (expectile regression, ``tau`` = ``expectile``);
* ``loss_qvalue = sum_i mean(d(Q_i(s, a), r + gamma * (1 - terminated) * V(s')))``;
* ``loss_actor = -mean(min(exp(temperature * (min_i Q'_i(s, a) - V(s))), 100) * log pi(a|s))``
  (advantage-weighted regression on the batch's actions).

The actor never samples: IQL only evaluates the data's actions, so it suits offline data.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.modules.actors import discrete_kind
from rl_trainers.objectives.common import (
    OFF_POLICY_KEYS,
    LossModule,
    actor_obs_keys,
    batch_entry,
    check_critic_reads_action,
    check_loss_function,
    check_no_shared_parameters,
    check_torchrl_options,
    distance_loss,
    next_key,
    one_step_target,
    params_view,
    transition_in_keys,
)
from rl_trainers.objectives.ensemble import CriticEnsemble
from rl_trainers.objectives.sac import _critic_parts

__all__ = ["IQLLoss", "DiscreteIQLLoss"]


class IQLLoss(LossModule):
    """IQL loss: an actor, ``num_qvalue_nets`` critics (with targets) and a value network.

    Args:
        actor_network: a probabilistic actor (``get_dist``), e.g. a TanhNormal
            ProbabilisticActor.
        qvalue_network: a ValueOperator reading ``[obs, "action"]``.
        value_network: a ValueOperator reading the observation (``"state_value"``).
        num_qvalue_nets: number of critics.
        loss_function: critic distance (``"smooth_l1"``, torchrl's default, ``"l2"``, ``"l1"``).
        temperature: inverse temperature of the advantage weights.
        expectile: expectile of the value regression (0.5: the mean).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        priority_key: key of the per-sample TD errors written into the batch (``"td_error"``).
        separate_losses, reduction, deactivate_vmap: torchrl's options, accepted at the
            values implemented here (no shared parameters, ``"mean"``, any).

    Example:
        >>> loss = IQLLoss(actor, qvalue, value_network=value, expectile=0.7, temperature=3.0)
        >>> out = loss(batch)
        >>> (out["loss_actor"] + out["loss_qvalue"] + out["loss_value"]).backward()
    """

    one_step_targets = True
    _key_attrs = OFF_POLICY_KEYS
    #: the critics read the action (continuous IQL); discrete critics output one value per action
    _critic_reads_action = True

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        value_network: nn.Module,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        temperature: float = 1.0,
        expectile: float = 0.5,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
    ) -> None:
        super().__init__()
        check_torchrl_options(1, (), reduction)
        if separate_losses:
            check_no_shared_parameters(actor_network, qvalue_network, "critics")
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"IQL needs a probabilistic actor with get_dist(), got {type(actor_network).__name__}"
            )
        if not 0.0 < expectile < 1.0:
            raise ValueError(f"expectile must be in (0, 1), got {expectile}")
        self.separate_losses = separate_losses
        self.priority_key = "td_error" if priority_key is None else priority_key
        self.actor_network = actor_network
        self._obs_keys = actor_obs_keys(actor_network)
        module, self._q_in_keys = _critic_parts(qvalue_network)
        self.qvalue_network_params = CriticEnsemble(module, num_qvalue_nets)
        self.num_qvalue_nets = num_qvalue_nets
        self._register_target("qvalue_network", self.qvalue_network_params)
        self.value_network = value_network
        value_fn, self._v_in_keys = _critic_parts(value_network)
        self.__dict__["_value_fn"] = value_fn  # a view of value_network, not a second module
        self.loss_function = check_loss_function(loss_function)
        self.temperature = float(temperature)
        self.expectile = float(expectile)
        if gamma is not None:
            self.gamma = float(gamma)

    def _source_of(self, name: str) -> nn.Module:
        return self.qvalue_network_params

    @property
    def actor_network_params(self):
        """The actor's parameters as a TensorDict (torchrl's ``actor_network_params``)."""
        return params_view(self.actor_network)

    @property
    def value_network_params(self):
        """The value network's parameters as a TensorDict."""
        return params_view(self.value_network)

    @property
    def in_keys(self) -> list:
        """The batch entries :meth:`forward` reads."""
        return transition_in_keys(self._obs_keys, self._q_in_keys, self._v_in_keys, loss=self)

    def _default_out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_value", "entropy"]

    # -- the networks on the batch ----------------------------------------------------------
    def _value(self, td: TensorDictBase, next_: bool = False) -> torch.Tensor:
        return self._value_fn(
            *[batch_entry(td, next_key(k) if next_ else k) for k in self._v_in_keys]
        )

    def _q(self, td: TensorDictBase, target: bool = False) -> torch.Tensor:
        """``Q_i(s, a)`` of the batch's actions, ``[num_qvalue_nets, *batch, 1]``."""
        if self._critic_reads_action:
            check_critic_reads_action(self, self._q_in_keys)
        critics = self.target_qvalue_network_params if target else self.qvalue_network_params
        return critics(*[td.get(k) for k in self._q_in_keys])

    def _min_target_q(self, td: TensorDictBase) -> torch.Tensor:
        with torch.no_grad():
            return self._q(td, target=True).min(0).values

    # -- the three losses, as torchrl's methods: (loss, metadata) ---------------------------
    def value_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """Expectile regression of ``V(s)`` towards ``min_i Q'_i(s, a)``."""
        diff = self._min_target_q(tensordict) - self._value(tensordict)
        weight = (self.expectile - (diff < 0).to(diff.dtype)).abs()
        return (weight * diff.pow(2)).mean(), {}

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """Advantage-weighted log-likelihood of the batch's actions; ``metadata["log_prob"]``."""
        td = tensordict
        actor_in = TensorDict({k: td.get(k) for k in self._obs_keys}, batch_size=td.batch_size)
        log_prob = self.actor_network.get_dist(actor_in).log_prob(td.get(self.action_key))
        with torch.no_grad():
            advantage = self._min_target_q(td) - self._value(td)
            weight = torch.exp(advantage * self.temperature).clamp_max(100.0)
        loss = -(weight.reshape(log_prob.shape) * log_prob).mean()
        return loss, {"log_prob": log_prob.detach()}

    def qvalue_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """Critics towards ``r + gamma * (1 - terminated) * V(s')``; ``metadata["td_error"]``
        per critic and sample. Writes the per-sample priority at ``priority_key``."""
        td = tensordict
        with torch.no_grad():
            target = one_step_target(td, self.gamma, self._value(td, next_=True), self)
        q_data = self._q(td)
        loss = (
            distance_loss(q_data, target.unsqueeze(0), self.loss_function)
            .reshape(self.num_qvalue_nets, -1)
            .mean(1)
            .sum()
        )
        with torch.no_grad():
            td_error = (
                (q_data - target.unsqueeze(0)).abs().reshape(self.num_qvalue_nets, *td.batch_size)
            )
            if not td.is_locked:
                td.set(self.priority_key, td_error.max(0).values)
        return loss, {"td_error": td_error}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        loss_actor, metadata = self.actor_loss(tensordict)
        loss_qvalue, _ = self.qvalue_loss(tensordict)
        loss_value, _ = self.value_loss(tensordict)
        return TensorDict(
            {
                "loss_actor": loss_actor,
                "loss_qvalue": loss_qvalue,
                "loss_value": loss_value,
                "entropy": -metadata["log_prob"].mean(),
            },
            batch_size=[],
        )


class DiscreteIQLLoss(IQLLoss):
    """IQL for discrete actions: the critics output one value per action (``[*B, n]``,
    e.g. a TensorDictModule writing ``"state_action_value"``), read at the batch's action;
    the actor is a categorical ProbabilisticActor.

    Args:
        actor_network, qvalue_network, value_network: as in :class:`IQLLoss`.
        action_space: ``"one_hot"`` or ``"categorical"`` (or the action spec).
        num_qvalue_nets, loss_function, temperature, expectile, gamma, priority_key,
            separate_losses, reduction: as in :class:`IQLLoss`.
    """

    _critic_reads_action = False

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        value_network: nn.Module,
        *,
        action_space,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        temperature: float = 1.0,
        expectile: float = 0.5,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            actor_network,
            qvalue_network,
            value_network,
            num_qvalue_nets=num_qvalue_nets,
            loss_function=loss_function,
            temperature=temperature,
            expectile=expectile,
            gamma=gamma,
            priority_key=priority_key,
            separate_losses=separate_losses,
            reduction=reduction,
        )
        self.action_space, _ = discrete_kind(action_space, None, "DiscreteIQLLoss")

    def _q(self, td: TensorDictBase, target: bool = False) -> torch.Tensor:
        values = super()._q(td, target)  # [n_q, *B, n_actions]
        action = td.get(self.action_key)
        if self.action_space == "one_hot":
            return (values * action.to(values.dtype)).sum(-1, keepdim=True)
        index = action.long().reshape(*values.shape[1:-1], 1).expand(*values.shape[:-1], 1)
        return values.gather(-1, index)
