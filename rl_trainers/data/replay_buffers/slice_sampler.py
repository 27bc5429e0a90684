"""``SliceSampler``: contiguous sub-trajectories of a replay buffer (torchrl's keywords).

Trajectories are runs of stored items: positions with the same ``traj_key`` value, or the
items up to and including one whose ``end_key`` flag is set. A slice of ``slice_len`` items
is drawn from a trajectory chosen uniformly among those long enough, at a uniform offset.
Samples are flat (``[batch_size]``, the slices one after the other): reshape them to
``[num_slices, slice_len]``. The last step of every slice is marked truncated (and done) in
the sample, so value estimators do not bootstrap across slices.
:class:`SliceSamplerWithoutReplacement` visits the trajectories epoch by epoch and
:class:`PrioritizedSliceSampler` draws the slices' start points by priority.

Example:
    >>> rb = TensorDictReplayBuffer(
    ...     storage=LazyTensorStorage(10_000),
    ...     sampler=SliceSampler(slice_len=8, traj_key=("collector", "traj_ids")),
    ...     batch_size=64,
    ... )  # doctest: +SKIP
    >>> rb.sample().reshape(-1, 8)  # 8 slices of 8 consecutive steps  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_trainers.data.replay_buffers.samplers import (
    PrioritizedSampler,
    Sampler,
    SamplerWithoutReplacement,
    _check_nonempty,
)

__all__ = ["PrioritizedSliceSampler", "SliceSampler", "SliceSamplerWithoutReplacement"]

Key = str | tuple[str, ...]


def _replace_last(key: Key, name: str) -> Key:
    return (*key[:-1], name) if isinstance(key, tuple) else name


class SliceSampler(Sampler):
    """Sample slices of consecutive items from the same trajectory, with replacement.

    Keyword Args:
        num_slices: slices per sample (``batch_size // num_slices`` items each); exclusive
            with ``slice_len``.
        slice_len: items per slice (``batch_size // slice_len`` slices); exclusive with
            ``num_slices``.
        end_key: the flag ending a trajectory (default ``("next", "done")``); used when
            the storage has no ``traj_key`` entry.
        traj_key: the trajectory id entry (default ``"episode"``; collectors write
            ``("collector", "traj_ids")``).
        ends: a bool tensor of end flags, one per stored item, instead of reading
            ``end_key`` (for a storage that is not extended afterwards).
        trajectories: trajectory ids, one per stored item, instead of reading ``traj_key``.
        truncated_key: where the sample marks the end of each slice (None: not marked);
            ``done`` next to it is set there too.
        strict_length: only trajectories with at least ``slice_len`` items are sampled;
            False also takes shorter ones whole (the sample then holds fewer items).
        cache_values, compile, span, use_gpu: accepted at torchrl's defaults only.
    """

    def __init__(
        self,
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        end_key: Key | None = None,
        traj_key: Key | None = None,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        cache_values: bool = False,
        truncated_key: Key | None = ("next", "truncated"),
        strict_length: bool = True,
        compile: bool | dict = False,
        span: bool | int | tuple = False,
        use_gpu: bool | torch.device = False,
    ) -> None:
        if (num_slices is None) == (slice_len is None):
            raise TypeError("SliceSampler needs exactly one of num_slices and slice_len")
        for name, value in (("num_slices", num_slices), ("slice_len", slice_len)):
            if value is not None and int(value) < 1:
                raise ValueError(f"SliceSampler: {name} must be >= 1, got {value}")
        if compile or span or use_gpu:
            raise NotImplementedError(
                "SliceSampler: compile, span and use_gpu are not supported; leave them False"
            )
        if ends is not None and trajectories is not None:
            raise TypeError("SliceSampler: give ends or trajectories, not both")
        self.num_slices = None if num_slices is None else int(num_slices)
        self.slice_len = None if slice_len is None else int(slice_len)
        self.end_key = ("next", "done") if end_key is None else end_key
        self.traj_key = "episode" if traj_key is None else traj_key
        self._user_traj_key = traj_key is not None
        self.ends = ends
        self.trajectories = trajectories
        self.cache_values = cache_values
        self.truncated_key = truncated_key
        self.strict_length = bool(strict_length)
        self._storage: Any = None

    def set_storage(self, storage: Any) -> None:
        """Called by the replay buffer: the storage whose trajectory entries are read."""
        self._storage = storage

    # --- trajectories ------------------------------------------------------------------------
    def _column(self, key: Key, n: int) -> torch.Tensor | None:
        storage = self._storage
        data = getattr(storage, "_storage", None)
        if isinstance(data, TensorDictBase):
            value = data.get(key, None)
            return None if value is None else value[:n]
        items = getattr(storage, "_items", None)
        if items is not None and items and isinstance(items[0], TensorDictBase):
            if key not in items[0].keys(True, True):
                return None
            return torch.stack([item.get(key) for item in items[:n]])
        return None

    def _end_flags(self, n: int) -> torch.Tensor:
        """Bool ``[n]``: item ``i`` is the last of its trajectory (storage order)."""
        traj = self.trajectories
        if traj is None and self.ends is None:
            traj = self._column(self.traj_key, n)
            if traj is None and self._user_traj_key:
                raise KeyError(f"SliceSampler: the stored items have no {self.traj_key!r} entry")
        if traj is not None:
            traj = traj[:n].reshape(n, -1)[:, 0]
            end = torch.ones(n, dtype=torch.bool)
            end[:-1] = traj[1:] != traj[:-1]
            return self._cut_at_cursor(end)
        flags = self.ends if self.ends is not None else self._column(self.end_key, n)
        if flags is None:
            raise KeyError(
                f"SliceSampler: the stored items have neither the trajectory key "
                f"{self.traj_key!r} nor the end key {self.end_key!r}; pass traj_key= "
                "(collectors write ('collector', 'traj_ids')) or end_key="
            )
        end = flags[:n].reshape(n, -1).any(-1).clone()
        end[-1] = True
        return self._cut_at_cursor(end)

    def _cut_at_cursor(self, end: torch.Tensor) -> torch.Tensor:
        # in a full circular storage the newest item is followed by the oldest one
        cursor = int(getattr(self._storage, "_last_cursor", 0))
        if 0 < cursor <= end.numel():
            end[cursor - 1] = True
        return end

    # --- sampling ----------------------------------------------------------------------------
    def _slice_len(self, batch_size: int) -> int:
        if self.slice_len is not None:
            if batch_size % self.slice_len:
                raise ValueError(
                    f"SliceSampler: batch_size={batch_size} is not divisible by "
                    f"slice_len={self.slice_len}"
                )
            return self.slice_len
        if batch_size % self.num_slices:
            raise ValueError(
                f"SliceSampler: batch_size={batch_size} is not divisible by "
                f"num_slices={self.num_slices}"
            )
        return batch_size // self.num_slices

    def _trajectories(self, storage_len: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(starts, lengths)`` of the stored trajectories slices of ``length`` come from
        (all of them with ``strict_length=False``), in storage order."""
        end = self._end_flags(storage_len)
        stops = torch.nonzero(end).reshape(-1)
        starts = torch.cat([stops.new_zeros(1), stops[:-1] + 1])
        lengths = stops - starts + 1
        ok = lengths >= length if self.strict_length else lengths > 0
        if not bool(ok.any()):
            raise RuntimeError(
                f"{type(self).__name__}: no stored trajectory has {length} items (longest: "
                f"{int(lengths.max())}); use a shorter slice or strict_length=False"
            )
        return starts[ok], lengths[ok]

    def _pick(self, count: int, n_slices: int) -> torch.Tensor:
        """Which of the ``count`` trajectories the ``n_slices`` slices come from."""
        return torch.randint(count, (n_slices,), generator=self._rng)

    def _stored_trajectories(
        self, storage_len: int, batch_size: int
    ) -> tuple[int, torch.Tensor, torch.Tensor]:
        """``(slice_len, starts, lengths)``: the slice length for ``batch_size`` and the
        stored trajectories slices of it come from (see :meth:`_trajectories`)."""
        _check_nonempty(storage_len)
        if self._storage is None:
            raise RuntimeError(
                f"{type(self).__name__} reads the storage: use it inside a replay buffer"
            )
        length = self._slice_len(batch_size)
        return (length, *self._trajectories(storage_len, length))

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        length, starts, lengths = self._stored_trajectories(storage_len, batch_size)
        pick = self._pick(starts.numel(), batch_size // length)
        n_slices = pick.numel()
        seq_len = lengths[pick].clamp(max=length)
        offset = (torch.rand(n_slices, generator=self._rng) * (lengths[pick] - seq_len + 1)).long()
        return self._slices(starts[pick] + offset, seq_len, length)

    def _slices(
        self, first: torch.Tensor, seq_len: torch.Tensor, length: int
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """Storage index of the slices starting at ``first`` with ``seq_len`` items each (at
        most ``length``), and their end flags under ``truncated_key``."""
        if bool((seq_len == length).all()):
            index = (first.unsqueeze(1) + torch.arange(length)).reshape(-1)
        else:
            index = torch.cat([f + torch.arange(s) for f, s in zip(first, seq_len, strict=True)])
        info: dict[str, Any] = {}
        if self.truncated_key is not None:
            truncated = torch.zeros(index.numel(), 1, dtype=torch.bool)
            truncated[seq_len.cumsum(0) - 1] = True
            info[self.truncated_key] = truncated
            info[_replace_last(self.truncated_key, "done")] = truncated
        return index, info

    def state_dict(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        size = f"slice_len={self.slice_len}" if self.slice_len else f"num_slices={self.num_slices}"
        return f"SliceSampler({size}, traj_key={self.traj_key!r}, end_key={self.end_key!r})"


class SliceSamplerWithoutReplacement(SliceSampler, SamplerWithoutReplacement):
    """:class:`SliceSampler` whose slices come from trajectories drawn without replacement.

    An epoch visits every stored trajectory (those with ``slice_len`` items or more when
    ``strict_length=True``) once, one slice each, at a random offset; a sample never holds
    two slices of one trajectory. The last sample of an epoch has fewer slices when the
    trajectories left are fewer than ``num_slices`` (``drop_last=False``), or is skipped for
    a new epoch (``drop_last=True``). Iterating over the buffer (``for batch in rb``) yields
    the samples of one epoch. Writing to the buffer starts a new epoch; the epoch's order
    and position are in ``state_dict()``.

    Keyword Args:
        drop_last: skip the short last sample of an epoch.
        shuffle: visit trajectories in a random order (otherwise in storage order).
        num_slices, slice_len, end_key, traj_key, ends, trajectories, truncated_key,
        strict_length, compile, use_gpu: as :class:`SliceSampler`.

    Example:
        >>> rb = TensorDictReplayBuffer(
        ...     storage=LazyTensorStorage(1000),
        ...     sampler=SliceSamplerWithoutReplacement(num_slices=10, traj_key="episode"),
        ...     batch_size=320,
        ... )  # doctest: +SKIP
        >>> for batch in rb:  # each trajectory once, 10 slices of 32 steps per batch
        ...     ...  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        drop_last: bool = False,
        end_key: Key | None = None,
        traj_key: Key | None = None,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        truncated_key: Key | None = ("next", "truncated"),
        strict_length: bool = True,
        shuffle: bool = True,
        compile: bool | dict = False,
        use_gpu: bool | torch.device = False,
    ) -> None:
        SliceSampler.__init__(
            self,
            num_slices=num_slices,
            slice_len=slice_len,
            end_key=end_key,
            traj_key=traj_key,
            ends=ends,
            trajectories=trajectories,
            truncated_key=truncated_key,
            strict_length=strict_length,
            compile=compile,
            use_gpu=use_gpu,
        )
        SamplerWithoutReplacement.__init__(self, drop_last=drop_last, shuffle=shuffle)

    def _pick(self, count: int, n_slices: int) -> torch.Tensor:
        if self.drop_last and n_slices > count:
            raise ValueError(
                f"{type(self).__name__}: {n_slices} slices per sample exceed the {count} "
                "trajectories to slice with drop_last=True; ask for fewer slices"
            )
        pick, _ = SamplerWithoutReplacement.sample(self, count, n_slices)
        return pick

    def extend(self, index: torch.Tensor, priority: torch.Tensor | None = None) -> None:
        """New data changes the trajectories: the next sample starts a new epoch."""
        self._order = None
        self._pos = 0

    def state_dict(self) -> dict[str, Any]:
        return SamplerWithoutReplacement.state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        SamplerWithoutReplacement.load_state_dict(self, state_dict)

    def __repr__(self) -> str:
        size = f"slice_len={self.slice_len}" if self.slice_len else f"num_slices={self.num_slices}"
        return (
            f"{type(self).__name__}({size}, traj_key={self.traj_key!r}, "
            f"end_key={self.end_key!r}, drop_last={self.drop_last}, shuffle={self.shuffle})"
        )


class PrioritizedSliceSampler(SliceSampler, PrioritizedSampler):
    """:class:`SliceSampler` whose slices start at items drawn by priority.

    Priorities are per stored item, as in :class:`PrioritizedSampler`; a slice starts at
    item ``i`` with probability proportional to ``(|priority_i| + eps) ** alpha`` among the
    items a slice can start at (with ``strict_length=True``, those followed by at least
    ``slice_len - 1`` items of their trajectory; otherwise any item, the slice then stops at
    the trajectory's end). Every item of a slice carries the importance weight of its start,
    ``"_weight" = (p_start / min_j p_j) ** -beta`` (at most 1), next to its ``"index"``.
    ``update_priority(index, priority)`` takes one priority per item (a sampled batch's
    ``"index"`` and, e.g., its ``"td_error"``); new items get the largest priority seen so far.
    Slices never cross trajectory boundaries and their last step is marked truncated, as
    with :class:`SliceSampler`; ``state_dict()`` holds the priorities.

    An item late in its trajectory only appears in slices started before it: give the
    items of a slice the priority that should draw it (e.g. the slice's largest td_error).

    Args:
        max_capacity: the storage capacity.
        alpha: priority exponent (0 = uniform start points).
        beta: importance-sampling exponent (1 = full correction).
        eps: added to priorities so no item has probability zero.
        dtype: torchrl's segment-tree dtype, accepted for compatibility; the trees here
            always hold float64.
        reduction: how a priority with several entries per item is reduced ("max", "min",
            "mean" or "median").

    Keyword Args:
        num_slices, slice_len, end_key, traj_key, ends, trajectories, cache_values,
        truncated_key, strict_length: as :class:`SliceSampler`.
        max_priority_within_buffer: new items get the largest priority among the stored
            items, not the largest ever seen.
        compile, span, pad_output, use_gpu: not supported; leave them False
            (``NotImplementedError`` otherwise).

    Example:
        >>> rb = TensorDictReplayBuffer(
        ...     storage=LazyTensorStorage(1000),
        ...     sampler=PrioritizedSliceSampler(1000, alpha=0.7, beta=0.5, slice_len=8),
        ...     batch_size=64,
        ... )  # doctest: +SKIP
        >>> sample = rb.sample()  # 8 slices of 8 steps, with "index" and "_weight"
        >>> sample.set("td_error", td_error)  # doctest: +SKIP
        >>> rb.update_priority(sample)  # doctest: +SKIP
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        reduction: str = "max",
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        end_key: Key | None = None,
        traj_key: Key | None = None,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        cache_values: bool = False,
        truncated_key: Key | None = ("next", "truncated"),
        strict_length: bool = True,
        compile: bool | dict = False,
        span: bool | int | tuple = False,
        pad_output: bool = False,
        use_gpu: bool | torch.device = False,
        max_priority_within_buffer: bool = False,
    ) -> None:
        if pad_output:
            raise NotImplementedError(
                "PrioritizedSliceSampler: pad_output is not supported; leave it False"
            )
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"PrioritizedSliceSampler: dtype must be a float dtype, got {dtype}")
        SliceSampler.__init__(
            self,
            num_slices=num_slices,
            slice_len=slice_len,
            end_key=end_key,
            traj_key=traj_key,
            ends=ends,
            trajectories=trajectories,
            cache_values=cache_values,
            truncated_key=truncated_key,
            strict_length=strict_length,
            compile=compile,
            span=span,
            use_gpu=use_gpu,
        )
        PrioritizedSampler.__init__(self, max_capacity, alpha, beta, eps, reduction=reduction)
        self.max_priority_within_buffer = bool(max_priority_within_buffer)

    def _start_candidates(
        self, starts: torch.Tensor, lengths: torch.Tensor, length: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, stops)``: every storage position a slice may start at and the end
        (exclusive) of its trajectory."""
        count = lengths - length + 1 if self.strict_length else lengths
        offset = torch.arange(int(count.sum())) - torch.repeat_interleave(
            count.cumsum(0) - count, count
        )
        positions = torch.repeat_interleave(starts, count) + offset
        stops = torch.repeat_interleave(starts + lengths, count)
        return positions.numpy(), stops.numpy()

    def sample(self, storage_len: int, batch_size: int) -> tuple[torch.Tensor, dict[str, Any]]:
        length, starts, lengths = self._stored_trajectories(storage_len, batch_size)
        positions, stops = self._start_candidates(starts, lengths, length)
        p = self._sum_tree[positions]
        cdf = np.cumsum(p)
        if cdf[-1] <= 0:
            raise RuntimeError("PrioritizedSliceSampler: all start priorities are zero")
        u = torch.rand(batch_size // length, dtype=torch.float64, generator=self._rng)
        u = u.numpy() * cdf[-1]
        # positions of zero priority are never drawn; round-off at the top end is clipped
        pick = np.minimum(np.searchsorted(cdf, u, side="right"), int(np.flatnonzero(p)[-1]))
        first = torch.from_numpy(positions[pick])
        seq_len = torch.from_numpy(np.minimum(stops[pick] - positions[pick], length))
        index, info = self._slices(first, seq_len, length)
        weight = np.power(p[pick] / self._min_tree.reduce(), -self.beta).astype(np.float32)
        info["_weight"] = torch.from_numpy(weight).repeat_interleave(seq_len)
        return index, info

    def extend(self, index: torch.Tensor, priority: torch.Tensor | None = None) -> None:
        if priority is None and self.max_priority_within_buffer:
            self._max_priority = self._stored_max_priority()
        PrioritizedSampler.extend(self, index, priority)

    def _stored_max_priority(self) -> float:
        """The largest priority among the stored items (1 when there are none)."""
        leaves = self._sum_tree.leaves()
        top = float(leaves.max())
        if top <= 0:
            return 1.0
        if self.alpha == 0:  # every item weighs 1: the priorities are not recoverable
            return self._max_priority
        return max(top ** (1.0 / self.alpha) - self.eps, 0.0)

    def state_dict(self) -> dict[str, Any]:
        return PrioritizedSampler.state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        PrioritizedSampler.load_state_dict(self, state_dict)

    def __repr__(self) -> str:
        size = f"slice_len={self.slice_len}" if self.slice_len else f"num_slices={self.num_slices}"
        return (
            f"{type(self).__name__}({size}, alpha={self.alpha}, beta={self.beta}, "
            f"traj_key={self.traj_key!r}, end_key={self.end_key!r}, "
            f"strict_length={self.strict_length})"
        )
