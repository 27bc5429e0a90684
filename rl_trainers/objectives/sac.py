"""Soft actor-critic (Haarnoja et al. 2018, the version without a state-value network).

Per batch, with ``pi`` the actor, ``Q_1..Q_n`` the critics and ``Q'`` their targets:

* ``a', logp' ~ pi(s')``;  ``y = r + gamma * (1 - terminated) * (min_i Q'_i(s', a') - alpha * logp')``
* ``loss_qvalue = 0.5 * sum_i mean((Q_i(s, a) - y)^2)``
* ``a~, logp ~ pi(s)`` (reparameterised);  ``loss_actor = mean(alpha * logp - min_i Q_i(s, a~))``
  with the critics' parameters detached
* ``loss_alpha = -mean(log_alpha * (logp + target_entropy))``

The actor runs once on ``s`` (with gradients) and once on ``s'`` (without); the critics run
once per role (data, actor, target) as one batched ensemble call each. For an MLP TanhNormal
actor and MLP critics the two paths with gradients run as one autograd node each
(:mod:`rl_trainers.fast.sac`, switch ``SAC_ONE_NODE``); other networks run op by op.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictModuleBase
from tensordict.nn.utils import biased_softplus
from torch import nn

from rl_trainers import fast
from rl_trainers.fast.mlp import fused_mlp_parts, has_hooks
from rl_trainers.fast.sac import SACActorTerms, SACCriticTerms, SACNets, TanhNormalHead, sac_forward
from rl_trainers.modules.builders import ClampedLogStdExtractor
from rl_trainers.modules.distributions import TanhNormal
from rl_trainers.objectives.common import (
    OFF_POLICY_KEYS,
    LossModule,
    TensorDictFn,
    actor_obs_keys,
    batch_entry,
    check_critic_reads_action,
    check_loss_function,
    check_no_shared_parameters,
    check_torchrl_options,
    distance_loss,
    is_plain_module,
    loss_action_spec,
    next_key,
    one_step_target,
    params_view,
    transition_in_keys,
)
from rl_trainers.objectives.ensemble import CriticEnsemble

__all__ = ["SACLoss"]


def _one_node_actor(actor: nn.Module) -> tuple[nn.Sequential, TanhNormalHead] | None:
    """``(mlp, head)`` for SAC's one-node path (:mod:`rl_trainers.fast.sac`) when ``actor``
    is a TanhNormal policy over ``Sequential(mlp, NormalParamExtractor(biased softplus))``
    or ``Sequential(mlp, ClampedLogStdExtractor)`` on one observation key, as
    :func:`~rl_trainers.modules.make_actor` builds it; None for any other actor."""
    module = getattr(actor, "module", None)
    if not (
        type(module) is TensorDictModule
        and getattr(actor, "distribution_class", None) is TanhNormal
        and set(actor.distribution_kwargs) <= {"low", "high"}
        and list(module.out_keys) == ["loc", "scale"]
        and actor._dist_keys == {"loc": "loc", "scale": "scale"}
        and len(module.in_keys) == 1
    ):
        return None
    net = module.module
    if not (type(net) is nn.Sequential and len(net) == 2):
        return None
    mlp, extractor = net
    mapping = getattr(extractor, "scale_mapping", None)
    if type(extractor) is ClampedLogStdExtractor:
        scale = (0.0, 0.0, 0.0, (extractor.log_std_min, extractor.log_std_max))
    elif type(extractor) is NormalParamExtractor and type(mapping) is biased_softplus:
        scale = (float(mapping.bias), float(mapping.min_val), float(extractor.scale_lb), None)
    else:
        return None
    if any(has_hooks(m) for m in (actor, module, net, extractor, mapping) if m is not None):
        return None
    kwargs = actor._dist_kwargs()
    shift, min_val, scale_lb, log_std_bounds = scale
    head = TanhNormalHead(
        shift,
        min_val,
        scale_lb,
        kwargs.get("low", -1.0),
        kwargs.get("high", 1.0),
        TanhNormal,
        log_std_bounds,
    )
    return mlp, head


def _critic_parts(qvalue_network: nn.Module) -> tuple[nn.Module, list]:
    """``(fn(*inputs) -> value, input keys)`` of a critic: the network of a
    ValueOperator/TensorDictModule, or any tensordict module called through a TensorDict."""
    in_keys = list(getattr(qvalue_network, "in_keys", []))
    if is_plain_module(qvalue_network) and in_keys:
        return qvalue_network.module, in_keys
    out_keys = list(getattr(qvalue_network, "out_keys", []))
    if isinstance(qvalue_network, TensorDictModuleBase) and in_keys and out_keys:
        return TensorDictFn(qvalue_network, in_keys, out_keys[-1]), in_keys
    raise TypeError(
        "the critic must be a ValueOperator or another tensordict module, "
        f"got {type(qvalue_network).__name__}"
    )


class SACLoss(LossModule):
    """SAC loss with twin (or ``num_qvalue_nets``) critics and a learned temperature.

    The loss owns the critics' parameters (stacked in ``qvalue_network_params``); the actor is
    shared with the collector.

    Args:
        actor_network: a probabilistic actor with reparameterised samples (TanhNormal).
        qvalue_network: a ValueOperator reading ``[obs, "action"]`` and writing one value.
        num_qvalue_nets: number of critics.
        loss_function: critic distance ``"smooth_l1"`` (torchrl's default), ``"l2"`` or
            ``"l1"``.
        alpha_init: initial temperature.
        min_alpha: lower clamp of alpha (None: none).
        max_alpha: upper clamp of alpha (None: none).
        action_spec: the action spec (for ``target_entropy="auto"``).
        fixed_alpha: keep alpha constant.
        target_entropy: ``"auto"`` (``-prod(action shape)``) or a float.
        delay_actor: unused (kept for signature compatibility; SAC needs no target actor).
        delay_qvalue: keep target critics (update them with SoftUpdate).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        priority_key: key of the per-sample TD errors written into the batch (``"td_error"``).
        deactivate_vmap: torchrl's option (no effect: the critics run as one batched call).
        device: the device the loss (its networks, targets and alpha) is moved to (None:
            where the networks are).
        value_network, separate_losses, reduction: torchrl's options, accepted at the
            values implemented here (None, no parameters shared by actor and critics,
            ``"mean"``); others raise ``NotImplementedError``.
    """

    one_step_targets = True
    _key_attrs = OFF_POLICY_KEYS
    _dispatch_exclude = ("q_mean", "td_error")

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
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        value_network: nn.Module | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        device: torch.device | str | None = None,
        priority_key: str | None = None,
        deactivate_vmap: bool = False,
    ) -> None:
        super().__init__()
        self.priority_key = "td_error" if priority_key is None else priority_key
        if value_network is not None:
            raise NotImplementedError(
                "SACLoss(value_network=...) (SAC v1, with a state-value network) is not "
                "supported; the loss is SAC v2 (no value network), torchrl's default"
            )
        check_torchrl_options(1, (), reduction)
        if separate_losses:
            check_no_shared_parameters(actor_network, qvalue_network, "critics")
        self.separate_losses = separate_losses
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"SAC needs a probabilistic actor with get_dist(), got {type(actor_network).__name__}"
            )
        self.actor_network = actor_network
        module, self._q_in_keys = _critic_parts(qvalue_network)
        self.qvalue_network_params = CriticEnsemble(module, num_qvalue_nets)
        self.num_qvalue_nets = num_qvalue_nets
        self.delay_qvalue = delay_qvalue
        if delay_qvalue:
            self._register_target("qvalue_network", self.qvalue_network_params)
        self.loss_function = check_loss_function(loss_function)
        self._obs_keys = actor_obs_keys(actor_network)
        log_alpha = torch.tensor(math.log(alpha_init))
        if fixed_alpha:
            self.register_buffer("log_alpha", log_alpha)
        else:
            self.log_alpha = nn.Parameter(log_alpha)
        self.fixed_alpha = fixed_alpha
        self.min_log_alpha = None if min_alpha is None else math.log(min_alpha)
        self.max_log_alpha = None if max_alpha is None else math.log(max_alpha)
        spec = loss_action_spec(action_spec, actor_network)
        if target_entropy == "auto":
            if spec is None:
                self._target_entropy = None  # resolved from the first batch's action shape
            else:
                self._target_entropy = -float(torch.Size(spec.shape).numel())
        else:
            self._target_entropy = float(target_entropy)
        if gamma is not None:
            self.gamma = float(gamma)
        if device is not None:
            self.to(device)

    def _source_of(self, name: str) -> nn.Module:
        return self.qvalue_network_params

    @property
    def actor_network_params(self):
        """The actor's parameters as a TensorDict (torchrl's ``actor_network_params``)."""
        return params_view(self.actor_network)

    @property
    def in_keys(self) -> list:
        """The batch entries :meth:`forward` reads."""
        return transition_in_keys(self._obs_keys, self._q_in_keys, loss=self)

    def _default_out_keys(self) -> list[str]:
        """The entries :meth:`forward` writes (the last three only with ``diagnostics``)."""
        return ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy", "q_mean", "td_error"]

    @property
    def target_entropy(self) -> float | None:
        return self._target_entropy

    @property
    def alpha(self) -> torch.Tensor:
        log_alpha = self.log_alpha.detach()
        if self.min_log_alpha is not None or self.max_log_alpha is not None:
            log_alpha = log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)
        return log_alpha.exp()

    def _q_inputs(
        self, td: TensorDictBase, obs_next: bool, action: torch.Tensor
    ) -> list[torch.Tensor]:
        inputs = []
        for key in self._q_in_keys:
            if key == self.action_key:
                inputs.append(action)
            else:
                inputs.append(batch_entry(td, next_key(key) if obs_next else key))
        return inputs

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        td = tensordict
        batch = td.batch_size
        check_critic_reads_action(self, self._q_in_keys)
        action = td.get(self.action_key)
        self._infer_target_entropy(action, len(batch))
        alpha = self.alpha
        terms = self._one_node_terms(td, action, alpha)
        if terms is None:
            terms = self._op_by_op_terms(td, action, alpha)
        loss_actor, logp_pi, loss_q, q_data, target = terms
        loss_alpha = self._alpha_term(logp_pi)

        with torch.no_grad():
            td_error = (q_data - target.unsqueeze(0)).abs().max(0).values
            if not td.is_locked:
                td.set(
                    self.priority_key,
                    td_error.reshape(batch) if td_error.numel() == batch.numel() else td_error,
                )
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": loss_q,
            "loss_alpha": loss_alpha,
            "alpha": alpha,
        }
        if self.diagnostics:  # the trainer asks for them only for logged batches
            out["entropy"] = -logp_pi.detach().mean()
            out["q_mean"] = q_data.detach().mean()
            out["td_error"] = td_error.mean()
        return TensorDict(out, batch_size=[])

    # -- pieces shared with the SAC-family losses (CrossQ, REDQ, CQL, discrete SAC) ----------
    def _infer_target_entropy(self, action: torch.Tensor, batch_dims: int = 1) -> None:
        """``target_entropy="auto"`` without an action spec: ``-prod(action shape)``, read
        from the first batch's ``action`` (``batch_dims`` leading dims)."""
        if self._target_entropy is None:
            self._target_entropy = -float(action.shape[batch_dims:].numel())

    def _flat(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The batch with one batch dim, after checking that the critics read the action."""
        check_critic_reads_action(self, self._q_in_keys)
        return tensordict if tensordict.ndim == 1 else tensordict.reshape(-1)

    def _sample(self, td: TensorDictBase, next_: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(a, log pi(a|s))`` reparameterised at ``s`` (or at ``s'`` with ``next_``)."""
        obs = {k: batch_entry(td, next_key(k) if next_ else k) for k in self._obs_keys}
        dist = self.actor_network.get_dist(TensorDict(obs, batch_size=td.batch_size))
        return dist.rsample_and_log_prob()

    def _alpha_term(self, log_prob: torch.Tensor) -> torch.Tensor:
        """``-mean(log_alpha * (log_prob + target_entropy))``, ``log_prob`` not
        differentiated (nothing at all with ``fixed_alpha``)."""
        loss = -(self.log_alpha * (log_prob.detach() + self._target_entropy)).mean()
        return loss.detach() if self.fixed_alpha else loss

    def _write_priority(self, tensordict: TensorDictBase, priority: torch.Tensor) -> None:
        """Writes the per-sample ``priority`` at ``priority_key``, shaped as the batch
        (not into a locked batch)."""
        if not tensordict.is_locked:
            tensordict.set(self.priority_key, priority.reshape(tensordict.batch_size))

    def _target_net(self) -> CriticEnsemble:
        return (
            self.target_qvalue_network_params if self.delay_qvalue else self.qvalue_network_params
        )

    def _target_value(self, td, q_next, logp_next, alpha) -> torch.Tensor:
        """``r + gamma * (1 - terminated) * (q_next - alpha * logp_next)``, shaped as the reward."""
        return one_step_target(td, self.gamma, q_next - alpha * logp_next.unsqueeze(-1), self)

    def _op_by_op_terms(self, td, action, alpha) -> tuple:
        """``(loss_actor, logp_pi, loss_qvalue, q_data [n_q, *B, 1], target)`` as a graph of
        single ops, for any actor and critic."""
        # actor: s with gradients; s' without (a joint call would back-propagate through both)
        a_pi, logp_pi = self._sample(td, False)
        with torch.no_grad():
            a_next, logp_next = self._sample(td, True)
            q_next = self._target_net()(*self._q_inputs(td, True, a_next)).min(0).values
            target = self._target_value(td, q_next, logp_next, alpha)

        q_data = self.qvalue_network_params(*self._q_inputs(td, False, action))  # [n_q, *B, 1]
        dist_q = distance_loss(q_data, target.unsqueeze(0), self.loss_function)
        loss_q = 0.5 * dist_q.reshape(self.num_qvalue_nets, -1).mean(1).sum()
        q_pi = (
            self.qvalue_network_params(*self._q_inputs(td, False, a_pi), detach=True).min(0).values
        )
        loss_actor = (alpha * logp_pi.unsqueeze(-1) - q_pi).mean()
        return loss_actor, logp_pi, loss_q, q_data, target

    def _critic_sides(self, td: TensorDictBase, obs_next: bool) -> tuple:
        """The critics' inputs left and right of the action, each concatenated (or None)."""
        inputs = self._q_inputs(td, obs_next, None)
        slot = self._q_in_keys.index(self.action_key)
        halves = (inputs[:slot], inputs[slot + 1 :])
        return tuple(torch.cat(half, dim=-1) if half else None for half in halves)

    def _one_node_terms(self, td, action, alpha) -> tuple | None:
        """The same as :meth:`_op_by_op_terms` with the actor and critic paths as one
        autograd node each (:mod:`rl_trainers.fast.sac`), or None where those
        do not apply: other network shapes, batches of more than one dim, no gradients,
        ``torch.compile`` tracing."""
        actor = _one_node_actor(self.actor_network) if fast.SAC_ONE_NODE else None
        if (
            actor is None
            or len(td.batch_size) != 1
            or self.action_key not in self._q_in_keys
            or not torch.is_grad_enabled()
            or torch.compiler.is_compiling()
        ):
            return None
        mlp, head = actor
        key = self._obs_keys[0]
        s, s_next = batch_entry(td, key), batch_entry(td, next_key(key))
        critic = self.qvalue_network_params
        target = self._target_net()
        if not critic._plain_mlp or has_hooks(critic) or has_hooks(target):
            return None  # not plain MLPs, or hooks that must see the critics called
        actor_parts = fused_mlp_parts(mlp, s)
        x = torch.cat(self._q_inputs(td, False, action), dim=-1)
        critic_params = critic._fused_params(x, False)
        target_params = target._fused_params(x, True)
        if actor_parts is None or critic_params is None or target_params is None:
            return None
        acts, biases, actor_params = actor_parts
        n = s.shape[0]
        width = [p for p in actor_params if p.dim() == 2][-1].shape[0] // 2
        single_output = [p for p in critic_params if p.dim() == 3][-1].shape[1] == 1
        if s.dim() != 2 or s_next.shape != s.shape or not single_output:
            return None
        eps = torch.randn(n, width, dtype=s.dtype, device=s.device)
        eps_next = torch.randn(n, width, dtype=s.dtype, device=s.device)
        nets = SACNets(
            (acts, biases),
            (critic._act_codes, critic._has_bias),
            head,
            self.loss_function,
            distance_loss,
        )
        fwd = sac_forward(
            nets,
            s,
            s_next,
            (eps, eps_next),
            x,
            self._critic_sides(td, False),
            self._critic_sides(td, True),
            alpha,
            lambda q_next, logp_next: self._target_value(td, q_next, logp_next, alpha),
            (actor_params, critic_params, target_params),
        )
        loss_q = SACCriticTerms.apply(nets, fwd, *critic_params)
        loss_actor, logp_pi = SACActorTerms.apply(nets, fwd, *actor_params)
        return loss_actor, logp_pi, loss_q, fwd.q_data, fwd.target


def __getattr__(name: str):
    # torchrl defines DiscreteSACLoss in objectives/sac.py; it lives in .discrete_sac here
    if name == "DiscreteSACLoss":
        from rl_trainers.objectives.discrete_sac import DiscreteSACLoss

        return DiscreteSACLoss
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
