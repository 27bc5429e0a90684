"""TD3 (Fujimoto et al. 2018) and DDPG (Lillicrap et al. 2016) losses for deterministic actors.

TD3 target: ``a' = clip(mu'(s') + clip(noise, -c, c), low, high)``,
``y = r + gamma * (1 - terminated) * min_i Q'_i(s', a')``; critics regress on ``y``; the actor
maximises ``Q_1(s, mu(s))`` with the critics' parameters detached.
DDPG is the single-critic, noise-free case: ``y = r + gamma * (1 - terminated) * Q'(s', mu'(s'))``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

from rl_trainers.objectives.common import (
    OFF_POLICY_KEYS,
    LossModule,
    TensorDictFn,
    action_bounds,
    batch_entry,
    buffer_copy,
    check_critic_reads_action,
    check_loss_function,
    check_no_shared_parameters,
    check_torchrl_options,
    discount,
    distance_loss,
    is_plain_module,
    loss_action_spec,
    next_key,
    params_view,
    reward_and_not_terminated,
    transition_in_keys,
    with_params_view,
)
from rl_trainers.objectives.ensemble import CriticEnsemble
from rl_trainers.objectives.sac import _critic_parts

__all__ = ["TD3Loss", "DDPGLoss"]


def _actor_parts(actor: nn.Module) -> tuple[nn.Module, list]:
    """``(fn(*observations) -> action, observation keys)`` of a deterministic actor.

    The action is the actor's one output, or its ``"action"`` entry, or (several outputs
    without ``"action"``, e.g. an action key renamed later with ``set_keys``) its last one;
    :meth:`TD3Loss.set_keys` points the reader at a renamed action key.
    """
    in_keys = list(getattr(actor, "in_keys", None) or [])
    out_keys = list(getattr(actor, "out_keys", None) or [])
    if not in_keys or not out_keys:
        raise TypeError(
            f"the actor must be an Actor or another tensordict module, got {type(actor).__name__}"
        )
    if is_plain_module(actor):
        return actor.module, in_keys  # the network itself: no tensordict per call
    if isinstance(actor, TensorDictModuleBase):
        # e.g. torchrl's TensorDictSequential(net_module, TanhModule(...))
        out_key = "action" if "action" in out_keys else out_keys[-1]
        return TensorDictFn(actor, in_keys, out_key), in_keys
    raise TypeError(
        f"the actor ({type(actor).__name__}, out_keys={out_keys}) must be a tensordict module"
    )


class TD3Loss(LossModule):
    """Twin-delayed DDPG loss.

    Args:
        actor_network: a deterministic :class:`~rl_trainers.modules.Actor`.
        qvalue_network: a ValueOperator reading ``[obs, "action"]``.
        action_spec: the action spec (bounds of the target action; default: ``actor.spec``).
        bounds: ``(low, high)`` instead of a spec.
        num_qvalue_nets: number of critics.
        policy_noise: std of the target policy smoothing noise.
        noise_clip: clip of that noise.
        loss_function: critic distance (``"smooth_l1"``, torchrl's default, ``"l2"``, ``"l1"``).
        delay_actor: keep a target actor.
        delay_qvalue: keep target critics.
        gamma: discount.
        priority_key: key of the per-sample TD errors written into the batch (``"td_error"``).
        separate_losses, reduction, deactivate_vmap: torchrl's options, accepted at the
            values implemented here (no parameters shared by actor and critic, ``"mean"``,
            any); others raise ``NotImplementedError``.
    """

    one_step_targets = True
    _key_attrs = OFF_POLICY_KEYS

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
        loss_function: str = "smooth_l1",
        delay_actor: bool = True,
        delay_qvalue: bool = True,
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
        self.separate_losses = separate_losses
        self.priority_key = "td_error" if priority_key is None else priority_key
        self.actor_network = actor_network
        self._actor_module, self._obs_keys = _actor_parts(actor_network)
        module, self._q_in_keys = _critic_parts(qvalue_network)
        self.qvalue_network_params = CriticEnsemble(
            module, num_qvalue_nets, reinit=num_qvalue_nets > 1
        )
        self.num_qvalue_nets = num_qvalue_nets
        self.delay_actor = delay_actor
        self.delay_qvalue = delay_qvalue
        if delay_actor:
            self._target_names.append("actor_network")
            self.target_actor_network_params = with_params_view(buffer_copy(self._actor_module))
        if delay_qvalue:
            self._register_target("qvalue_network", self.qvalue_network_params)
        self.loss_function = check_loss_function(loss_function)
        self.policy_noise = float(policy_noise)
        self.noise_clip = float(noise_clip)
        low_high = action_bounds(loss_action_spec(action_spec, actor_network), bounds)
        self._bounded = low_high is not None
        if self._bounded:
            self.register_buffer("low", low_high[0], persistent=False)
            self.register_buffer("high", low_high[1], persistent=False)
        if gamma is not None:
            self.gamma = float(gamma)

    def _source_of(self, name: str) -> nn.Module:
        return self._actor_module if name == "actor_network" else self.qvalue_network_params

    def _keys_changed(self) -> None:
        # an actor writing several entries: read its action at the renamed key
        if isinstance(self._actor_module, TensorDictFn):
            if self.action_key in list(self.actor_network.out_keys):
                self._actor_module.out_key = self.action_key
                if self.delay_actor:
                    self.target_actor_network_params.out_key = self.action_key

    @property
    def actor_network_params(self):
        """The actor's parameters as a TensorDict (torchrl's ``actor_network_params``)."""
        return params_view(self._actor_module)

    @property
    def in_keys(self) -> list:
        """The batch entries :meth:`forward` reads."""
        return transition_in_keys(self._obs_keys, self._q_in_keys, loss=self)

    def _default_out_keys(self) -> list[str]:
        """The entries :meth:`forward` writes."""
        return ["loss_actor", "loss_qvalue", "q_mean", "target_value", "td_error"]

    def _obs(self, td: TensorDictBase, next_: bool) -> list[torch.Tensor]:
        return [batch_entry(td, next_key(k) if next_ else k) for k in self._obs_keys]

    def _q_inputs(
        self, td: TensorDictBase, next_: bool, action: torch.Tensor
    ) -> list[torch.Tensor]:
        return [
            action if k == self.action_key else batch_entry(td, next_key(k) if next_ else k)
            for k in self._q_in_keys
        ]

    def _target_action(self, td: TensorDictBase) -> torch.Tensor:
        actor = self.target_actor_network_params if self.delay_actor else self._actor_module
        action = actor(*self._obs(td, True))
        if self.policy_noise > 0:
            noise = (torch.randn_like(action) * self.policy_noise).clamp(
                -self.noise_clip, self.noise_clip
            )
            action = action + noise
        if self._bounded:
            action = torch.maximum(torch.minimum(action, self.high), self.low)
        return action

    def _target_value(self, td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, min_i Q'_i(s', a'))``, both shaped like the reward, without gradients."""
        with torch.no_grad():
            a_next = self._target_action(td)
            critics = (
                self.target_qvalue_network_params
                if self.delay_qvalue
                else self.qvalue_network_params
            )
            q_next = critics(*self._q_inputs(td, True, a_next)).min(0).values
            reward, not_term = reward_and_not_terminated(td, self)
            q_next = q_next.reshape(reward.shape)
            target = reward + discount(td, self.gamma, reward) * not_term * q_next
        return target, q_next

    def value_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The critics' loss alone, as torchrl's ``TD3Loss.value_loss``: ``(loss, metadata)``.

        ``metadata`` holds ``td_error`` (``|Q_i(s, a) - y|`` per critic and sample, shaped
        ``[num_qvalue_nets, *batch]``), ``next_state_value``, ``pred_value`` and
        ``target_value`` (means). The per-sample priority (largest error over the critics)
        is written into ``tensordict`` at ``priority_key``, for prioritized buffers.
        """
        td = tensordict
        check_critic_reads_action(self, self._q_in_keys)
        target, q_next = self._target_value(td)
        q_data = self.qvalue_network_params(*self._q_inputs(td, False, td.get(self.action_key)))
        loss_q = (
            distance_loss(q_data, target.unsqueeze(0), self.loss_function)
            .reshape(self.num_qvalue_nets, -1)
            .mean(1)
            .sum()
        )
        with torch.no_grad():
            td_error = (q_data - target.unsqueeze(0)).abs()
            td_error = td_error.reshape(self.num_qvalue_nets, *td.batch_size)
            if not td.is_locked:
                td.set(self.priority_key, td_error.max(0).values)
        metadata = {
            "td_error": td_error,
            "next_state_value": q_next.mean(),
            "pred_value": q_data.detach().mean(),
            "target_value": target.mean(),
        }
        return loss_q, metadata

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The actor's loss alone, as torchrl's ``TD3Loss.actor_loss``: ``(loss, metadata)``
        with ``metadata["state_action_value_actor"]``; the critics get no gradient."""
        check_critic_reads_action(self, self._q_in_keys)
        a_pi = self._actor_module(*self._obs(tensordict, False))
        q_pi = self.qvalue_network_params(*self._q_inputs(tensordict, False, a_pi), detach=True)
        return -q_pi[0].mean(), {"state_action_value_actor": q_pi.detach().mean()}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Both losses (``loss_actor`` and ``loss_qvalue``) and diagnostics; only the
        critics' loss and diagnostics when :attr:`actor_in_forward` is False (a trainer
        computing :meth:`actor_loss` itself, after the critic step, on the updates that
        step the actor: ``TD3Trainer``)."""
        loss_q, metadata = self.value_loss(tensordict)
        out = {
            "loss_qvalue": loss_q,
            "q_mean": metadata["pred_value"],
            "target_value": metadata["target_value"],
            "td_error": metadata["td_error"].max(0).values.mean(),
        }
        if getattr(self, "actor_in_forward", True):
            loss_actor, actor_metadata = self.actor_loss(tensordict)
            out = {"loss_actor": loss_actor, **out}
            # a subclass's actor diagnostics named in its out keys (TD3+BC's bc_loss, lmbd)
            wanted = self._default_out_keys()
            out.update({k: v for k, v in actor_metadata.items() if k in wanted})
        return TensorDict(out, batch_size=[])


class DDPGLoss(TD3Loss):
    """DDPG loss: one critic, no target smoothing noise.

    Args:
        actor_network: a deterministic actor.
        value_network: a ValueOperator reading ``[obs, "action"]``.
        loss_function: critic distance.
        delay_actor: keep a target actor.
        delay_value: keep a target critic.
        gamma: discount.
        priority_key, separate_losses, reduction: as in :class:`TD3Loss`.
    """

    def __init__(
        self,
        actor_network: nn.Module,
        value_network: nn.Module,
        *,
        loss_function: str = "l2",
        delay_actor: bool = False,
        delay_value: bool = True,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            actor_network,
            value_network,
            num_qvalue_nets=1,
            policy_noise=0.0,
            loss_function=loss_function,
            delay_actor=delay_actor,
            delay_qvalue=delay_value,
            gamma=gamma,
            priority_key=priority_key,
            separate_losses=separate_losses,
            reduction=reduction,
        )

    @property
    def value_network_params(self):
        """The critic's parameters (torchrl's DDPG name; ``qvalue_network_params`` here)."""
        return self.qvalue_network_params

    @property
    def target_value_network_params(self):
        """The target critic's tensors (``target_qvalue_network_params`` here)."""
        return self.target_qvalue_network_params if self.delay_qvalue else None

    def _default_out_keys(self) -> list[str]:
        return ["loss_actor", "loss_value", "q_mean", "target_value", "td_error"]

    def loss_value(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The critic's loss alone, as torchrl's ``DDPGLoss.loss_value``: ``(loss,
        metadata)`` with ``td_error`` (per sample), ``pred_value`` and ``target_value``."""
        loss, metadata = self.value_loss(tensordict)
        metadata["td_error"] = metadata["td_error"][0]
        del metadata["next_state_value"]
        return loss, metadata

    def loss_actor(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The actor's loss alone, as torchrl's ``DDPGLoss.loss_actor``: ``(loss, {})``."""
        loss, _ = self.actor_loss(tensordict)
        return loss, {}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = super().forward(tensordict)
        out["loss_value"] = out.pop("loss_qvalue")
        return out
