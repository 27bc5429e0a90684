"""Helpers shared by the collectors."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

__all__ = ["RandomPolicy", "split_trajectories"]


def split_trajectories(
    rollout: TensorDictBase, *, traj_key: tuple[str, str] = ("collector", "traj_ids")
) -> TensorDictBase:
    """Regroup a ``[*B, T]`` batch into ``[num_trajs, max_len]`` padded trajectories.

    Every trajectory (a run of equal ``traj_key`` values along time in one env) becomes one
    row, left-aligned and zero-padded; ``("collector", "mask")`` marks the real steps.

    Args:
        rollout: a collector batch, time as the last batch dimension.
        traj_key: the entry holding trajectory ids.

    Returns:
        A new TensorDict of batch size ``[num_trajs, max_len]``.
    """
    T = rollout.batch_size[-1]
    flat = rollout.reshape(-1)  # env-major: each env's steps are contiguous
    ids = flat.get(traj_key)
    # a new segment starts at each env's first step and wherever the id changes
    starts = torch.ones(ids.shape[0], dtype=torch.bool)
    if ids.shape[0] > 1:
        starts[1:] = ids[1:] != ids[:-1]
    starts[::T] = True
    seg = torch.cumsum(starts.long(), 0) - 1
    num = int(seg[-1]) + 1
    start_pos = torch.nonzero(starts).squeeze(-1)
    pos = torch.arange(ids.shape[0]) - start_pos[seg]
    lengths = torch.bincount(seg, minlength=num)
    max_len = int(lengths.max())
    out = flat[:1].expand(num * max_len).clone().zero_().reshape(num, max_len)
    out[seg, pos] = flat
    mask = torch.zeros(num, max_len, dtype=torch.bool)
    mask[seg, pos] = True
    out.set(("collector", "mask"), mask)
    return out


class RandomPolicy:
    """A policy drawing uniform actions from a spec (what ``policy=None`` does in a collector).

    Args:
        action_spec: the env's ``action_spec`` (written under ``action_key``) or a Composite
            such as ``full_action_spec`` (written entry by entry).
        action_key: where a leaf spec's action goes.

    Example:
        >>> collector = SyncDataCollector(env, RandomPolicy(env.action_spec), frames_per_batch=10)
    """

    def __init__(self, action_spec: Any, action_key: str = "action") -> None:
        self.action_spec = action_spec
        self.action_key = action_key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self.action_spec.rand()
        if isinstance(action, TensorDictBase):
            return tensordict.update(action)
        return tensordict.set(self.action_key, action)
