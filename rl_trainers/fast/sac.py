"""SAC's two gradient paths as autograd nodes with closed-form backwards.

Replaces ``SACLoss``'s op-by-op actor and critic losses under the switch ``SAC_ONE_NODE``
(and ``FUSE_MLP``, which the networks' fused maths need). ``SACLoss`` decides where it
applies (its ``_one_node_actor`` and ``_one_node_terms``), extracts the networks' parameters
and layouts, and calls :func:`sac_forward`, :class:`SACCriticTerms` and
:class:`SACActorTerms`; the TanhNormal distribution and the critic distance come in as
arguments (:class:`TanhNormalHead`, :class:`SACNets`), so this module needs no library type.

Op by op, a SAC loss is ~200 small ops forward and as many backward nodes around its sixteen
256-wide matrix products; the products run near the core's peak, and the small ops and their
autograd bookkeeping are most of what is left. For the usual networks
(an MLP actor whose output a :class:`~tensordict.nn.NormalParamExtractor` or a
:class:`~rl_trainers.modules.ClampedLogStdExtractor` splits into a TanhNormal's location
and scale, plain MLP critics in a
:class:`~rl_trainers.objectives.CriticEnsemble`), :func:`sac_forward` computes the
whole forward without autograd, in fewer and larger products (the actor once on ``[s; s']``,
the critics once on ``[(s, a); (s, a~)]``, the target critics on ``(s', a')``), and the two
losses that carry gradients become one autograd node each:

* :class:`SACActorTerms`, ``loss_actor = mean(alpha * log p(a~) - min_i Q_i(s, a~))``, the
  critics' parameters detached. Backward: the minimum routes ``-1/N`` to the critic that
  attained it, the critics' input gradient gives ``d / d a~``, then, with
  ``u = loc + scale * eps`` and ``t = tanh(u)``, ``d a~ / d u = half * (1 - t^2)``,
  ``d log p / d u = 2 t`` (the log-det term), ``d log p / d scale = -1 / scale`` (plus ``eps``
  through ``u``), and the scale's map (a biased softplus and its clamp, or SB3's clamped
  exp) gives the gradient of the actor's raw scale output; then the actor MLP's
  hand-written backward.
* :class:`SACCriticTerms`, ``loss_qvalue = 0.5 * sum_i mean(distance(Q_i(s, a), y))``: the
  critics' backward on the replay rows.

Two nodes rather than one keep the op-by-op graph's behaviour: ``loss_actor.backward()`` and
``loss_qvalue.backward()`` may be called one after the other, a backward of one loss leaves
the other's parameters' ``.grad`` at None, and changing a parameter in place between the
forward and the backward raises. :class:`~rl_trainers.objectives.SACLoss` takes this path
when the networks have these shapes and falls back to the op-by-op graph otherwise; the two
agree to float rounding and draw the same noise (tests/fast/test_sac_terms.py).
``rl_trainers.fast.SAC_ONE_NODE = False`` (or ``FUSE_MLP = False``, which also runs the
networks layer by layer) turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F

from rl_trainers.fast.ensemble import ensemble_backward, ensemble_forward
from rl_trainers.fast.mlp import mlp_backward, mlp_forward
from rl_trainers.fast.ppo import distance_grad

__all__ = [
    "SACActorTerms",
    "SACCriticTerms",
    "SACForward",
    "SACNets",
    "TanhNormalHead",
    "sac_forward",
]

_SOFTPLUS_THRESHOLD = 20.0  # F.softplus's default


class TanhNormalHead(NamedTuple):
    """How the actor's ``[N, 2d]`` output becomes a TanhNormal: ``loc, raw = chunk(2)``,
    ``scale = max(softplus(raw + shift) + min_val, scale_lb)`` (tensordict's
    NormalParamExtractor with a biased softplus) or, with ``log_std_bounds = (lo, hi)``,
    ``scale = exp(clamp(raw, lo, hi))`` (SB3's SAC actor; ``shift``, ``min_val`` and
    ``scale_lb`` unused); actions in ``[low, high]``; ``distribution`` is the TanhNormal class
    (:class:`rl_trainers.modules.distributions.TanhNormal`), whose ``from_noise`` samples."""

    shift: float
    min_val: float
    scale_lb: float
    low: torch.Tensor | float
    high: torch.Tensor | float
    distribution: type
    log_std_bounds: tuple[float, float] | None = None


def _scale(raw: torch.Tensor, head: TanhNormalHead):
    """``(scale, kept, pre)``: the scale from the raw output, where its clamp passes the
    gradient, and what :func:`tanh_normal_backward` maps the gradient back through (the
    softplus's input; None for the clamped exp, whose gradient is the scale itself)."""
    if head.log_std_bounds is not None:
        lo, hi = head.log_std_bounds
        return raw.clamp(lo, hi).exp(), (raw >= lo) & (raw <= hi), None
    shifted = raw + head.shift
    softplus = F.softplus(shifted) + head.min_val
    return softplus.clamp_min(head.scale_lb), softplus >= head.scale_lb, shifted


def tanh_normal_sample(out: torch.Tensor, eps: torch.Tensor, head: TanhNormalHead):
    """``(action, log_prob [N], saved)`` from the actor output ``out [N, 2d]`` and the noise
    ``eps [N, d]``: the split and scale (:class:`TanhNormalHead`), then TanhNormal's sample
    and log-density (:meth:`~rl_trainers.modules.distributions.TanhNormal.from_noise`);
    ``saved`` is what :func:`tanh_normal_backward` needs."""
    d = out.shape[1] // 2
    loc, raw = out[:, :d], out[:, d:]
    scale, kept, pre = _scale(raw, head)
    dist = head.distribution(loc, scale, low=head.low, high=head.high)
    squashed, action, log_prob = dist.from_noise(eps)
    # the bounds' half range is 0-dim (scalar low/high, TanhNormal's default) or [d]: a view
    # expanded to [N, d] lets the callers cut rows out of every saved tensor alike
    half = dist._half.expand_as(loc)
    saved = (eps, squashed, scale, kept, half)
    return action, log_prob, saved if pre is None else (*saved, pre)


def tanh_normal_backward(g_action, g_log_prob, saved) -> torch.Tensor:
    """The gradient of the actor output ``[N, 2d]`` from those of the action ``[N, d]`` and
    of the log-density ``[N, 1]`` (see the module docstring)."""
    eps, t, scale, kept, half, *pre = saved
    g_u = torch.addcmul(g_action * half * (1.0 - t * t), g_log_prob, 2.0 * t)
    g_scale = (g_u * eps - g_log_prob / scale) * kept  # a clamp passes the gradient where kept
    if pre:  # the biased softplus, at its input
        g_raw = torch.ops.aten.softplus_backward(g_scale, pre[0], 1.0, _SOFTPLUS_THRESHOLD)
    else:  # d exp(x) / dx = exp(x), the scale
        g_raw = g_scale * scale
    return torch.cat([g_u, g_raw], dim=1)


def _unpack(saved, sizes):
    """Splits ``saved`` into consecutive groups of the given sizes."""
    groups, start = [], 0
    for size in sizes:
        groups.append(saved[start : start + size])
        start += size
    return groups


class SACNets(NamedTuple):
    """The networks' fused-maths layouts: ``(acts, biases)`` of the actor MLP and of the
    critics, how the actor's output becomes a TanhNormal, and the critic distance: its
    name and ``distance_loss(prediction, target, loss_function)``, elementwise
    (:func:`rl_trainers.objectives.distance_loss`)."""

    actor: tuple
    critic: tuple
    head: TanhNormalHead
    loss_function: str
    distance_loss: Callable[[torch.Tensor, torch.Tensor, str], torch.Tensor]


class SACForward(NamedTuple):
    """The losses of one batch and what the two backward nodes read. Rows ``[:n]`` of the
    actor's inputs and activations are ``s``, rows ``[n:]`` ``s'``; rows ``[:n]`` of the
    critics' are the replay data ``(s, a)``, rows ``[n:]`` the policy's ``(s, a~)``."""

    loss_actor: torch.Tensor
    loss_qvalue: torch.Tensor
    log_prob: torch.Tensor  # log p(a~ | s), [n]
    q_data: torch.Tensor  # [num, n, 1]
    target: torch.Tensor  # [n, 1]
    actor_x: torch.Tensor
    actor_outs: list
    head_saved: tuple
    critic_x: torch.Tensor
    critic_outs: list
    critic_params: tuple  # detached
    diff: torch.Tensor  # q_data - target
    index: torch.Tensor  # which critic attained the minimum on (s, a~), [n, 1]
    alpha: torch.Tensor
    action_cols: tuple  # (first column, width) of the action in the critics' input


def _with_action(sides: tuple, action: torch.Tensor) -> torch.Tensor:
    left, right = sides
    return torch.cat([p for p in (left, action, right) if p is not None], dim=-1)


@torch.no_grad()
def sac_forward(
    nets: SACNets,
    s: torch.Tensor,
    s_next: torch.Tensor,
    noise: tuple,
    x_data: torch.Tensor,
    sides: tuple,
    next_sides: tuple,
    alpha: torch.Tensor,
    target_value,
    params: tuple,
) -> SACForward:
    """Both losses' forward, without autograd.

    ``noise = (eps, eps_next)`` for the samples on ``s`` and ``s'``; ``x_data`` the critics'
    input on the replay data; ``sides``/``next_sides`` the critic inputs left and right of
    the action (either may be None) on ``s`` and ``s'``; ``target_value(q_next, log_prob_next)``
    the TD target; ``params = (actor, critics, target critics)`` parameter lists. The actor
    runs once on ``[s; s']`` and the critics once on ``[(s, a); (s, a~)]``.
    """
    actor_params, critic_params, target_params = params
    n = s.shape[0]
    actor_x = torch.cat([s, s_next])
    actor_outs: list[torch.Tensor] = []
    out = mlp_forward(actor_x, *nets.actor, actor_params, actor_outs)
    action, log_prob, head_saved = tanh_normal_sample(out, torch.cat(noise), nets.head)
    x_next = _with_action(next_sides, action[n:])
    q_next = ensemble_forward(x_next, *nets.critic, target_params, None).min(0).values
    target = target_value(q_next, log_prob[n:]).reshape(n, 1)
    critic_x = torch.cat([x_data, _with_action(sides, action[:n])])
    critic_params = tuple(p.detach() for p in critic_params)
    critic_outs: list[torch.Tensor] = []
    q = ensemble_forward(critic_x, *nets.critic, critic_params, critic_outs)
    q_data = q[:, :n]
    q_min, index = q[:, n:].min(0)
    log_prob = log_prob[:n]
    loss_actor = (alpha * log_prob.unsqueeze(-1) - q_min).mean()
    distance = nets.distance_loss(q_data, target, nets.loss_function)
    loss_qvalue = 0.5 * distance.reshape(q.shape[0], -1).mean(1).sum()
    left = sides[0]
    return SACForward(
        loss_actor, loss_qvalue, log_prob, q_data, target, actor_x, actor_outs, head_saved,
        critic_x, critic_outs, critic_params, q_data - target, index, alpha,
        (0 if left is None else left.shape[-1], action.shape[-1]),
    )  # fmt: skip


def _rows(tensors, rows: slice) -> list[torch.Tensor]:
    return [t[rows] for t in tensors]


class SACActorTerms(torch.autograd.Function):
    """``apply(nets, fwd, *actor_params)`` -> ``(loss_actor, log_prob [n])`` of a
    :func:`sac_forward` result ``fwd``; the backward gives the actor's parameters their
    gradients (the critics' stay untouched). ``log_prob`` carries no gradient (for the
    temperature loss and diagnostics). Not twice differentiable.
    """

    @staticmethod
    def forward(ctx, nets: SACNets, fwd: SACForward, *actor_params):
        n = fwd.log_prob.shape[0]
        first, rest = slice(None, n), slice(n, None)
        ctx.save_for_backward(
            fwd.alpha,
            fwd.index,
            fwd.actor_x[first],
            fwd.critic_x[rest],
            *actor_params,
            *fwd.critic_params,
            *_rows(fwd.actor_outs, first),
            *_rows(fwd.head_saved, first),
            *_rows(fwd.critic_outs, rest),
        )
        ctx.layout = (
            nets,
            len(actor_params),
            len(fwd.critic_params),
            len(fwd.actor_outs),
            len(fwd.head_saved),
        )
        ctx.action_cols = fwd.action_cols
        ctx.mark_non_differentiable(fwd.log_prob)
        return fwd.loss_actor, fwd.log_prob

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_loss, _g_log_prob):
        nets, n_actor, n_critic, n_actor_outs, n_head = ctx.layout
        alpha, index, s, x, *rest = ctx.saved_tensors
        actor_params, critic_params, actor_outs, head_saved, critic_outs = _unpack(
            rest, (n_actor, n_critic, n_actor_outs, n_head, len(rest))
        )
        n = s.shape[0]
        # the minimum over critics: -g/n to the critic that attained it, row by row
        g_q = torch.zeros((len(critic_params[0]), *index.shape), dtype=s.dtype)
        g_q.scatter_(0, index.unsqueeze(0), (-g_loss / n).expand(1, *index.shape))
        # only the action's columns of the critics' input gradient: the first layer's
        # weights sliced to them
        start, width = ctx.action_cols
        action_weights = critic_params[0][:, :, start : start + width]
        g_action, _ = ensemble_backward(
            g_q,
            x,
            *nets.critic,
            (action_weights, *critic_params[1:]),
            critic_outs,
            True,
            (False,) * n_critic,
        )
        g_log_prob = (g_loss * alpha / n).expand(n, 1)
        g_out = tanh_normal_backward(g_action, g_log_prob, head_saved)
        _, grads = mlp_backward(
            g_out, s, *nets.actor, actor_params, actor_outs, False, ctx.needs_input_grad[2:]
        )
        return (None, None, *grads)


class SACCriticTerms(torch.autograd.Function):
    """``apply(nets, fwd, *critic_params)`` -> ``loss_qvalue`` of a :func:`sac_forward`
    result ``fwd``; the backward gives the critics' stacked parameters their gradients. Not
    twice differentiable.
    """

    @staticmethod
    def forward(ctx, nets: SACNets, fwd: SACForward, *critic_params):
        data = slice(None, fwd.diff.shape[1])
        ctx.save_for_backward(
            fwd.critic_x[data], fwd.diff, *critic_params, *_rows(fwd.critic_outs, data)
        )
        ctx.layout = (nets, len(critic_params))
        return fwd.loss_qvalue

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_loss):
        nets, n_params = ctx.layout
        x, diff, *rest = ctx.saved_tensors
        params, outs = rest[:n_params], rest[n_params:]
        g_q = distance_grad(diff, nets.loss_function) * (0.5 * g_loss / diff[0].numel())
        _, grads = ensemble_backward(
            g_q, x, *nets.critic, params, outs, False, ctx.needs_input_grad[2:]
        )
        return (None, None, *grads)
