"""Samplers: which stored items a replay buffer returns.

A sampler's :meth:`Sampler.sample` returns ``(index, info)`` where ``index`` is an int64
tensor of storage indices and ``info`` a dict of extra per-item entries (``"_weight"`` for
:class:`PrioritizedSampler`). Buffers tell samplers about writes through
:meth:`Sampler.extend`/:meth:`Sampler.add` and about new priorities through
:meth:`Sampler.update_priority`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rl_trainers.data.replay_buffers._segment_tree import MinSegmentTree, SumSegmentTree

__all__ = [
    "PrioritizedSampler",
    "PrioritizedSliceSampler",
    "RandomSampler",
    "Sampler",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
]


class Sampler:
    """Base sampler (stateless).

    Random draws use :attr:`_rng`: the replay buffer's generator (set by
    :meth:`ReplayBuffer.set_rng`), or None for torch's global one.
    """

    _rng: torch.Generator | None = None

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """Draw ``batch_size`` indices among ``storage_len`` stored items."""
        raise NotImplementedError

    def extend(self, index: torch.Tensor, priority: torch.Tensor | None = None) -> None:
        """Called after items were written at ``index``."""

    def add(self, index: int, priority: torch.Tensor | None = None) -> None:
        """Called after one item was written at ``index``."""
        self.extend(torch.as_tensor([index]), priority)

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Non-prioritized samplers ignore priorities."""

    def empty(self) -> None:
        """Forget per-item state."""

    def set_storage(self, storage: Any) -> None:
        """Called by the replay buffer with its storage (for samplers that read entries)."""

    @property
    def ran_out(self) -> bool:
        """Whether an epoch-based sampler has just finished an epoch."""
        return False

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None


def _check_nonempty(storage_len: int) -> None:
    if storage_len == 0:
        raise RuntimeError("cannot sample from an empty replay buffer: extend it first")


class RandomSampler(Sampler):
    """Uniform sampling with replacement."""

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        _check_nonempty(storage_len)
        return torch.randint(storage_len, (batch_size,), generator=self._rng), {}


class SamplerWithoutReplacement(Sampler):
    """Epoch-style sampling: every stored item is drawn once before any is drawn again.

    Args:
        drop_last: when fewer than ``batch_size`` items remain in the epoch, start a new epoch
            instead of returning a short batch.
        shuffle: draw items in a random order (otherwise in storage order).
    """

    def __init__(self, drop_last: bool = False, shuffle: bool = True) -> None:
        self.drop_last = drop_last
        self.shuffle = shuffle
        self._order: torch.Tensor | None = None
        self._pos = 0
        self._ran_out = False

    def _new_epoch(self, storage_len: int) -> None:
        self._order = (
            torch.randperm(storage_len, generator=self._rng)
            if self.shuffle
            else torch.arange(storage_len)
        )
        self._pos = 0

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        _check_nonempty(storage_len)
        if self.drop_last and batch_size > storage_len:
            raise ValueError(
                f"batch_size={batch_size} exceeds the {storage_len} stored items with drop_last=True"
            )
        if self._order is None or len(self._order) != storage_len:
            self._new_epoch(storage_len)
        remaining = storage_len - self._pos
        if remaining == 0 or (self.drop_last and remaining < batch_size):
            self._new_epoch(storage_len)
        index = self._order[self._pos : self._pos + batch_size]
        self._pos += index.numel()
        left = storage_len - self._pos
        self._ran_out = left == 0 or (self.drop_last and left < batch_size)
        return index, {}

    @property
    def ran_out(self) -> bool:
        return self._ran_out

    @ran_out.setter
    def ran_out(self, value: bool) -> None:
        self._ran_out = bool(value)

    def empty(self) -> None:
        self._order = None
        self._pos = 0
        self._ran_out = False

    def state_dict(self) -> dict[str, Any]:
        order = None if self._order is None else self._order.clone()
        return {"order": order, "pos": self._pos, "ran_out": self._ran_out}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._order = state_dict["order"]
        self._pos = int(state_dict["pos"])
        self._ran_out = bool(state_dict["ran_out"])


_REDUCTIONS = ("max", "min", "mean", "median")


class PrioritizedSampler(Sampler):
    """Proportional prioritized sampling (Schaul et al., 2016) over sum/min segment trees.

    Item ``i`` is drawn with probability ``p_i / sum_j p_j`` where ``p_i = (|priority_i| +
    eps) ** alpha``. Each sample carries an importance weight ``"_weight" = (p_i / min_j p_j)
    ** -beta`` (the largest possible weight is 1). New items get the largest priority seen so
    far (1 initially).

    Args:
        max_capacity: the storage capacity.
        alpha: priority exponent (0 = uniform).
        beta: importance-sampling exponent (1 = full correction).
        eps: added to priorities so no item has probability zero.
        reduction: how a priority with more entries than one per item (e.g. a ``[B, T]``
            td_error for ``B`` stored trajectories) is reduced: "max", "min", "mean" or "median".
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        reduction: str = "max",
    ) -> None:
        if max_capacity < 1:
            raise ValueError(f"max_capacity must be >= 1, got {max_capacity}")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.max_capacity = int(max_capacity)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.eps = float(eps)
        self.reduction = reduction
        self._sum_tree = SumSegmentTree(self.max_capacity)
        self._min_tree = MinSegmentTree(self.max_capacity)
        self._max_priority = 1.0

    def _to_numpy_index(self, index: Any) -> np.ndarray:
        if isinstance(index, torch.Tensor):
            index = index.detach().cpu().numpy()
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= self.max_capacity):
            raise IndexError(
                f"priority index out of range [0, {self.max_capacity}): "
                f"min={index.min()}, max={index.max()}"
            )
        return index

    def _reduce(self, priority: Any, n: int) -> np.ndarray:
        if isinstance(priority, torch.Tensor):
            priority = priority.detach().to(torch.float64).cpu().numpy()
        priority = np.abs(np.asarray(priority, dtype=np.float64))
        if priority.ndim == 0:
            return np.full(n, float(priority))
        if priority.shape[0] != n:
            if priority.size == n:
                return priority.reshape(n)
            raise ValueError(
                f"got priorities of shape {priority.shape} for {n} indices: the leading "
                "dimension must match the number of indices"
            )
        if priority.ndim == 1:
            return priority
        flat = priority.reshape(n, -1)
        return getattr(np, self.reduction)(flat, axis=1)

    def _set(self, index: np.ndarray, priority: np.ndarray) -> None:
        if not np.all(np.isfinite(priority)):
            raise ValueError(f"priorities must be finite, got {priority}")
        self._max_priority = max(self._max_priority, float(priority.max()))
        value = (priority + self.eps) ** self.alpha
        self._sum_tree[index] = value
        self._min_tree[index] = value

    def extend(self, index: torch.Tensor, priority: torch.Tensor | None = None) -> None:
        idx = self._to_numpy_index(index)
        if idx.size == 0:
            return
        if priority is None:
            prio = np.full(idx.size, self._max_priority)
        else:
            prio = self._reduce(priority, idx.size)
        self._set(idx, prio)

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Set the priority of the items at ``index`` (``priority``: one per index or scalar)."""
        idx = self._to_numpy_index(index)
        if idx.size == 0:
            return
        self._set(idx, self._reduce(priority, idx.size))

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        _check_nonempty(storage_len)
        total = self._sum_tree.reduce()
        if total <= 0:
            raise RuntimeError("all priorities are zero: cannot sample")
        u = torch.rand(batch_size, dtype=torch.float64, generator=self._rng).numpy()
        index = self._sum_tree.find_prefixsum_index(u * total)
        np.minimum(index, storage_len - 1, out=index)
        p = self._sum_tree[index]
        p_min = self._min_tree.reduce()
        weight = np.power(p / p_min, -self.beta)
        return torch.from_numpy(index), {"_weight": torch.from_numpy(weight.astype(np.float32))}

    def empty(self) -> None:
        self._sum_tree.clear()
        self._min_tree.clear()
        self._max_priority = 1.0

    def state_dict(self) -> dict[str, Any]:
        return {
            "priorities": torch.from_numpy(self._sum_tree.leaves()),
            "max_priority": self._max_priority,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        leaves = state_dict["priorities"].numpy()
        self._sum_tree.set_leaves(leaves)
        min_leaves = np.where(leaves > 0, leaves, np.inf)
        self._min_tree.set_leaves(min_leaves)
        self._max_priority = float(state_dict["max_priority"])


# torchrl's path: ``...replay_buffers.samplers.SliceSampler`` (its own module imports Sampler)
from rl_trainers.data.replay_buffers.slice_sampler import (  # noqa: E402
    PrioritizedSliceSampler,
    SliceSampler,
    SliceSamplerWithoutReplacement,
)
