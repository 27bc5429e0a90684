"""SAC's two gradient paths as autograd nodes with closed-form backwards.

Op by op, a SAC loss is ~200 small ops forward and as many backward nodes around its sixteen
matrix products; at SAC's 256-wide networks the products run near the core's peak and the
small ops and their autograd bookkeeping are most of what is left. For the usual networks
(an MLP actor whose output a :class:`~tensordict.nn.NormalParamExtractor` splits into a
TanhNormal's location and scale, plain MLP critics in a
:class:`~rl_trainers.objectives.ensemble.CriticEnsemble`) the two paths that carry
gradients run as one node each:

* :class:`SACActorTerms`: the actor on ``s``, the reparameterised TanhNormal sample ``a~`` and
  its log-density, the critics (parameters detached) on ``(s, a~)``, their minimum and
  ``loss_actor = mean(alpha * log p(a~) - min_i Q_i(s, a~))``. Backward: the minimum routes
  ``-1/N`` to the critic that attained it, the critics' input gradient gives ``d / d a~``,
  then, with ``u = loc + scale * eps`` and ``t = tanh(u)``,
  ``d a~ / d u = half * (1 - t^2)``, ``d log p / d u = 2 t`` (the log-det term),
  ``d log p / d scale = -1 / scale`` (plus ``eps`` through ``u``), and the biased softplus and
  its clamp give the gradient of the actor's raw scale output.
* :class:`SACCriticTerms`: the critics on the replay data and
  ``loss_qvalue = 0.5 * sum_i mean(distance(Q_i(s, a), y))``.

The target ``y`` needs no gradient and runs as plain tensor code (:func:`tanh_normal_sample`
for ``a'``). :class:`~rl_trainers.objectives.SACLoss` takes this path when the networks have
these shapes (:func:`fused_sac_actor`) and falls back to the op-by-op graph otherwise; the
two agree to float rounding, draw the same noise, and leave ``.grad`` as the op-by-op graph
would (tests/objectives/test_sac_terms.py). ``models.FUSE_MLP = False`` turns both off.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from tensordict.nn import NormalParamExtractor, TensorDictModule
from tensordict.nn.utils import biased_softplus
from torch import nn

from rl_trainers.modules.distributions import TanhNormal
from rl_trainers.modules.models import _mlp_forward, has_hooks, mlp_backward
from rl_trainers.objectives.common import distance_loss
from rl_trainers.objectives.ensemble import _ensemble_backward, _ensemble_forward
from rl_trainers.objectives.ppo_head import _critic_distance_grad

__all__ = ["SACActorTerms", "SACCriticTerms", "TanhNormalHead", "fused_sac_actor"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG2 = math.log(2.0)
_SOFTPLUS_THRESHOLD = 20.0  # F.softplus's default


class TanhNormalHead(NamedTuple):
    """How the actor's ``[N, 2d]`` output becomes a TanhNormal: ``loc, raw = chunk(2)``,
    ``scale = max(softplus(raw + shift) + min_val, scale_lb)``, actions
    ``mid + half * tanh(u)``."""

    shift: float
    min_val: float
    scale_lb: float
    mid: torch.Tensor
    half: torch.Tensor


def fused_sac_actor(actor: nn.Module) -> tuple[nn.Sequential, TanhNormalHead] | None:
    """``(mlp, head)`` when ``actor`` is a TanhNormal policy over ``Sequential(mlp,
    NormalParamExtractor(biased softplus))`` on one observation key, as
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
    if type(extractor) is not NormalParamExtractor or type(mapping) is not biased_softplus:
        return None
    if any(has_hooks(m) for m in (actor, module, net, extractor, mapping)):
        return None
    kwargs = actor._dist_kwargs()
    low = torch.as_tensor(kwargs.get("low", -1.0))
    high = torch.as_tensor(kwargs.get("high", 1.0))
    head = TanhNormalHead(
        float(mapping.bias),
        float(mapping.min_val),
        float(extractor.scale_lb),
        (high + low) / 2,
        (high - low) / 2,
    )
    return mlp, head


def tanh_normal_sample(out: torch.Tensor, eps: torch.Tensor, head: TanhNormalHead):
    """``(action, log_prob [N], saved)`` from the actor output ``out [N, 2d]`` and the noise
    ``eps [N, d]``: TanhNormal's ``rsample_and_log_prob`` on NormalParamExtractor's split,
    in the same ops; ``saved`` is what :func:`tanh_normal_backward` needs."""
    d = out.shape[1] // 2
    loc, raw = out[:, :d], out[:, d:]
    shifted = raw + head.shift
    softplus = F.softplus(shifted) + head.min_val
    scale = softplus.clamp_min(head.scale_lb)
    u = loc + scale * eps
    t = torch.tanh(u)
    mid, half = head.mid.to(out), head.half.to(out)
    action = mid + half * t
    log_det = 2.0 * (_LOG2 - u - F.softplus(-2.0 * u)) + half.log()
    log_prob = ((-0.5 * eps.pow(2) - scale.log() - _HALF_LOG_2PI) - log_det).sum(-1)
    return action, log_prob, (eps, t, scale, shifted, softplus, half)


def tanh_normal_backward(g_action, g_log_prob, saved, scale_lb: float) -> torch.Tensor:
    """The gradient of the actor output ``[N, 2d]`` from those of the action ``[N, d]`` and
    of the log-density ``[N, 1]`` (see the module docstring)."""
    eps, t, scale, shifted, softplus, half = saved
    g_u = torch.addcmul(g_action * half * (1.0 - t * t), g_log_prob, 2.0 * t)
    g_scale = g_u * eps - g_log_prob / scale
    g_scale = g_scale * (softplus >= scale_lb)  # clamp_min passes the gradient where kept
    g_raw = torch.ops.aten.softplus_backward(g_scale, shifted, 1.0, _SOFTPLUS_THRESHOLD)
    return torch.cat([g_u, g_raw], dim=1)


def _unpack(saved, sizes):
    """Splits ``saved`` into consecutive groups of the given sizes."""
    groups, start = [], 0
    for size in sizes:
        groups.append(saved[start : start + size])
        start += size
    return groups


class SACActorTerms(torch.autograd.Function):
    """``apply(nets, head, s, eps, alpha, critic_sides, *params)`` ->
    ``(loss_actor, log_prob [N])``.

    ``nets = ((actor_acts, actor_biases, n_actor_params), (critic_acts, critic_biases))``;
    ``params`` are the actor's parameters, then the critics' stacked ones (detached: the
    actor loss gives them no gradient). The critics read ``cat([left, a~, right])`` with
    ``critic_sides = (left, right)`` (either may be None); ``alpha`` is the temperature (no
    gradient). ``log_prob`` carries no gradient (for the temperature loss and diagnostics).
    Not twice differentiable.
    """

    @staticmethod
    def forward(ctx, nets, head, s, eps, alpha, critic_sides, *params):
        (actor_acts, actor_biases, n_actor), (critic_acts, critic_biases) = nets
        actor_params, critic_params = params[:n_actor], params[n_actor:]
        actor_outs: list[torch.Tensor] = []
        out = _mlp_forward(s, actor_acts, actor_biases, actor_params, actor_outs)
        action, log_prob, head_saved = tanh_normal_sample(out, eps, head)
        left, right = critic_sides
        x = torch.cat([p for p in (left, action, right) if p is not None], dim=-1)
        critic_outs: list[torch.Tensor] = []
        q = _ensemble_forward(x, critic_acts, critic_biases, critic_params, critic_outs)
        q_min, index = q.min(0)
        loss = (alpha * log_prob.unsqueeze(-1) - q_min).mean()
        ctx.save_for_backward(s, x, alpha, index, *params, *actor_outs, *critic_outs, *head_saved)
        ctx.layout = (nets, head.scale_lb, len(params), len(actor_outs), len(critic_outs))
        ctx.action_cols = (0 if left is None else left.shape[-1], action.shape[-1])
        ctx.mark_non_differentiable(log_prob)
        return loss, log_prob

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_loss, _g_log_prob):
        nets, scale_lb, n_params, n_actor_outs, n_critic_outs = ctx.layout
        (actor_acts, actor_biases, n_actor), (critic_acts, critic_biases) = nets
        s, x, alpha, index, *rest = ctx.saved_tensors
        params, actor_outs, critic_outs, head_saved = _unpack(
            rest, (n_params, n_actor_outs, n_critic_outs, 6)
        )
        actor_params, critic_params = params[:n_actor], params[n_actor:]
        n = s.shape[0]
        # the minimum over critics: -g/N to the critic that attained it, row by row
        g_q = torch.zeros((len(critic_params[0]), *index.shape), dtype=s.dtype)
        g_q.scatter_(0, index.unsqueeze(0), (-g_loss / n).expand(1, *index.shape))
        g_x, _ = _ensemble_backward(
            g_q,
            x,
            critic_acts,
            critic_biases,
            critic_params,
            critic_outs,
            True,
            (False,) * len(critic_params),
        )
        start, width = ctx.action_cols
        g_log_prob = (g_loss * alpha / n).expand(n, 1)
        g_out = tanh_normal_backward(
            g_x[:, start : start + width], g_log_prob, head_saved, scale_lb
        )
        _, actor_grads = mlp_backward(
            g_out,
            s,
            actor_acts,
            actor_biases,
            actor_params,
            actor_outs,
            False,
            ctx.needs_input_grad[6 : 6 + n_actor],
        )
        return (None,) * 6 + (*actor_grads,) + (None,) * (n_params - n_actor)


class SACCriticTerms(torch.autograd.Function):
    """``apply(nets, loss_function, x, target, *params)`` -> ``(loss_qvalue, q)``.

    The critic ensemble ``nets = (acts, biases)`` with stacked ``params`` on ``x [N, in]``,
    ``q [num, N, 1]`` (no gradient, for diagnostics), and
    ``loss_qvalue = 0.5 * sum_i mean(distance(q_i, target))`` for ``target [N, 1]``. Not
    twice differentiable.
    """

    @staticmethod
    def forward(ctx, nets, loss_function, x, target, *params):
        acts, biases = nets
        outs: list[torch.Tensor] = []
        q = _ensemble_forward(x, acts, biases, params, outs)
        distance = distance_loss(q, target, loss_function)
        loss = 0.5 * distance.reshape(q.shape[0], -1).mean(1).sum()
        ctx.save_for_backward(x, q - target, *params, *outs)
        ctx.layout = (nets, loss_function, len(params))
        ctx.mark_non_differentiable(q)
        return loss, q

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_loss, _g_q):
        (acts, biases), loss_function, n_params = ctx.layout
        x, diff, *rest = ctx.saved_tensors
        params, outs = rest[:n_params], rest[n_params:]
        g_q = _critic_distance_grad(diff, loss_function) * (0.5 * g_loss / diff[0].numel())
        _, grads = _ensemble_backward(
            g_q, x, acts, biases, params, outs, False, ctx.needs_input_grad[4:]
        )
        return (None,) * 4 + tuple(grads)
