"""Policy-gradient losses with a critic: PPO (clip, adaptive KL penalty), A2C and REINFORCE.

Each reads ``action``, ``sample_log_prob`` (the acting policy's log-probability), the
observation keys of the actor and critic, and ``advantage``/``value_target`` (computed by the
value estimator if absent). The math, for ratio ``r = exp(log_prob - sample_log_prob)``:

* clip:   ``-mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A))``
* KL-pen: ``-mean(r * A) + beta * KL`` with ``beta`` adapted towards ``dtarg``
* A2C:    ``-mean(log_prob * A)``
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.fast.mlp import GLOBAL_HOOKS, fused_mlp_parts, has_hooks
from rl_trainers.fast.ppo import (
    ActorCriticClipPPOTerms,
    ClipPPOCategoricalTerms,
    ClipPPOSettings,
    GaussianActorCriticClipPPOTerms,
    actor_critic_grads,
    gaussian_actor_critic_grads,
)
from rl_trainers.modules.actors import ProbabilisticActor
from rl_trainers.modules.builders import state_independent_gaussian_net
from rl_trainers.modules.distributions import (
    Categorical,
    IndependentNormal,
    OneHotCategorical,
    one_hot_index,
)
from rl_trainers.modules.models import MLP
from rl_trainers.objectives.common import (
    LossModule,
    ValueEstimators,
    call_tensor_module,
    check_loss_function,
    check_no_shared_parameters,
    check_torchrl_options,
    constant,
    distance_loss,
    explained_variance,
    gradient_buffers,
    params_view,
)

__all__ = ["PPOLoss", "ClipPPOLoss", "KLPENPPOLoss", "A2CLoss", "ReinforceLoss"]


class _DerivedInputs:
    """Tensors derived from batch entries, recomputed only when an entry changes.

    PPO's epochs read the same batch again and again (with one minibatch per epoch, the very
    same tensors), so normalised advantages and action indices are computed once per batch
    rather than once per step. An entry counts as changed when the batch holds another
    tensor or the same tensor was modified in place (its version counter moved).
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[torch.Tensor, int, torch.Tensor]] = {}

    def get(self, name: str, source: torch.Tensor, derive) -> torch.Tensor:
        if source.requires_grad or torch.compiler.is_compiling():
            return derive(source)
        hit = self._entries.get(name)
        if hit is not None and hit[0] is source and hit[1] == source._version:
            return hit[2]
        value = derive(source)
        self._entries[name] = (source, source._version, value)
        return value


def _normalized(adv: torch.Tensor) -> torch.Tensor:
    return (adv - adv.mean()) / adv.std().clamp_min(1e-8)


def _one_coefficient(name: str, value):
    """torchrl's per-action-head mapping ``{"action": 0.01}``: one head here, so one value."""
    if isinstance(value, dict):
        if len(value) != 1:
            raise NotImplementedError(
                f"{name}={value}: one coefficient per action head needs composite actions, "
                "which the losses do not support; pass one number"
            )
        (value,) = value.values()
    return value


def _alias(name: str, value, old_name: str, old_value, default: float) -> float:
    """torchrl's losses take both spellings (``entropy_coeff`` is the older one)."""
    value = _one_coefficient(name, value)
    old_value = _one_coefficient(old_name, old_value)
    if value is not None and old_value is not None and float(value) != float(old_value):
        raise ValueError(f"got both {name}={value} and {old_name}={old_value}; pass one")
    value = value if value is not None else old_value
    return default if value is None else float(value)


class _ActorCriticLoss(LossModule):
    """Shared plumbing: advantage retrieval, critic loss, entropy bonus."""

    default_value_estimator = ValueEstimators.GAE
    _key_attrs = {
        "advantage": "advantage_key",
        "value_target": "value_target_key",
        "value": "value_key",
        "sample_log_prob": "log_prob_key",
        "action": "action_key",
        # read by the value estimator only (e.g. ``set_keys(done="end-of-life")``)
        "reward": "reward_key",
        "done": "done_key",
        "terminated": "terminated_key",
    }
    reward_key, done_key, terminated_key = "reward", "done", "terminated"

    def __init__(
        self,
        actor_network: nn.Module,
        critic_network: nn.Module | None,
        *,
        entropy_bonus: bool = True,
        entropy_coef: float | None = None,
        critic_coef: float | None = None,
        loss_critic_type: str = "smooth_l1",
        normalize_advantage: bool = False,
        clip_value: float | None = None,
        gamma: float | None = None,
        advantage_key: str = "advantage",
        value_target_key: str = "value_target",
        value_key: str = "state_value",
        log_prob_key: str = "sample_log_prob",
        action_key: str = "action",
        entropy_coeff: float | None = None,
        critic_coeff: float | None = None,
        samples_mc_entropy: int = 1,
        log_explained_variance: bool = True,
        normalize_advantage_exclude_dims: tuple = (),
        separate_losses: bool = False,
        reduction: str | None = None,
        functional: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        entropy_coef = _alias("entropy_coef", entropy_coef, "entropy_coeff", entropy_coeff, 0.01)
        critic_coef = _alias("critic_coef", critic_coef, "critic_coeff", critic_coeff, 1.0)
        check_torchrl_options(samples_mc_entropy, normalize_advantage_exclude_dims, reduction)
        if separate_losses and critic_network is not None:
            check_no_shared_parameters(actor_network, critic_network, "critic")
        self.separate_losses = separate_losses
        self.log_explained_variance = log_explained_variance
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"actor_network must be a probabilistic actor with get_dist(), got {type(actor_network).__name__}"
            )
        self.actor_network = actor_network
        self.critic_network = critic_network
        self.entropy_bonus = entropy_bonus
        self.register_buffer("entropy_coef", torch.tensor(float(entropy_coef)), persistent=False)
        self.register_buffer("critic_coef", torch.tensor(float(critic_coef)), persistent=False)
        self.loss_critic_type = check_loss_function(loss_critic_type)
        self.normalize_advantage = normalize_advantage
        if clip_value is not None and clip_value <= 0:
            raise ValueError(f"clip_value must be positive or None, got {clip_value}")
        self.clip_value = clip_value
        self.advantage_key = advantage_key
        self.value_target_key = value_target_key
        self.value_key = value_key
        self.log_prob_key = log_prob_key
        self.action_key = action_key
        if gamma is not None:
            self.gamma = float(gamma)
        self._derived = _DerivedInputs()
        if device is not None:
            self.to(device)

    def _estimator_network(self):
        return self.critic_network

    #: the objective's entries, first in :attr:`out_keys`
    _objective_keys: tuple = ("loss_objective",)

    def _default_out_keys(self) -> list[str]:
        """The entries :meth:`forward` writes (diagnostics included)."""
        keys = [*self._objective_keys, "entropy"]
        if self.entropy_bonus:
            keys.append("loss_entropy")
        if self.critic_network is not None:
            keys.append("loss_critic")
            if self.log_explained_variance:
                keys.append("explained_variance")
        return keys

    @property
    def actor_network_params(self):
        """The actor's parameters as a TensorDict (torchrl's ``actor_network_params``)."""
        return params_view(self.actor_network)

    @property
    def critic_network_params(self):
        """The critic's parameters as a TensorDict (None without a critic)."""
        return None if self.critic_network is None else params_view(self.critic_network)

    @property
    def in_keys(self) -> list:
        """The batch entries :meth:`forward` reads once ``advantage``/``value_target`` exist.

        A trainer can ``batch.select(*loss.in_keys)`` before cutting minibatches, so that
        indexing does not copy entries the loss never reads.
        """
        keys: list = [*getattr(self.actor_network, "in_keys", []), self.action_key]
        keys += [self.log_prob_key, self.advantage_key]
        if self.critic_network is not None:
            keys += [*getattr(self.critic_network, "in_keys", []), self.value_target_key]
            if self.clip_value is not None:
                keys.append(self.value_key)
        return list(dict.fromkeys(keys))

    def _advantage(self, td: TensorDictBase) -> torch.Tensor:
        adv = td.get(self.advantage_key, None)
        if adv is None:
            with torch.no_grad():
                self.value_estimator(td)
            adv = td.get(self.advantage_key)
        if self.normalize_advantage and adv.numel() > 1:
            adv = self._derived.get("normalized_advantage", adv, _normalized)
        return adv

    def _log_prob_and_dist(self, td: TensorDictBase):
        dist = self.actor_network.get_dist(td)
        return dist.log_prob(td.get(self.action_key)), dist

    def _critic_loss(self, td: TensorDictBase, out: dict) -> torch.Tensor:
        target = td.get(self.value_target_key)
        old_value = td.get(self.value_key, None) if self.clip_value is not None else None
        value = call_tensor_module(self.critic_network, td, self.value_key)
        loss = distance_loss(value, target, self.loss_critic_type)
        if old_value is not None:
            clipped = old_value + (value - old_value).clamp(-self.clip_value, self.clip_value)
            loss = torch.maximum(loss, distance_loss(clipped, target, self.loss_critic_type))
        if self.diagnostics and self.log_explained_variance:
            out["explained_variance"] = explained_variance(target.detach(), value.detach())
        return self.critic_coef * loss.mean()

    def _entropy(self, dist, out: dict) -> None:
        if not self.entropy_bonus:
            if self.diagnostics:
                with torch.no_grad():  # a diagnostic only: keep it out of the autograd graph
                    out["entropy"] = dist.entropy().mean()
            return
        entropy = dist.entropy()
        out["entropy"] = entropy.detach().mean()
        out["loss_entropy"] = -self.entropy_coef * entropy.mean()

    def _finish(self, td: TensorDictBase, out: dict) -> TensorDictBase:
        if self.critic_network is not None:
            out["loss_critic"] = self._critic_loss(td, out)
        # every entry is a scalar tensor built here: skip the constructor's validation
        return TensorDict._new_unsafe(out, batch_size=torch.Size([]))


class PPOLoss(_ActorCriticLoss):
    """Unclipped PPO surrogate ``-mean(r * A)`` (base of the clip and KL-penalty variants).

    Args:
        actor_network: probabilistic actor (``get_dist``).
        critic_network: state-value critic writing ``"state_value"``.
        entropy_bonus: add ``-entropy_coef * entropy``.
        entropy_coef: entropy weight.
        critic_coef: critic loss weight.
        loss_critic_type: ``"smooth_l1"``, ``"l2"`` or ``"l1"``.
        normalize_advantage: standardise the advantage per batch.
        clip_value: clip the value update around the stored ``state_value`` (PPO2 style);
            ``ClipPPOLoss`` also takes a bool (``True``: clip at ``clip_epsilon``).
        gamma: discount of the default value estimator.
        entropy_coeff, critic_coeff: torchrl's other spellings of the two weights.
        log_explained_variance: write the ``explained_variance`` diagnostic.
        device: the device the loss (its networks and coefficients) is moved to (None:
            where the networks are).
        samples_mc_entropy, normalize_advantage_exclude_dims, reduction, functional,
            separate_losses: torchrl's options, accepted at the values implemented here
            (1, ``()``, ``"mean"``, any, no parameters shared by actor and critic); others
            raise ``NotImplementedError``.
    """

    _objective_keys = ("loss_objective", "kl_approx")

    def _ratio(self, td: TensorDictBase, out: dict, dist=None):
        if dist is None:
            log_prob, dist = self._log_prob_and_dist(td)
        else:
            log_prob = dist.log_prob(td.get(self.action_key))
        log_weight = (log_prob - td.get(self.log_prob_key)).unsqueeze(-1)
        ratio = log_weight.exp()
        if self.diagnostics:
            with torch.no_grad():
                out["kl_approx"] = ((ratio - 1) - log_weight).mean()
        return ratio, log_weight, dist

    @torch.no_grad()
    def measure_kl(self, tensordict: TensorDictBase) -> torch.Tensor:
        """The mean KL(collecting policy || current policy) over ``tensordict``'s actions,
        estimated as ``(r - 1) - log r`` (unbiased, non-negative): the ``kl_approx``
        diagnostic, and what SB3's ``target_kl`` compares."""
        log_prob, _ = self._log_prob_and_dist(tensordict)
        log_weight = log_prob - tensordict.get(self.log_prob_key)
        return (log_weight.exp() - 1 - log_weight).mean()

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = self._advantage(tensordict)
        out: dict = {}
        ratio, _, dist = self._ratio(tensordict, out)
        out["loss_objective"] = -(ratio * adv).mean()
        self._entropy(dist, out)
        return self._finish(tensordict, out)


class ClipPPOLoss(PPOLoss):
    """Clipped PPO (Schulman et al. 2017).

    Args:
        actor_network: probabilistic actor.
        critic_network: state-value critic.
        clip_epsilon: ratio clip range.
        **kwargs: see :class:`PPOLoss`.
    """

    _objective_keys = ("loss_objective", "kl_approx", "clip_fraction")

    def __init__(
        self,
        actor_network: nn.Module,
        critic_network: nn.Module | None = None,
        *,
        clip_epsilon: float = 0.2,
        **kwargs,
    ) -> None:
        clip_value = kwargs.get("clip_value")
        if isinstance(clip_value, bool):  # torchrl: True clips the value at clip_epsilon
            kwargs["clip_value"] = clip_epsilon if clip_value else None
        super().__init__(actor_network, critic_network, **kwargs)
        if clip_epsilon <= 0:
            raise ValueError(f"clip_epsilon must be positive, got {clip_epsilon}")
        # a buffer, as in torchrl: scripts anneal it with ``loss.clip_epsilon.copy_(eps)``
        eps = torch.tensor(float(clip_epsilon), device=self.entropy_coef.device)
        self.register_buffer("clip_epsilon", eps, persistent=False)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = self._advantage(tensordict)
        out: dict = {}
        if self._actor_critic_terms(tensordict, adv, out):
            return TensorDict._new_unsafe(out, batch_size=torch.Size([]))
        dist = self.actor_network.get_dist(tensordict)
        if type(dist) in (Categorical, OneHotCategorical) and self._categorical_terms(
            tensordict, dist, adv, out
        ):
            return TensorDict._new_unsafe(out, batch_size=torch.Size([]))
        ratio, _, dist = self._ratio(tensordict, out, dist)
        eps = self.clip_epsilon
        gain = torch.minimum(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
        out["loss_objective"] = -gain.mean()
        if self.diagnostics:
            with torch.no_grad():
                out["clip_fraction"] = ((ratio - 1).abs() > eps).float().mean()
        self._entropy(dist, out)
        return self._finish(tensordict, out)

    def _terms_settings(self) -> ClipPPOSettings:
        entropy_coef = float(self.entropy_coef) if self.entropy_bonus else None
        return ClipPPOSettings(
            float(self.clip_epsilon),
            float(self.critic_coef),
            entropy_coef,
            self.loss_critic_type,
            distance_loss,
        )

    def _action_index(self, td: TensorDictBase, one_hot: bool, n: int) -> torch.Tensor:
        action = td.get(self.action_key)
        if not one_hot:
            return action.reshape(n).long()
        return self._derived.get("action_index", action, lambda a: one_hot_index(a).reshape(n))

    def _actor_critic_inputs(self, td: TensorDictBase, adv: torch.Tensor) -> tuple | None:
        """``(args, params, target)`` for :class:`ActorCriticClipPPOTerms` when the actor is
        categorical over a plain MLP's logits and the critic a plain MLP on the same input;
        None otherwise."""
        nets = _categorical_mlp_actor_critic(self.actor_network, self.critic_network)
        if nets is None or self.clip_value is not None:
            return None
        actor_mlp, critic_mlp, key = nets
        x, target = td.get(key), td.get(self.value_target_key)
        fused = _fused_actor_critic(actor_mlp, critic_mlp, x, adv, target)
        if fused is None:
            return None
        mlps, params, n = fused
        one_hot = self.actor_network.distribution_class is OneHotCategorical
        args = (
            mlps,
            self._terms_settings(),
            x.reshape(n, -1),
            self._action_index(td, one_hot, n),
            td.get(self.log_prob_key).reshape(n),
            adv.reshape(n, 1),
            target.reshape(n, 1),
        )
        return args, params, target

    def _actor_critic_terms(self, td: TensorDictBase, adv: torch.Tensor, out: dict) -> bool:
        """Both networks and the loss terms as one autograd node
        (:class:`ActorCriticClipPPOTerms` where :meth:`_actor_critic_inputs` applies,
        :class:`GaussianActorCriticClipPPOTerms` where :meth:`_gaussian_inputs` does);
        False, writing nothing, otherwise."""
        inputs = self._actor_critic_inputs(td, adv)
        node = ActorCriticClipPPOTerms
        if inputs is None:
            inputs, node = self._gaussian_inputs(td, adv), GaussianActorCriticClipPPOTerms
        if inputs is None:
            return False
        args, params, target = inputs
        *terms, value = node.apply(*args, *params)
        self._write_terms(out, terms, value, target)
        return True

    def _gaussian_inputs(self, td: TensorDictBase, adv: torch.Tensor) -> tuple | None:
        """``(args, params, target)`` for :class:`GaussianActorCriticClipPPOTerms` when the
        actor is SB3's Gaussian over a plain MLP (:func:`_gaussian_mlp_actor_critic`) and the
        critic a plain MLP on the same input; None otherwise."""
        nets = _gaussian_mlp_actor_critic(self.actor_network, self.critic_network)
        if nets is None or self.clip_value is not None:
            return None
        actor_mlp, head, critic_mlp, key = nets
        x, target = td.get(key), td.get(self.value_target_key)
        fused = _fused_actor_critic(actor_mlp, critic_mlp, x, adv, target)
        if fused is None:
            return None
        mlps, params, n = fused
        log_scale = head.state_independent_scale
        action = td.get(self.action_key)
        d = log_scale.numel()
        if log_scale.shape != (d,) or action.shape != (*x.shape[:-1], d):
            return None
        if action.dtype != x.dtype:
            return None
        args = (
            mlps,
            self._terms_settings(),
            float(head.scale_lb),
            x.reshape(n, -1),
            action.reshape(n, d),
            td.get(self.log_prob_key).reshape(n),
            adv.reshape(n, 1),
            target.reshape(n, 1),
        )
        return args, (log_scale, *params), target

    def loss_and_grads(
        self, tensordict: TensorDictBase, loss_keys: Sequence[str] | None = None
    ) -> TensorDictBase | None:
        """See :meth:`LossModule.loss_and_grads`: done for a categorical MLP actor, or SB3's
        Gaussian over an MLP, and an MLP critic on the same input (the one-node paths of
        :meth:`forward`)."""
        if has_hooks(self) or any(GLOBAL_HOOKS):
            return None  # forward hooks must see the call
        entries = ["loss_objective", "loss_critic"]
        if self.entropy_bonus:
            entries.append("loss_entropy")
        keys = entries if loss_keys is None else list(loss_keys)
        if not keys or not set(keys) <= set(entries):
            return None
        adv = self._advantage(tensordict)
        inputs, grads = self._actor_critic_inputs(tensordict, adv), actor_critic_grads
        if inputs is None:
            inputs, grads = self._gaussian_inputs(tensordict, adv), gaussian_actor_critic_grads
        if inputs is None or not torch.is_grad_enabled():
            return None
        args, params, target = inputs
        like = params[-1]  # the constants' dtype and device
        scales = [
            constant(float(k in keys), like.dtype, like.device)
            for k in ("loss_objective", "loss_critic", "loss_entropy")
        ]
        *terms, value = grads(*args, params, scales, gradient_buffers(params))
        out: dict = {}
        self._write_terms(out, terms, value, target)
        return TensorDict._new_unsafe(out, batch_size=torch.Size([]))

    def _categorical_terms(
        self, td: TensorDictBase, dist: Categorical, adv: torch.Tensor, out: dict
    ) -> bool:
        """The loss terms of a categorical policy, after its network, through
        :class:`ClipPPOCategoricalTerms` (one autograd node instead of ~25); False, writing
        nothing, where it does not apply (no critic, value clipping, unusual shapes)."""
        if self.critic_network is None or self.clip_value is not None:
            return False
        logits = dist.logits
        n = logits[..., 0].numel()
        target = td.get(self.value_target_key)
        value = call_tensor_module(self.critic_network, td, self.value_key)
        if not (adv.numel() == value.numel() == target.numel() == n) or adv.requires_grad:
            return False
        # the node sees the value detached and the critic term is computed beside it, so
        # the actor's graph and the critic's stay apart: a backward pass on the actor's
        # terms alone (one OptimizerHook per loss component) neither runs nor frees the
        # critic's graph, which the pass on loss_critic then needs, and vice versa
        terms = ClipPPOCategoricalTerms.apply(
            logits.reshape(n, -1),
            value.detach().reshape(n, 1),
            self._action_index(td, isinstance(dist, OneHotCategorical), n),
            td.get(self.log_prob_key).reshape(n),
            adv.reshape(n, 1),
            target.reshape(n, 1),
            self._terms_settings(),
        )
        distance = distance_loss(value.reshape(n, 1), target.reshape(n, 1), self.loss_critic_type)
        terms = (terms[0], distance.mean() * self.critic_coef, *terms[2:])
        self._write_terms(out, terms, value, target)
        return True

    def _write_terms(self, out: dict, terms, value: torch.Tensor, target: torch.Tensor) -> None:
        """The entries, in the order of the op-by-op path, from the one-node outputs."""
        loss_objective, loss_critic, loss_entropy, entropy, log_weight = terms
        if self.diagnostics:
            ratio = log_weight.exp()
            out["kl_approx"] = ((ratio - 1) - log_weight).mean()
        out["loss_objective"] = loss_objective
        if self.diagnostics:
            out["clip_fraction"] = ((ratio - 1).abs() > self.clip_epsilon).float().mean()
        if self.entropy_bonus:
            out["entropy"] = entropy
            out["loss_entropy"] = loss_entropy
        elif self.diagnostics:
            out["entropy"] = entropy
        if self.diagnostics and self.log_explained_variance:
            value = value.detach().reshape(target.shape)
            out["explained_variance"] = explained_variance(target.detach(), value)
        out["loss_critic"] = loss_critic


def _fused_actor_critic(actor_mlp: MLP, critic_mlp: MLP, x, adv, target) -> tuple | None:
    """``(nets, params, n)`` for the one-node paths: both MLPs' fused parts on ``x`` as
    the nodes take them (``((actor_acts, actor_biases, n_actor_params), (critic_acts,
    critic_biases))``, the actor's parameters then the critic's) and the number of samples;
    None where an MLP cannot run fused, the advantage needs a gradient, or the advantage and
    target are not one value per sample."""
    actor_parts, critic_parts = fused_mlp_parts(actor_mlp, x), fused_mlp_parts(critic_mlp, x)
    if actor_parts is None or critic_parts is None or adv.requires_grad:
        return None
    n = x[..., 0].numel()
    if not adv.numel() == target.numel() == n:
        return None
    (actor_acts, actor_biases, actor_params) = actor_parts
    (critic_acts, critic_biases, critic_params) = critic_parts
    nets = ((actor_acts, actor_biases, len(actor_params)), (critic_acts, critic_biases))
    return nets, (*actor_params, *critic_params), n


def _categorical_mlp_actor_critic(actor: nn.Module, critic: nn.Module | None) -> tuple | None:
    """``(actor MLP, critic MLP, input key)`` when the actor is a categorical
    ProbabilisticActor over the logits of a plain MLP and the critic a one-output MLP on the
    same single input, both wrapped by plain TensorDictModules; else None."""
    module = getattr(actor, "module", None)
    if type(actor) is not ProbabilisticActor or type(module) is not TensorDictModule:
        return None
    if actor.distribution_class not in (Categorical, OneHotCategorical):
        return None
    if list(actor._dist_keys) != ["logits"] or list(module.out_keys) != actor._param_keys:
        return None
    actor_mlp, critic_mlp = module.module, _critic_mlp(critic, module.in_keys)
    if critic_mlp is None or not isinstance(actor_mlp, MLP) or actor_mlp.out_shape is not None:
        return None
    if any(has_hooks(m) for m in (actor, module, actor_mlp)):
        return None  # the modules are not called on this path: a hook must see its call
    return actor_mlp, critic_mlp, module.in_keys[0]


def _critic_mlp(critic: nn.Module | None, in_keys: list) -> MLP | None:
    """The one-output MLP of a plain TensorDictModule ``critic`` reading exactly the single
    key ``in_keys``, nothing hooked (the one-node paths do not call it); else None."""
    if not isinstance(critic, TensorDictModule) or type(critic).forward is not (
        TensorDictModule.forward
    ):
        return None
    if len(in_keys) != 1 or list(critic.in_keys) != list(in_keys):
        return None
    mlp = critic.module
    if not isinstance(mlp, MLP) or mlp.out_shape is not None:
        return None
    if has_hooks(critic) or has_hooks(mlp):
        return None
    linears = [m for m in mlp if type(m) is nn.Linear]
    if len(critic.out_keys) != 1 or not linears or linears[-1].out_features != 1:
        return None
    return mlp


def _gaussian_mlp_actor_critic(actor: nn.Module, critic: nn.Module | None) -> tuple | None:
    """``(actor MLP, scale module, critic MLP, input key)`` when the actor is a
    ProbabilisticActor with an ``IndependentNormal`` (no extra arguments) over
    ``nn.Sequential(MLP, AddStateIndependentNormalScale)`` with the ``exp`` mapping (SB3's
    Gaussian policy) and the critic a one-output MLP on the same single input, both wrapped
    by plain TensorDictModules, nothing hooked; else None."""
    module = getattr(actor, "module", None)
    if type(actor) is not ProbabilisticActor or type(module) is not TensorDictModule:
        return None
    if actor.distribution_class is not IndependentNormal or actor._dist_kwargs():
        return None
    if sorted(actor._dist_keys) != ["loc", "scale"] or module.out_keys != actor._param_keys:
        return None
    if actor._dist_keys["loc"] != module.out_keys[0]:
        return None
    net = module.module
    parts = state_independent_gaussian_net(net)
    if parts is None or parts[1].scale_mapping != "exp":
        return None
    actor_mlp, head = parts
    critic_mlp = _critic_mlp(critic, module.in_keys)
    if critic_mlp is None:
        return None
    if any(has_hooks(m) for m in (actor, module, net, head, actor_mlp)):
        return None  # the modules are not called on this path: a hook must see its call
    return actor_mlp, head, critic_mlp, module.in_keys[0]


class KLPENPPOLoss(PPOLoss):
    """PPO with an adaptive KL penalty ("PPO adaptive").

    ``beta`` is multiplied by ``increment`` when the measured KL exceeds ``1.5 * dtarg`` and
    by ``decrement`` when it is below ``dtarg / 1.5``. The KL(old || new) is estimated from
    the sampled actions with ``(r - 1) - log r`` (unbiased, non-negative). By default, as in
    torchrl, ``beta`` adapts after every call on the minibatch's KL; with
    ``adapt_beta_each_call=False`` the caller adapts it once per policy update, as in
    Schulman et al. (2017): ``loss.adapt_beta(loss.measure_kl(batch))`` after the epochs over
    ``batch`` (what ``PPOTrainer`` does).

    Args:
        actor_network: probabilistic actor.
        critic_network: state-value critic.
        dtarg: target KL.
        beta: initial penalty coefficient.
        increment: factor applied to beta when the KL is too large.
        decrement: factor applied to beta when the KL is too small.
        samples_mc_kl: torchrl's number of samples of a Monte-Carlo KL; here the KL is
            always estimated from the batch's own actions (no extra samples).
        adapt_beta_each_call: adapt ``beta`` after every call (torchrl); else only through
            :meth:`adapt_beta`.
        **kwargs: see :class:`PPOLoss`.
    """

    _objective_keys = ("loss_objective", "kl_approx", "kl", "beta")

    def __init__(
        self,
        actor_network: nn.Module,
        critic_network: nn.Module | None = None,
        *,
        dtarg: float = 0.01,
        beta: float = 1.0,
        increment: float = 2.0,
        decrement: float = 0.5,
        samples_mc_kl: int = 1,
        adapt_beta_each_call: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(actor_network, critic_network, **kwargs)
        self.adapt_beta_each_call = adapt_beta_each_call
        if samples_mc_kl < 1:
            raise ValueError(f"samples_mc_kl must be >= 1, got {samples_mc_kl}")
        self.samples_mc_kl = int(samples_mc_kl)
        if increment < 1 or not 0 < decrement <= 1:
            raise ValueError(
                f"need increment >= 1 and 0 < decrement <= 1, got {increment}, {decrement}"
            )
        self.dtarg = float(dtarg)
        self.increment = float(increment)
        self.decrement = float(decrement)
        self.register_buffer("beta", torch.tensor(float(beta), device=self.entropy_coef.device))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = self._advantage(tensordict)
        out: dict = {}
        ratio, log_weight, dist = self._ratio(tensordict, out)
        kl = ((ratio - 1) - log_weight).mean()
        # the penalty's backward needs this step's beta, not the one adapted below
        beta = self.beta.clone()
        out["loss_objective"] = -(ratio * adv).mean() + beta * kl
        out["kl"] = kl.detach()
        out["beta"] = beta
        if self.adapt_beta_each_call:
            self.adapt_beta(kl)
        self._entropy(dist, out)
        return self._finish(tensordict, out)

    @torch.no_grad()
    def adapt_beta(self, kl: torch.Tensor | float) -> None:
        """Scale ``beta`` by ``increment`` if ``kl > 1.5 dtarg``, by ``decrement`` if
        ``kl < dtarg / 1.5``."""
        if kl > self.dtarg * 1.5:
            self.beta.mul_(self.increment)
        elif kl < self.dtarg / 1.5:
            self.beta.mul_(self.decrement)


class A2CLoss(_ActorCriticLoss):
    """Advantage actor-critic: ``-mean(log_prob * A)`` plus critic and entropy terms.

    Args:
        actor_network: probabilistic actor.
        critic_network: state-value critic.
        **kwargs: see :class:`PPOLoss` (``clip_value``, ``entropy_coef``, ...).
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = self._advantage(tensordict)
        log_prob, dist = self._log_prob_and_dist(tensordict)
        out: dict = {"loss_objective": -(log_prob.unsqueeze(-1) * adv.detach()).mean()}
        self._entropy(dist, out)
        return self._finish(tensordict, out)


class ReinforceLoss(_ActorCriticLoss):
    """REINFORCE with an optional learned baseline: ``loss_actor = -mean(log_prob * A)``.

    Without a critic, give the batch an ``advantage`` (e.g. returns) yourself.

    Args:
        actor_network: probabilistic actor.
        critic_network: optional state-value baseline.
        delay_value: torchrl's target baseline (accepted at False).
        loss_critic_type: critic distance.
        gamma: discount of the default value estimator.
    """

    _objective_keys = ("loss_actor",)

    def __init__(
        self,
        actor_network: nn.Module,
        critic_network: nn.Module | None = None,
        *,
        delay_value: bool = False,
        **kwargs,
    ) -> None:
        if delay_value:
            raise NotImplementedError(
                "ReinforceLoss(delay_value=True): the baseline has no target network here"
            )
        kwargs.setdefault("entropy_bonus", False)
        super().__init__(actor_network, critic_network, **kwargs)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = tensordict.get(self.advantage_key, None)
        if adv is None and self.critic_network is None:
            raise KeyError("ReinforceLoss without a critic needs an 'advantage' entry in the batch")
        adv = self._advantage(tensordict)
        log_prob, dist = self._log_prob_and_dist(tensordict)
        out: dict = {"loss_actor": -(log_prob.unsqueeze(-1) * adv.detach()).mean()}
        self._entropy(dist, out)
        return self._finish(tensordict, out)
