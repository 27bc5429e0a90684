"""Writers: where a replay buffer puts new items.

A writer's :meth:`Writer._select` turns a batch of new items into the storage slots they go
to (and the items actually written); the buffer then writes them and tells its sampler.
Round-robin writers compute the slots with :meth:`Writer.next_indices`; other writers
(:class:`TensorDictMaxValueWriter`) choose them from the data.
"""

from __future__ import annotations

import heapq
from typing import Any

import torch
from tensordict import TensorDictBase, is_tensorclass

__all__ = [
    "ImmutableDatasetWriter",
    "RoundRobinWriter",
    "TensorDictMaxValueWriter",
    "TensorDictRoundRobinWriter",
    "Writer",
]

Key = str | tuple[str, ...]


class Writer:
    """Base writer: chooses storage indices for new items (what an item is, the storage's
    ``ndim`` decides)."""

    def __init__(self) -> None:
        self._cursor = 0
        self._write_count = 0  # items written since the buffer was created or emptied

    def next_indices(self, n: int, max_size: int) -> torch.Tensor:
        """The ``n`` storage indices the next ``n`` items go to, and advance."""
        raise NotImplementedError

    def _select(self, data: Any, n: int, max_size: int) -> tuple[torch.Tensor, Any, torch.Tensor]:
        """``(storage indices, items written there, index returned to the caller)`` for the
        ``n`` items of ``data`` (along its leading dim).

        More items than the storage holds: as if every item were written in turn, the last
        ``max_size`` ones remain, in the slots round-robin writing gives them (torchrl's
        layout).
        """
        self._write_count += n
        skipped = 0
        if n > max_size:
            skipped = (n - max_size) % max_size
            data = data[n - max_size :]
            n = max_size
        if n == 0:
            empty = torch.empty(0, dtype=torch.long)
            return empty, data, empty
        if skipped:
            self.next_indices(skipped, max_size)
        index = self.next_indices(n, max_size)
        return index, data, index

    def empty(self) -> None:
        self._cursor = 0
        self._write_count = 0

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self._cursor, "write_count": self._write_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._cursor = int(state_dict["cursor"])
        self._write_count = int(state_dict.get("write_count", 0))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cursor={self._cursor})"


class RoundRobinWriter(Writer):
    """Writes items in order, wrapping around to overwrite the oldest once the storage is full."""

    def next_indices(self, n: int, max_size: int) -> torch.Tensor:
        if n > max_size:
            raise ValueError(
                f"cannot write {n} items at once into a storage of max_size={max_size}"
            )
        index = torch.arange(self._cursor, self._cursor + n) % max_size
        self._cursor = (self._cursor + n) % max_size
        return index


class TensorDictRoundRobinWriter(RoundRobinWriter):
    """A :class:`RoundRobinWriter` that also stores each TensorDict item's storage position
    under ``"index"`` (torchrl's writer for TensorDict buffers), so samples of any buffer
    type carry it. The TensorDict passed to ``extend`` is left unchanged."""

    def _select(self, data: Any, n: int, max_size: int) -> tuple[torch.Tensor, Any, torch.Tensor]:
        index, data, out = super()._select(data, n, max_size)
        if isinstance(data, TensorDictBase) and index.numel():
            shape = data.batch_size
            value = index.reshape(-1, *([1] * (len(shape) - 1))).expand(shape)
            data = data.clone(False)
            data.set("index", value.clone())
        return index, data, out


class ImmutableDatasetWriter(Writer):
    """A writer that refuses every write (torchrl's writer for fixed datasets): ``add``,
    ``extend`` and ``empty`` raise ``RuntimeError``; reading and sampling work."""

    WRITING_ERR = "This dataset doesn't allow writing."

    def next_indices(self, n: int, max_size: int) -> torch.Tensor:
        raise RuntimeError(self.WRITING_ERR)

    def _select(self, data: Any, n: int, max_size: int) -> tuple[torch.Tensor, Any, torch.Tensor]:
        raise RuntimeError(self.WRITING_ERR)

    def empty(self) -> None:
        raise RuntimeError(self.WRITING_ERR)


_REDUCTIONS = {
    "sum": lambda x: x.sum(-1),
    "mean": lambda x: x.mean(-1),
    "max": lambda x: x.amax(-1),
    "min": lambda x: x.amin(-1),
    "median": lambda x: x.median(-1).values,
}


class TensorDictMaxValueWriter(Writer):
    """Keep the items with the largest ``rank_key`` value (torchrl's writer).

    While the storage has room, new items fill it in order; once it is full a new item
    replaces the stored item of smallest rank if its rank is larger, and is dropped
    otherwise. ``extend`` returns, per item, its storage index or -1 if it was dropped
    (``add`` returns that index, -1 for a dropped item).

    Items are what the storage makes of the data (its ``ndim``, as for every writer): with a
    default storage, ``extend`` of a ``[B, T]`` TensorDict gives ``B`` items of ``[T]``
    (trajectories), each ranked by the ``reduction`` of its ``rank_key`` entries; with an
    ``ndim=2`` storage, or data flattened first (``data.reshape(-1)``), the best transitions
    are kept.

    Args:
        rank_key: the entry ranking the items (default ``("next", "reward")``).
        reduction: how an item with several ``rank_key`` values is ranked: ``"sum"``
            (default), ``"mean"``, ``"max"``, ``"min"`` or ``"median"``.

    Example:
        >>> rb = TensorDictReplayBuffer(
        ...     storage=LazyTensorStorage(1), writer=TensorDictMaxValueWriter(rank_key="key"),
        ...     batch_size=1,
        ... )
        >>> rb.extend(TensorDict({"key": torch.arange(10), "obs": torch.arange(10)}, [10]))
        >>> rb.sample()["obs"].item()
        9
    """

    def __init__(self, rank_key: Key | None = None, reduction: str = "sum") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"TensorDictMaxValueWriter: reduction must be one of {sorted(_REDUCTIONS)}, "
                f"got {reduction!r}"
            )
        self._rank_key = ("next", "reward") if rank_key is None else rank_key
        self._reduction = reduction
        self._current_top_values: list[tuple[float, int]] = []  # min-heap of (rank, slot)

    @property
    def rank_key(self) -> Key:
        return self._rank_key

    @property
    def reduction(self) -> str:
        return self._reduction

    def _ranks(self, data: Any, n: int) -> list[float]:
        if not isinstance(data, TensorDictBase):
            raise RuntimeError(
                f"{type(self).__name__} expects data to be a tensor collection (tensordict or "
                f"tensorclass). Found a {type(data).__name__} instead."
            )
        rank = data.get(self._rank_key, None)
        if rank is None:
            raise KeyError(f"Rank key {self._rank_key} not found in data.")
        rank = rank.reshape(n, -1).to(torch.float64)
        return _REDUCTIONS[self._reduction](rank).tolist()

    def _slot_for(self, rank: float, max_size: int) -> int | None:
        """The storage slot an item of ``rank`` goes to, or None if it is not kept."""
        heap = self._current_top_values
        if len(heap) < max_size:
            slot = self._cursor
            self._cursor = (self._cursor + 1) % max_size
            heapq.heappush(heap, (rank, slot))
            return slot
        if rank > heap[0][0]:
            _, slot = heapq.heapreplace(heap, (rank, heap[0][1]))
            return slot
        return None

    def _select(self, data: Any, n: int, max_size: int) -> tuple[torch.Tensor, Any, torch.Tensor]:
        if is_tensorclass(data):
            data = data._tensordict
        if n == 0:
            empty = torch.empty(0, dtype=torch.long)
            return empty, data, empty
        ranks = self._ranks(data, n)
        latest: dict[int, int] = {}  # slot -> position in data (a later item wins a slot)
        for pos, rank in enumerate(ranks):
            slot = self._slot_for(rank, max_size)
            if slot is not None:
                latest[slot] = pos
                self._write_count += 1
        out = torch.full((n,), -1, dtype=torch.long)
        if not latest:
            return torch.empty(0, dtype=torch.long), data[:0], out
        slots = torch.tensor(list(latest.keys()), dtype=torch.long)
        positions = torch.tensor(list(latest.values()), dtype=torch.long)
        out[positions] = slots
        return slots, data[positions], out

    def empty(self) -> None:
        super().empty()
        self._current_top_values = []

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["top_values"] = [[float(r), int(s)] for r, s in self._current_top_values]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        heap = [(float(r), int(s)) for r, s in state_dict.get("top_values", [])]
        heapq.heapify(heap)
        self._current_top_values = heap

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(cursor={self._cursor}, rank_key={self._rank_key}, "
            f"reduction={self._reduction})"
        )
