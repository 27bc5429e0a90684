"""Clipped-PPO loss terms as one autograd node: categorical policies, and SB3's Gaussian.

Replaces ``ClipPPOLoss``'s op-by-op terms under the switch ``FUSE_MLP`` (with the fused MLP,
:mod:`rl_trainers.fast.mlp`), without value clipping; ``ClipPPOLoss`` decides where it
applies and calls :class:`ActorCriticClipPPOTerms` (a categorical actor's and the critic's
MLPs and the terms), :class:`ClipPPOCategoricalTerms` (the terms after the networks),
:func:`actor_critic_grads` (the gradients without autograd) or
:class:`GaussianActorCriticClipPPOTerms` (SB3's Gaussian actor: an MLP's mean and a
state-independent ``exp`` scale, with the critic's MLP and the terms).

After the networks the loss (the log-probability, the ratio, the clipped surrogate, the
entropy bonus, the critic distance) is a few dozen tiny ops. Run by autograd that is ~25
backward nodes per minibatch step, and on small networks (PPO on CartPole: [256, 4] inputs,
64-wide layers; on MuJoCo: [64, 17]) their dispatch costs more than the matmuls. These
nodes compute the same terms and write their gradients in closed form:

* ``ratio = exp(log pi(a) - old_log_prob)``; the objective is
  ``-mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))``. Its derivative with respect
  to ``log pi(a)`` is ``-ratio * A / n`` where the unclipped term is the minimum (ties
  included: there torch's ``minimum`` splits the gradient and ``clamp`` passes its half), 0
  where the clipped one is.
* categorical: ``log pi(a) = log_softmax(logits)[a]``, ``d log pi(a) / d logits = onehot(a)
  - softmax(logits)``; entropy ``H = -sum(p * log p)``, ``dH / d logits = -p * (log p + H)``.
* Gaussian: see :func:`_gaussian_terms_backward`.
* critic distance (``l2``, ``smooth_l1`` with beta 1, ``l1``) of ``value - target``.

Results match the op-by-op graph to float rounding (tests/objectives/test_ppo.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from rl_trainers.fast.mlp import mlp_backward, mlp_forward

__all__ = [
    "ActorCriticClipPPOTerms",
    "GaussianActorCriticClipPPOTerms",
    "gaussian_actor_critic_grads",
    "ClipPPOCategoricalTerms",
    "ClipPPOSettings",
    "actor_critic_grads",
    "distance_grad",
]


def distance_grad(diff: torch.Tensor, loss_type: str) -> torch.Tensor:
    """Derivative of :func:`~rl_trainers.objectives.distance_loss` (``l2``, ``l1``,
    ``smooth_l1`` with beta 1) in ``diff = prediction - target``."""
    if loss_type == "l2":
        return 2.0 * diff
    if loss_type == "l1":
        return diff.sign()
    return diff.clamp(-1.0, 1.0)


class ClipPPOSettings(NamedTuple):
    """The loss's coefficients, as the one-node functions take them, and its critic
    distance: ``distance_loss(value, target, loss_type)``, elementwise
    (:func:`rl_trainers.objectives.distance_loss`)."""

    eps: float
    critic_coef: float
    entropy_coef: float | None  # None: no entropy bonus
    loss_type: str
    distance_loss: Callable[[torch.Tensor, torch.Tensor, str], torch.Tensor]


def _surrogate(log_pa, old_log_prob, advantage, eps: float):
    """The clipped objective from the actions' new log-probabilities ``log_pa`` ``[N, 1]``:
    ``(loss_objective, log_weight, ratio, take_unclipped)``."""
    log_weight = log_pa - old_log_prob.unsqueeze(-1)
    ratio = log_weight.exp()
    unclipped = ratio * advantage
    clipped = ratio.clamp(1.0 - eps, 1.0 + eps) * advantage
    take_unclipped = unclipped <= clipped
    loss_objective = -torch.where(take_unclipped, unclipped, clipped).mean()
    return loss_objective, log_weight, ratio, take_unclipped


def _surrogate_grad(ratio, take_unclipped, advantage, g_objective):
    """``d loss / d log pi(a)`` per sample ``[N, 1]`` (see the module docstring)."""
    n = ratio.shape[0]
    return torch.where(take_unclipped, ratio * advantage, 0.0) * (-g_objective / n)


def _entropy_term(mean_entropy, settings: ClipPPOSettings):
    """``loss_entropy``: ``-entropy_coef * mean_entropy``, a zero without the bonus."""
    if settings.entropy_coef is None:
        return torch.zeros((), dtype=mean_entropy.dtype)
    return -settings.entropy_coef * mean_entropy


def _critic_terms(value, target, settings: ClipPPOSettings):
    """``(value - target, loss_critic)``."""
    distance = settings.distance_loss(value, target, settings.loss_type)
    return value - target, distance.mean() * settings.critic_coef


def _critic_grad(diff, settings: ClipPPOSettings, g_critic):
    """The value's gradient ``[N, 1]``."""
    grad_value = distance_grad(diff, settings.loss_type)
    grad_value *= g_critic * settings.critic_coef / diff.shape[0]
    return grad_value


def _terms_forward(
    logits, value, index, old_log_prob, advantage, target, settings: ClipPPOSettings
):
    """The loss terms, and what :func:`_terms_backward` needs."""
    log_p = torch.log_softmax(logits, -1)
    index = index.unsqueeze(-1)
    loss_objective, log_weight, ratio, take_unclipped = _surrogate(
        log_p.gather(-1, index), old_log_prob, advantage, settings.eps
    )
    diff, loss_critic = _critic_terms(value, target, settings)
    p = log_p.exp()
    entropy = -(p * log_p).sum(-1, keepdim=True)
    mean_entropy = entropy.mean()
    loss_entropy = _entropy_term(mean_entropy, settings)
    outputs = (loss_objective, loss_critic, loss_entropy, mean_entropy, log_weight)
    saved = (p, log_p, index, ratio, take_unclipped, advantage, diff, entropy)
    return outputs, saved


def _terms_backward(saved, settings: ClipPPOSettings, g_objective, g_critic, g_entropy):
    """Gradients of the logits and the value (see the module docstring)."""
    p, log_p, index, ratio, take_unclipped, advantage, diff, entropy = saved
    n = p.shape[0]
    d_log_pa = _surrogate_grad(ratio, take_unclipped, advantage, g_objective)
    grad_logits = p * -d_log_pa
    if settings.entropy_coef is not None:
        # loss_entropy = -c * mean(H): d / d logits = (c / n) * p * (log p + H)
        grad_logits += p * (log_p + entropy) * (g_entropy * settings.entropy_coef / n)
    grad_logits.scatter_add_(-1, index, d_log_pa)
    return grad_logits, _critic_grad(diff, settings, g_critic)


class ClipPPOCategoricalTerms(torch.autograd.Function):
    """``apply(logits, value, index, old_log_prob, advantage, target, settings)`` ->
    ``(loss_objective, loss_critic, loss_entropy, entropy, log_weight)``.

    Shapes: ``logits [N, K]``, ``index [N]`` (int64), ``old_log_prob [N]``, ``advantage``,
    ``value`` and ``target`` ``[N, 1]``; ``settings`` a :class:`ClipPPOSettings`
    (``entropy_coef=None``: no entropy bonus, ``loss_entropy`` is then a zero without
    gradient). ``entropy`` (the mean entropy) and ``log_weight`` (``[N, 1]`` log-ratios, for
    diagnostics) carry no gradient. Not twice differentiable.
    """

    @staticmethod
    def forward(ctx, logits, value, index, old_log_prob, advantage, target, settings):
        outputs, saved = _terms_forward(
            logits, value, index, old_log_prob, advantage, target, settings
        )
        ctx.save_for_backward(*saved)
        ctx.settings = settings
        ctx.mark_non_differentiable(outputs[3], outputs[4])
        return outputs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_objective, g_critic, g_entropy, _g_mean_entropy, _g_log_weight):
        grad_logits, grad_value = _terms_backward(
            ctx.saved_tensors, ctx.settings, g_objective, g_critic, g_entropy
        )
        return grad_logits, grad_value, None, None, None, None, None


def _mlps_forward(nets, x, params):
    """The actor's and the critic's MLPs on ``x`` (``params``: the actor's, then the
    critic's): ``(actor output, value, saved)``."""
    (actor_acts, actor_biases, n_actor), (critic_acts, critic_biases) = nets
    actor_outs: list[torch.Tensor] = []
    critic_outs: list[torch.Tensor] = []
    head = mlp_forward(x, actor_acts, actor_biases, params[:n_actor], actor_outs)
    value = mlp_forward(x, critic_acts, critic_biases, params[n_actor:], critic_outs)
    return head, value, (actor_outs, critic_outs)


def _mlps_backward(nets, x, params, saved, grad_head, grad_value, needs, out=None) -> list:
    """Both MLPs' parameter gradients from their outputs' (None where ``needs`` is False),
    written into ``out`` (one tensor per parameter) when given."""
    (actor_acts, actor_biases, n_actor), (critic_acts, critic_biases) = nets
    actor_outs, critic_outs = saved
    actor_out = critic_out = None
    if out is not None:
        actor_out, critic_out = out[:n_actor], out[n_actor:]
    _, actor_grads = mlp_backward(
        grad_head, x, actor_acts, actor_biases, params[:n_actor], actor_outs, False,
        needs[:n_actor], actor_out,
    )  # fmt: skip
    _, critic_grads = mlp_backward(
        grad_value, x, critic_acts, critic_biases, params[n_actor:], critic_outs, False,
        needs[n_actor:], critic_out,
    )  # fmt: skip
    return [*actor_grads, *critic_grads]


def _actor_critic_forward(nets, settings, x, index, old_log_prob, advantage, target, params):
    """Both MLPs and the loss terms: ``(outputs, saved)`` with the outputs of
    :class:`ActorCriticClipPPOTerms` and what :func:`_actor_critic_backward` needs."""
    logits, value, mlps = _mlps_forward(nets, x, params)
    outputs, head = _terms_forward(logits, value, index, old_log_prob, advantage, target, settings)
    return (*outputs, value), (mlps, head)


def _actor_critic_backward(
    args, params, saved, g_objective, g_critic, g_entropy, needs, out=None
) -> list:
    """The parameters' gradients (None where ``needs`` is False); written into ``out``
    (one tensor per parameter) when given. ``args``: the node's arguments before the
    parameters."""
    nets, settings, x = args[:3]
    mlps, head = saved
    grad_logits, grad_value = _terms_backward(head, settings, g_objective, g_critic, g_entropy)
    return _mlps_backward(nets, x, params, mlps, grad_logits, grad_value, needs, out)


def _actor_critic_node(name: str, forward_fn, backward_fn, n_args: int, doc: str) -> type:
    """An autograd Function running both MLPs and the loss terms as one node:
    ``apply(*args, *params)``, the ``n_args`` arguments ``args`` (``nets``, ``settings``...)
    before the parameters; ``forward_fn(*args, params)`` gives ``(outputs, saved)``,
    ``backward_fn(args, params, saved, g_objective, g_critic, g_entropy, needs)`` the
    parameters' gradients. Outputs 3 and on carry no gradient. Not twice differentiable."""

    def forward(ctx, *inputs):
        args, params = inputs[:n_args], inputs[n_args:]
        outputs, saved = forward_fn(*args, params)
        # attributes rather than save_for_backward (the inputs, leaf parameters and
        # intermediates: no reference cycle), so that a backward pass on some of the terms
        # does not free them: torchrl lets each term have its own optimizer (one
        # OptimizerHook per loss component), each running its own pass on the same output
        ctx.saved = (args, params, saved)
        ctx.mark_non_differentiable(*outputs[3:])
        return outputs

    @torch.autograd.function.once_differentiable
    def backward(ctx, g_objective, g_critic, g_entropy, *_no_gradient):
        args, params, saved = ctx.saved
        grads = backward_fn(
            args, params, saved, g_objective, g_critic, g_entropy, ctx.needs_input_grad[n_args:]
        )
        return (None,) * n_args + tuple(grads)

    body = {"forward": staticmethod(forward), "backward": staticmethod(backward), "__doc__": doc}
    return type(name, (torch.autograd.Function,), body)


def _grads_without_autograd(forward_fn, backward_fn, args, params, scales, out) -> tuple:
    """A node's outputs and its backward pass in one call, without autograd: the gradient of
    ``scales[0] * loss_objective + scales[1] * loss_critic + scales[2] * loss_entropy``
    (``scales``: 0-d tensors) in each parameter is written into ``out[i]`` (skipped where
    ``out[i]`` is None). The values are bitwise those that ``backward()`` through the node
    gives."""
    with torch.no_grad():
        outputs, saved = forward_fn(*args, params)
        needs = [o is not None for o in out]
        backward_fn(args, params, saved, *scales, needs, out)
    return outputs


ActorCriticClipPPOTerms = _actor_critic_node(
    "ActorCriticClipPPOTerms",
    _actor_critic_forward,
    _actor_critic_backward,
    7,
    """The actor and critic MLPs on a shared input and the categorical terms, as one node.

    ``apply(nets, settings, x, index, old_log_prob, advantage, target, *params)`` with
    ``nets = ((actor_acts, actor_biases, n_actor_params), (critic_acts, critic_biases))`` as
    :func:`~rl_trainers.fast.mlp.fused_mlp_parts` gives them and ``params`` the
    actor's parameters then the critic's. Same outputs as :class:`ClipPPOCategoricalTerms`
    plus the value ``[N, 1]`` (no gradient; for diagnostics). :func:`actor_critic_grads`
    computes the same outputs and gradients without autograd.
    """,
)


def actor_critic_grads(
    nets, settings, x, index, old_log_prob, advantage, target, params, scales, out
) -> tuple:
    """:class:`ActorCriticClipPPOTerms` without autograd (:func:`_grads_without_autograd`)."""
    args = (nets, settings, x, index, old_log_prob, advantage, target)
    return _grads_without_autograd(
        _actor_critic_forward, _actor_critic_backward, args, params, scales, out
    )


# ------------------------------------------------------------------ Gaussian policies
#: ``log(sqrt(2 pi))``, the constant of the Gaussian log-density (the library's own).
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _gaussian_terms_forward(
    loc, log_scale, scale_lb, action, value, old_log_prob, advantage, target, settings
):
    """The loss terms of a diagonal Gaussian over ``loc`` ``[N, d]`` with the
    state-independent scale ``max(exp(log_scale), scale_lb)`` ``[d]``, and what
    :func:`_gaussian_terms_backward` needs.

    ``log pi(a) = sum_j(-z_j^2 / 2 - log scale_j - log sqrt(2 pi))`` with
    ``z = (a - loc) / scale``; the entropy ``sum_j(1/2 + log sqrt(2 pi) + log scale_j)`` is
    the same for every sample."""
    unclamped = log_scale.exp()
    scale = unclamped.clamp_min(scale_lb)
    log_scale_c = scale.log()
    z = (action - loc) / scale
    z_sq = z.pow(2)
    log_pa = (-0.5 * z_sq - log_scale_c - HALF_LOG_2PI).sum(-1, keepdim=True)
    loss_objective, log_weight, ratio, take_unclipped = _surrogate(
        log_pa, old_log_prob, advantage, settings.eps
    )
    diff, loss_critic = _critic_terms(value, target, settings)
    mean_entropy = (0.5 + HALF_LOG_2PI + log_scale_c).sum()
    loss_entropy = _entropy_term(mean_entropy, settings)
    outputs = (loss_objective, loss_critic, loss_entropy, mean_entropy, log_weight)
    saved = (z, z_sq, scale, unclamped, scale_lb, ratio, take_unclipped, advantage, diff)
    return outputs, saved


def _gaussian_terms_backward(saved, settings, g_objective, g_critic, g_entropy):
    """Gradients of ``loc``, ``log_scale`` and the value:

    ``d log pi(a) / d loc = z / scale``; ``d log pi(a) / d scale = (z^2 - 1) / scale``,
    summed over the samples; the entropy bonus adds ``-c / scale`` (its mean over samples
    of ``1 / scale``); through the clamp where ``exp(log_scale) >= scale_lb`` (as
    ``clamp_min`` passes it) and ``d exp(u) / du = exp(u)``."""
    z, z_sq, scale, unclamped, scale_lb, ratio, take_unclipped, advantage, diff = saved
    d_log_pa = _surrogate_grad(ratio, take_unclipped, advantage, g_objective)
    grad_loc = d_log_pa * z / scale
    grad_scale = (d_log_pa * (z_sq - 1.0)).sum(0) / scale
    if settings.entropy_coef is not None:
        grad_scale = grad_scale - g_entropy * settings.entropy_coef / scale
    grad_log_scale = torch.where(unclamped >= scale_lb, grad_scale * unclamped, 0.0)
    return grad_loc, grad_log_scale, _critic_grad(diff, settings, g_critic)


def _gaussian_actor_critic_forward(
    nets, settings, scale_lb, x, action, old_log_prob, advantage, target, params
):
    """Both MLPs and the Gaussian terms: ``(outputs, saved)`` with the outputs of
    :class:`GaussianActorCriticClipPPOTerms`; ``params`` is ``(log_scale, *actor's,
    *critic's)``."""
    loc, value, mlps = _mlps_forward(nets, x, params[1:])
    outputs, head = _gaussian_terms_forward(
        loc, params[0], scale_lb, action, value, old_log_prob, advantage, target, settings
    )
    return (*outputs, value), (mlps, head)


def _gaussian_actor_critic_backward(
    args, params, saved, g_objective, g_critic, g_entropy, needs, out=None
) -> list:
    """The gradients of ``params`` (None where ``needs`` is False); written into ``out``
    (one tensor per parameter) when given. ``args``: the node's arguments before the
    parameters."""
    nets, settings, _scale_lb, x = args[:4]
    mlps, head = saved
    grad_loc, grad_log_scale, grad_value = _gaussian_terms_backward(
        head, settings, g_objective, g_critic, g_entropy
    )
    if not needs[0]:
        grad_log_scale = None
    elif out is not None:
        grad_log_scale = out[0].copy_(grad_log_scale)
    nets_out = None if out is None else out[1:]
    grads = _mlps_backward(nets, x, params[1:], mlps, grad_loc, grad_value, needs[1:], nets_out)
    return [grad_log_scale, *grads]


GaussianActorCriticClipPPOTerms = _actor_critic_node(
    "GaussianActorCriticClipPPOTerms",
    _gaussian_actor_critic_forward,
    _gaussian_actor_critic_backward,
    8,
    """SB3's Gaussian actor (an MLP's ``loc``, a state-independent ``exp`` scale), a critic
    MLP on the same input and the clipped-PPO terms, as one node.

    ``apply(nets, settings, scale_lb, x, action, old_log_prob, advantage, target, log_scale,
    *params)`` with ``nets`` and ``params`` as for :class:`ActorCriticClipPPOTerms`,
    ``action`` ``[N, d]`` and ``log_scale`` ``[d]`` the scale's parameter. Same outputs as
    :class:`ActorCriticClipPPOTerms`. :func:`gaussian_actor_critic_grads` computes the same
    outputs and gradients without autograd.
    """,
)


def gaussian_actor_critic_grads(
    nets, settings, scale_lb, x, action, old_log_prob, advantage, target, params, scales, out
) -> tuple:
    """:class:`GaussianActorCriticClipPPOTerms` without autograd
    (:func:`_grads_without_autograd`)."""
    args = (nets, settings, scale_lb, x, action, old_log_prob, advantage, target)
    return _grads_without_autograd(
        _gaussian_actor_critic_forward, _gaussian_actor_critic_backward, args, params, scales, out
    )
