"""Discounted cumulative sums along time: the returns and advantages of a trajectory batch.

Pure tensor maths shared by the library's layers: :mod:`rl_trainers.objectives.value`
(GAE, TD(lambda), V-trace, :func:`reward2go`, re-exported there at torchrl's path) and the
env transform :class:`~rl_trainers.envs.transforms.Reward2GoTransform`, which must not import
the losses.
"""

from __future__ import annotations

import torch

__all__ = ["reward2go"]

#: up to this many steps the sum is one product with a [T, T] weight matrix, else a loop
_MATRIX_MAX_T = 1024


def _discounted_cumsum(
    delta: torch.Tensor, decay: torch.Tensor | float, done: torch.Tensor
) -> torch.Tensor:
    """``out[t] = delta[t] + decay * (1 - done[t]) * out[t + 1]`` along dim -2 of ``[*B, T, 1]``."""
    T = delta.shape[-2]
    not_done = (~done).to(delta.dtype)
    decay_t = torch.as_tensor(decay, dtype=delta.dtype, device=delta.device)
    if decay_t.dim() == 0 and T <= _MATRIX_MAX_T:
        # out = W @ delta with W[t, s] = decay^(s-t) when no episode ends in [t, s-1], for s >= t
        idx = torch.arange(T, device=delta.device)
        lag = idx.unsqueeze(0) - idx.unsqueeze(1)  # [t, s] -> s - t
        weights = torch.pow(decay_t, lag.clamp_min(0).to(delta.dtype)) * (lag >= 0)
        ends = 1.0 - not_done.squeeze(-1)  # [*B, T]
        before = torch.cumsum(ends, -1) - ends  # number of ends strictly before t
        # no end in [t, s-1]  <=>  before[s] == before[t]
        same = before.unsqueeze(-1) == before.unsqueeze(-2)  # [*B, t, s]
        return (weights * same) @ delta
    decay_t = decay_t.expand_as(delta) if decay_t.dim() else decay_t
    out = torch.empty_like(delta)
    running = torch.zeros_like(delta[..., -1:, :])
    for t in range(T - 1, -1, -1):
        d = decay_t[..., t : t + 1, :] if decay_t.dim() else decay_t
        running = delta[..., t : t + 1, :] + d * not_done[..., t : t + 1, :] * running
        out[..., t : t + 1, :] = running
    return out


def reward2go(
    reward: torch.Tensor, done: torch.Tensor, gamma: float = 1.0, *, time_dim: int = -2
) -> torch.Tensor:
    """Discounted reward-to-go ``G_t = r_t + gamma * (1 - done_t) * G_{t+1}`` of every step
    (Monte-Carlo returns, cut where a trajectory ends and at the batch's last step), torchrl's
    signature.

    Args:
        reward: rewards with time on ``time_dim`` (e.g. ``[*B, T, 1]``).
        done: bool, same shape: the trajectory ends at ``t``.
        gamma: discount.
        time_dim: the time dimension.

    Returns:
        A tensor shaped like ``reward``.
    """
    if reward.shape != done.shape:
        raise ValueError(
            f"reward and done must share one shape, got {tuple(reward.shape)} and "
            f"{tuple(done.shape)}"
        )
    moved = reward.movedim(time_dim, -1).unsqueeze(-1)  # [..., T, 1]
    ends = done.bool().movedim(time_dim, -1).unsqueeze(-1)
    return _discounted_cumsum(moved, gamma, ends).squeeze(-1).movedim(-1, time_dim)
