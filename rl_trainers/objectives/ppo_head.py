"""Clipped-PPO loss terms of a categorical policy as one autograd node.

For discrete actions the whole loss after the two networks (log-softmax, the ratio, the
clipped surrogate, the entropy bonus, the critic distance) is a few dozen tiny ops. Run by
autograd that is ~25 backward nodes per minibatch step, and on small networks (PPO on
CartPole: [256, 4] inputs, 64-wide layers) their dispatch costs more than the matmuls.
:class:`ClipPPOCategoricalTerms` computes the same terms and writes their gradients with
respect to the logits and the value in closed form:

* ``ratio = exp(log_softmax(logits)[a] - old_log_prob)``; the objective is
  ``-mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))``. Its derivative with respect
  to ``log pi(a)`` is ``-ratio * A / n`` where the unclipped term is the minimum (ties
  included: there torch's ``minimum`` splits the gradient and ``clamp`` passes its half), 0
  where the clipped one is; and ``d log pi(a) / d logits = onehot(a) - softmax(logits)``.
* entropy ``H = -sum(p * log p)``: ``dH / d logits = -p * (log p + H)``.
* critic distance (``l2``, ``smooth_l1`` with beta 1, ``l1``) of ``value - target``.

:class:`~rl_trainers.objectives.ClipPPOLoss` uses it for (one-hot) categorical policies
without value clipping; results match the op-by-op graph to float rounding (tested).
"""

from __future__ import annotations

import torch

__all__ = ["ClipPPOCategoricalTerms"]


def _critic_distance(diff: torch.Tensor, loss_type: str) -> torch.Tensor:
    if loss_type == "l2":
        return diff.square()
    if loss_type == "l1":
        return diff.abs()
    abs_diff = diff.abs()  # smooth_l1, beta 1
    return torch.where(abs_diff < 1.0, 0.5 * diff.square(), abs_diff - 0.5)


def _critic_distance_grad(diff: torch.Tensor, loss_type: str) -> torch.Tensor:
    if loss_type == "l2":
        return 2.0 * diff
    if loss_type == "l1":
        return diff.sign()
    return diff.clamp(-1.0, 1.0)


class ClipPPOCategoricalTerms(torch.autograd.Function):
    """``apply(logits, value, index, old_log_prob, advantage, target, eps, critic_coef,
    entropy_coef, loss_type)`` -> ``(loss_objective, loss_critic, loss_entropy, entropy,
    log_weight)``.

    Shapes: ``logits [N, K]``, ``index [N]`` (int64), ``old_log_prob [N]``, ``advantage``,
    ``value`` and ``target`` ``[N, 1]``. ``entropy_coef=None`` means no entropy bonus
    (``loss_entropy`` is then a zero without gradient). ``entropy`` (the mean entropy) and
    ``log_weight`` (``[N, 1]`` log-ratios, for diagnostics) carry no gradient. Not twice
    differentiable.
    """

    @staticmethod
    def forward(  # noqa: PLR0913 - the loss's inputs and settings, in one call
        ctx,
        logits: torch.Tensor,
        value: torch.Tensor,
        index: torch.Tensor,
        old_log_prob: torch.Tensor,
        advantage: torch.Tensor,
        target: torch.Tensor,
        eps: float,
        critic_coef: float,
        entropy_coef: float | None,
        loss_type: str,
    ):
        n = logits.shape[0]
        log_p = torch.log_softmax(logits, -1)
        index = index.unsqueeze(-1)
        log_weight = log_p.gather(-1, index) - old_log_prob.unsqueeze(-1)
        ratio = log_weight.exp()
        unclipped = ratio * advantage
        clipped = ratio.clamp(1.0 - eps, 1.0 + eps) * advantage
        take_unclipped = unclipped <= clipped
        loss_objective = -torch.where(take_unclipped, unclipped, clipped).mean()
        diff = value - target
        loss_critic = _critic_distance(diff, loss_type).mean() * critic_coef
        p = log_p.exp()
        entropy = -(p * log_p).sum(-1, keepdim=True)
        mean_entropy = entropy.mean()
        if entropy_coef is None:
            loss_entropy = torch.zeros((), dtype=logits.dtype)
        else:
            loss_entropy = -entropy_coef * mean_entropy
        ctx.save_for_backward(p, log_p, index, ratio, take_unclipped, advantage, diff, entropy)
        ctx.settings = (n, critic_coef, entropy_coef, loss_type)
        ctx.mark_non_differentiable(mean_entropy, log_weight)
        return loss_objective, loss_critic, loss_entropy, mean_entropy, log_weight

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_objective, g_critic, g_entropy, _g_mean_entropy, _g_log_weight):
        p, log_p, index, ratio, take_unclipped, advantage, diff, entropy = ctx.saved_tensors
        n, critic_coef, entropy_coef, loss_type = ctx.settings
        grad_logits = grad_value = None
        if ctx.needs_input_grad[0]:
            # d loss / d log pi(a), per sample: [N, 1]
            d_log_pa = torch.where(take_unclipped, ratio * advantage, 0.0) * (-g_objective / n)
            grad_logits = p * -d_log_pa
            if entropy_coef is not None:
                # loss_entropy = -c * mean(H): d / d logits = (c / n) * p * (log p + H)
                grad_logits += p * (log_p + entropy) * (g_entropy * entropy_coef / n)
            grad_logits.scatter_add_(-1, index, d_log_pa)
        if ctx.needs_input_grad[1]:
            grad_value = _critic_distance_grad(diff, loss_type) * (g_critic * critic_coef / n)
        return grad_logits, grad_value, None, None, None, None, None, None, None, None
