"""Collector post-processing: n-step returns."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

__all__ = ["MultiStep"]


class MultiStep(torch.nn.Module):
    """Turn one-step transitions of a ``[*B, T]`` collector batch into n-step transitions.

    For each step ``t`` let ``m`` be the number of steps summed: ``n_steps``, or fewer when the
    episode ends (``("next", "done")``) or the batch ends first. Then:

    - ``("next", "reward")`` becomes ``sum_{k<m} gamma**k * r_{t+k}``; the one-step reward is
      kept in ``("next", "original_reward")``;
    - every other ``("next", ...)`` entry (observations, ``done``/``terminated``/``truncated``,
      step counters, ...) is taken from step ``t + m - 1``, so the bootstrap observation is the
      one ``m`` steps ahead, and an episode that *terminated* inside the window is flagged
      ``terminated`` (no bootstrap) while one *truncated* inside it is flagged ``truncated``
      only (bootstrap from its final observation);
    - ``"steps_to_next_obs"`` (``[*B, T, 1]`` int64) holds ``m``: a one-step TD target
      ``r + gamma**steps_to_next_obs * (1 - terminated) * V(next_obs)`` is then the n-step one.
      :attr:`KEY_STEPS` names this entry.

    Windows that reach the end of the batch are shortened (``m < n_steps``) rather than
    dropped; they stay exact because they bootstrap with ``gamma**m``.

    Args:
        gamma: discount factor.
        n_steps: the number of steps to look ahead (>= 1).
    """

    KEY_STEPS = "steps_to_next_obs"

    def __init__(self, gamma: float, n_steps: int) -> None:
        super().__init__()
        if n_steps < 1:
            raise ValueError(f"n_steps must be >= 1, got {n_steps}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = float(gamma)
        self.n_steps = int(n_steps)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Rewrite ``tensordict`` (time = last batch dim) in place and return it."""
        if tensordict.batch_dims < 1:
            raise ValueError("MultiStep needs a batch with a time dimension (last batch dim)")
        td = tensordict
        shape = td.batch_size
        T = shape[-1]
        flat = td.reshape(-1, T)
        nxt = flat.get("next")
        reward = nxt.get("reward")  # [N, T, 1] (or [N, T])
        done = nxt.get("done").reshape(flat.shape[0], T, -1).any(-1)  # [N, T]
        device = reward.device
        t = torch.arange(T, device=device).expand(flat.shape[0], T)
        last = t.clone()
        alive = torch.ones_like(done)
        ret = torch.zeros_like(reward)
        extra = reward.dim() - 2
        for k in range(self.n_steps):
            j = t + k
            valid = j < T
            jc = j.clamp_max(T - 1)
            include = alive & valid
            r_k = torch.gather(reward, 1, jc.reshape(*jc.shape, *([1] * extra)).expand_as(reward))
            mask = include.reshape(*include.shape, *([1] * extra))
            ret = ret + (self.gamma**k) * r_k * mask
            last = torch.where(include, j, last)
            alive = include & ~torch.gather(done, 1, jc)
        steps = last - t + 1
        row = torch.arange(flat.shape[0], device=device).unsqueeze(1) * T
        new_next = nxt.reshape(-1)[(row + last).reshape(-1)].reshape(flat.shape[0], T)
        new_next.set("original_reward", reward)
        new_next.set("reward", ret)
        flat.set("next", new_next)
        flat.set(self.KEY_STEPS, steps.unsqueeze(-1))
        out = flat.reshape(shape)
        if out is not tensordict:
            tensordict.update(out)
        return tensordict
