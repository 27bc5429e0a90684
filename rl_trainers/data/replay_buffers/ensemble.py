"""Ensembles: several replay buffers read and sampled as one (torchrl's ``*Ensemble`` classes).

A :class:`ReplayBufferEnsemble` samples a batch made of ``num_buffer_sampled`` sub-batches,
each drawn from one of its buffers (chosen with weights ``p``, uniformly, or every buffer
once with ``sample_from_all=True``), and stacks them: ``rb.sample(10)`` over two buffers is
shaped ``[2, 5]``. A TensorDict sample carries ``("index", "buffer_ids")`` (which buffer each
row came from) and ``("index", "index")`` (where in that buffer). Writing goes to the
buffers themselves: ``rb[0].extend(data)``.

:class:`StorageEnsemble`, :class:`SamplerEnsemble` and :class:`WriterEnsemble` hold the
buffers' components; the ensemble buffer builds them from the buffers it is given, or
builds the buffers from them.

Example:
    >>> rb = ReplayBufferEnsemble(
    ...     TensorDictReplayBuffer(storage=LazyTensorStorage(100)),
    ...     TensorDictReplayBuffer(storage=LazyTensorStorage(100)),
    ...     p=[0.75, 0.25],
    ... )
    >>> rb[0].extend(expert_data)  # doctest: +SKIP
    >>> rb[1].extend(online_data)  # doctest: +SKIP
    >>> sample = rb.sample(64)  # [2, 32]: each row from buffer 0 with probability 0.75
    >>> sample["index", "buffer_ids"][:, 0]  # doctest: +SKIP
    tensor([0, 1])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_trainers.data.replay_buffers.replay_buffers import ReplayBuffer
from rl_trainers.data.replay_buffers.samplers import Sampler
from rl_trainers.data.replay_buffers.storages import Storage
from rl_trainers.data.replay_buffers.writers import Writer

__all__ = ["ReplayBufferEnsemble", "SamplerEnsemble", "StorageEnsemble", "WriterEnsemble"]

_WRITE_ERROR = (
    "a replay-buffer ensemble is read-only: write to one of its buffers, e.g. rb[0].extend(data)"
)


def _members(kind: str, members: Sequence[Any], cls: type) -> tuple[Any, ...]:
    if not members:
        raise ValueError(f"{kind} needs at least one {cls.__name__}")
    for i, member in enumerate(members):
        if not isinstance(member, cls):
            raise TypeError(
                f"{kind}: member {i} is a {type(member).__name__}, not a {cls.__name__}"
            )
    return tuple(members)


def _select(members: Sequence[Any], index: Any) -> list[Any]:
    """The members at ``index`` (a slice, an index sequence or a 1-d tensor)."""
    if isinstance(index, slice):
        return list(members[index])
    positions = torch.as_tensor(index, dtype=torch.long).reshape(-1).tolist()
    return [members[i] for i in positions]


class StorageEnsemble(Storage):
    """The storages of several replay buffers, read together.

    ``len()`` is the number of items in all of them; ``ensemble[i]`` is storage ``i``.
    Writing raises ``RuntimeError``: extend the buffers themselves.

    Args:
        *storages: the storages.
        transforms: one transform (or None) per storage, applied by the
            :class:`ReplayBufferEnsemble` built from this ensemble to that storage's samples.
    """

    def __init__(
        self, *storages: Storage, transforms: Sequence[Callable | None] | None = None
    ) -> None:
        self._storages = _members("StorageEnsemble", storages, Storage)
        if transforms is None:
            transforms = [None] * len(storages)
        if len(transforms) != len(storages):
            raise ValueError(
                f"StorageEnsemble: got {len(transforms)} transforms for {len(storages)} storages"
            )
        self._transforms = list(transforms)
        super().__init__(sum(storage.max_size for storage in self._storages))

    def __len__(self) -> int:
        return sum(len(storage) for storage in self._storages)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, int):
            return self._storages[index]
        return StorageEnsemble(
            *_select(self._storages, index), transforms=_select(self._transforms, index)
        )

    def set(self, index: torch.Tensor, data: Any) -> None:
        raise RuntimeError(_WRITE_ERROR)

    def get(self, index: TensorDictBase) -> list[tuple[int, Any]]:
        """``[(buffer_id, items), ...]``: for each row of a :class:`SamplerEnsemble` index
        (``"buffer_ids"`` ``[n]``, ``"index"`` ``[n, k]``), what that storage holds there."""
        rows = zip(index["buffer_ids"].tolist(), index["index"], strict=True)
        return [(i, self._storages[i].get(items)) for i, items in rows]

    def empty(self) -> None:
        for storage in self._storages:
            storage.empty()

    def state_dict(self) -> dict[str, Any]:
        return {str(i): storage.state_dict() for i, storage in enumerate(self._storages)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, storage in enumerate(self._storages):
            storage.load_state_dict(state_dict[str(i)])

    def __repr__(self) -> str:
        names = ", ".join(f"{type(s).__name__}(max_size={s.max_size})" for s in self._storages)
        return f"StorageEnsemble({names})"


def _check_p(p: Any, n: int) -> torch.Tensor | None:
    """``p`` as probabilities over ``n`` buffers (normalised), or None."""
    if p is None:
        return None
    try:
        weights = torch.as_tensor(p, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"p must be a sequence of {n} non-negative weights, got {p!r}") from err
    if weights.ndim != 1 or weights.numel() != n:
        raise ValueError(
            f"p must hold one weight per buffer: got shape {tuple(weights.shape)} for {n} buffers"
        )
    if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
        raise ValueError(f"p must hold finite, non-negative weights, got {weights.tolist()}")
    if float(weights.sum()) <= 0:
        raise ValueError(f"p must have a positive sum, got {weights.tolist()}")
    return weights / weights.sum()


class SamplerEnsemble(Sampler):
    """The samplers of several replay buffers, and how a batch is split among the buffers.

    :meth:`sample` draws ``num_buffer_sampled`` buffers (each with probability ``p``, or
    uniformly; with ``sample_from_all=True`` every buffer once, in order) and asks each
    chosen buffer's sampler for ``batch_size // num_buffer_sampled`` items. Its index is a
    TensorDict ``[num_buffer_sampled]`` with ``"buffer_ids"`` and ``"index"``
    (``[num_buffer_sampled, batch_size // num_buffer_sampled]``), unlike other samplers'.

    Args:
        *samplers: the samplers, one per buffer.

    Keyword Args:
        p: relative weights of the buffers (normalised); exclusive with ``sample_from_all``.
        sample_from_all: sample every buffer once per batch.
        num_buffer_sampled: sub-batches per batch (default: the number of buffers); with
            ``sample_from_all=True`` it is the number of buffers.
    """

    def __init__(
        self,
        *samplers: Sampler,
        p: Sequence[float] | torch.Tensor | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
    ) -> None:
        self._samplers = _members("SamplerEnsemble", samplers, Sampler)
        if sample_from_all and p is not None:
            raise ValueError("SamplerEnsemble: p and sample_from_all=True are exclusive")
        if num_buffer_sampled is not None and int(num_buffer_sampled) < 1:
            raise ValueError(f"num_buffer_sampled must be >= 1, got {num_buffer_sampled}")
        self.sample_from_all = bool(sample_from_all)
        self.p = _check_p(p, len(self._samplers))
        self._num_buffer_sampled = None if num_buffer_sampled is None else int(num_buffer_sampled)

    @property
    def num_buffer_sampled(self) -> int:
        if self.sample_from_all or self._num_buffer_sampled is None:
            return len(self._samplers)
        return self._num_buffer_sampled

    @property
    def _rng(self) -> torch.Generator | None:
        return self._samplers[0]._rng

    @_rng.setter
    def _rng(self, generator: torch.Generator | None) -> None:
        for sampler in self._samplers:  # the buffers' samplers draw from it too
            sampler._rng = generator

    def _buffer_ids(self) -> torch.Tensor:
        n = self.num_buffer_sampled
        if self.sample_from_all:
            return torch.arange(n)
        if self.p is None:
            return torch.randint(len(self._samplers), (n,), generator=self._rng)
        return torch.multinomial(self.p, n, replacement=True, generator=self._rng)

    def sample(  # type: ignore[override]
        self, storage: StorageEnsemble, batch_size: int
    ) -> tuple[TensorDict, list[dict[str, Any]]]:
        """``(index, infos)``: the TensorDict index described above and, per row, the
        chosen sampler's info dict (e.g. ``"_weight"``)."""
        if not isinstance(storage, StorageEnsemble):
            raise TypeError(f"SamplerEnsemble samples a StorageEnsemble, got {type(storage)}")
        n = self.num_buffer_sampled
        if batch_size % n:
            raise ValueError(
                f"batch_size={batch_size} is not divisible by num_buffer_sampled={n} "
                "(each sampled buffer gives the same number of items)"
            )
        buffer_ids = self._buffer_ids()
        rows, infos = [], []
        for i in buffer_ids.tolist():
            length = len(storage[i])
            if length == 0:
                raise RuntimeError(
                    f"buffer {i} of the ensemble is empty: extend it (rb[{i}].extend(...)) "
                    "or give it no weight in p"
                )
            index, info = self._samplers[i].sample(length, batch_size // n)
            rows.append(index)
            infos.append(info)
        if len({row.shape for row in rows}) > 1:
            sizes = [row.numel() for row in rows]
            raise RuntimeError(
                f"the sampled buffers returned {sizes} items: the rows of an ensemble sample "
                "must be the same size (use strict_length=True / drop_last=True)"
            )
        index = TensorDict({"buffer_ids": buffer_ids, "index": torch.stack(rows)}, [n])
        return index, infos

    def update_priority(self, index: TensorDictBase, priority: torch.Tensor) -> None:
        """Set priorities at an ensemble ``index`` (this sampler's, or a sample's
        ``"index"``) in each buffer's sampler; ``priority`` has one entry per item."""
        for i, local, value in _per_buffer(index, lambda _: priority):
            self._samplers[i].update_priority(local, value)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, int):
            return self._samplers[index]
        p = None if self.p is None else self.p[_select(range(len(self._samplers)), index)]
        return SamplerEnsemble(
            *_select(self._samplers, index),
            p=p,
            sample_from_all=self.sample_from_all,
            num_buffer_sampled=self._num_buffer_sampled,
        )

    def __len__(self) -> int:
        return len(self._samplers)

    def empty(self) -> None:
        for sampler in self._samplers:
            sampler.empty()

    def state_dict(self) -> dict[str, Any]:
        return {str(i): sampler.state_dict() for i, sampler in enumerate(self._samplers)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, sampler in enumerate(self._samplers):
            sampler.load_state_dict(state_dict[str(i)])

    def __repr__(self) -> str:
        names = ", ".join(type(s).__name__ for s in self._samplers)
        p = None if self.p is None else [round(x, 4) for x in self.p.tolist()]
        return (
            f"SamplerEnsemble({names}, p={p}, sample_from_all={self.sample_from_all}, "
            f"num_buffer_sampled={self.num_buffer_sampled})"
        )


class WriterEnsemble(Writer):
    """The writers of several replay buffers. Writing through it raises ``RuntimeError``:
    extend the buffers themselves (``rb[i].extend(data)``).

    Args:
        *writers: the writers, one per buffer.
    """

    def __init__(self, *writers: Writer) -> None:
        self._writers = _members("WriterEnsemble", writers, Writer)
        self._cursor = 0

    @property
    def _write_count(self) -> int:
        """Items written into all the buffers."""
        return sum(getattr(writer, "_write_count", 0) for writer in self._writers)

    def next_indices(self, n: int, max_size: int) -> torch.Tensor:
        raise RuntimeError(_WRITE_ERROR)

    def _select(self, data: Any, n: int, max_size: int) -> tuple[torch.Tensor, Any, torch.Tensor]:
        raise RuntimeError(_WRITE_ERROR)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, int):
            return self._writers[index]
        return WriterEnsemble(*_select(self._writers, index))

    def __len__(self) -> int:
        return len(self._writers)

    def empty(self) -> None:
        for writer in self._writers:
            writer.empty()

    def state_dict(self) -> dict[str, Any]:
        return {str(i): writer.state_dict() for i, writer in enumerate(self._writers)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, writer in enumerate(self._writers):
            writer.load_state_dict(state_dict[str(i)])

    def __repr__(self) -> str:
        return f"WriterEnsemble({', '.join(type(w).__name__ for w in self._writers)})"


def _per_buffer(
    index: TensorDictBase, priority_of: Callable[[int], Any]
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """``(buffer_id, local index, priority)`` for each buffer named in an ensemble ``index``
    (a sample's, ``[num_buffer_sampled, n, *item_dims]``, whose entries over an item's own
    dims repeat; or a :class:`SamplerEnsemble` index, one buffer id per row), with
    ``priority_of(buffer_id)`` shaped like the sample or flat."""
    buffer_ids, local = index["buffer_ids"], index["index"]
    if buffer_ids.ndim < local.ndim:
        buffer_ids = buffer_ids.reshape(-1, *([1] * (local.ndim - 1))).expand_as(local)
    lead = min(2, buffer_ids.ndim)
    rows = buffer_ids.shape[:lead].numel()
    buffer_ids = buffer_ids.reshape(rows, -1)[:, 0]
    local = local.reshape(rows, -1)[:, 0]
    for i in buffer_ids.unique().tolist():
        mask = buffer_ids == i
        priority = torch.as_tensor(priority_of(i))
        if priority.ndim == 0:
            yield i, local[mask], priority
            continue
        if priority.ndim >= lead and priority.shape[:lead].numel() == rows:
            priority = priority.reshape(rows, *priority.shape[lead:])
        else:
            priority = priority.reshape(rows, -1)
        yield i, local[mask], priority[mask]


def _stack_samples(samples: list[Any]) -> Any:
    """The default ``collate_fn``: stack the buffers' samples along a new first dim."""
    try:
        return torch.stack(samples)
    except RuntimeError as err:
        raise RuntimeError(
            "ReplayBufferEnsemble cannot stack the samples of its buffers (different keys or "
            "shapes): give the buffers transforms that make their samples alike, or pass "
            f"collate_fn=. ({err})"
        ) from err


def _annotate(data: Any, buffer_id: int, index: torch.Tensor, info: dict[str, Any]) -> Any:
    """Write the ensemble index and the sampler's per-item info into a TensorDict sample
    (other samples are returned as they are)."""
    if not isinstance(data, TensorDictBase):
        return data
    shape = data.batch_size

    def expand(value: torch.Tensor) -> torch.Tensor:
        return value.reshape(shape[0], *([1] * (len(shape) - 1))).expand(shape)

    ids = torch.full_like(index, buffer_id)
    data.set("index", TensorDict({"buffer_ids": expand(ids), "index": expand(index)}, shape))
    weight = info.get("_weight")
    if weight is not None:
        data.set("_weight", expand(weight))
    for key, flag in info.items():  # e.g. a SliceSampler's slice ends
        if key != "_weight":
            stored = data.get(key, None)
            data.set(key, flag if stored is None else stored | flag)
    return data


def _stack_info(index: TensorDict, infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``info`` dict of an ensemble sample: the index, and the entries every row's
    sampler gave, stacked."""
    rows = index["index"]
    ids = index["buffer_ids"].reshape(-1, *([1] * (rows.ndim - 1))).expand_as(rows)
    info: dict[str, Any] = {"index": TensorDict({"buffer_ids": ids, "index": rows}, rows.shape)}
    for key in set.intersection(*(set(row) for row in infos)):
        values = [row[key] for row in infos]
        if all(isinstance(v, torch.Tensor) and v.shape == values[0].shape for v in values):
            info[key] = torch.stack(values)
    return info


class ReplayBufferEnsemble(ReplayBuffer):
    """Several replay buffers sampled as one.

    ``sample(batch_size)`` draws ``num_buffer_sampled`` buffers (default: as many as there
    are buffers) with weights ``p`` (uniformly when None), or each buffer once with
    ``sample_from_all=True``, takes ``batch_size // num_buffer_sampled`` items from each
    with that buffer's sampler, transform and collate_fn, and stacks the sub-batches with
    ``collate_fn`` (default ``torch.stack``) into a ``[num_buffer_sampled, batch_size //
    num_buffer_sampled]`` sample, then applies ``transform``. TensorDict samples carry
    ``("index", "buffer_ids")`` and ``("index", "index")`` (and ``"_weight"`` from
    prioritized buffers); ``sample(return_info=True)`` also returns them in a dict.

    The ensemble is read-only: ``rb[i]`` is buffer ``i`` (extend it); ``rb[1:]`` or
    ``rb[[0, 2]]`` is an ensemble of those buffers. ``len(rb)`` counts every buffer's items.
    Priorities go back to the buffers they came from with :meth:`update_priority` /
    :meth:`update_tensordict_priority`.

    Args:
        *rbs: the replay buffers; or, instead, ``storages``, ``samplers`` and ``writers``.
        storages: a :class:`StorageEnsemble` (its ``transforms`` become the buffers').
        samplers: a :class:`SamplerEnsemble` (it holds ``p`` and the other sampling options).
        writers: a :class:`WriterEnsemble`.
        transform: applied to every stacked sample (after the buffers' own transforms).
        batch_size: default number of items per :meth:`sample`.
        collate_fn: stacks the list of the buffers' samples (default ``torch.stack``).
        collate_fns: with ``storages``/``samplers``/``writers``, each buffer's collate_fn.
        p: relative weights of the buffers; exclusive with ``sample_from_all``.
        sample_from_all: sample each buffer once per batch.
        num_buffer_sampled: sub-batches per batch (ignored with ``sample_from_all``).
        generator: the generator the ensemble's and its buffers' samplers draw from (see
            :class:`ReplayBuffer`).
        shared: torchrl's option; only its default is supported.
        **kwargs: other :class:`ReplayBuffer` options (``prefetch``, ``pin_memory``).
    """

    def __init__(
        self,
        *rbs: ReplayBuffer,
        storages: StorageEnsemble | None = None,
        samplers: SamplerEnsemble | None = None,
        writers: WriterEnsemble | None = None,
        transform: Callable[[Any], Any] | None = None,
        batch_size: int | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        collate_fns: Sequence[Callable | None] | None = None,
        p: Sequence[float] | torch.Tensor | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
        generator: torch.Generator | None = None,
        shared: bool = False,
        **kwargs: Any,
    ) -> None:
        if shared:
            raise NotImplementedError("ReplayBufferEnsemble: shared=True is not supported")
        if rbs:
            rbs = _members("ReplayBufferEnsemble", rbs, ReplayBuffer)
            if storages is not None or samplers is not None or writers is not None:
                raise TypeError("ReplayBufferEnsemble: pass buffers or components, not both")
            if collate_fns is not None:
                raise TypeError(
                    "ReplayBufferEnsemble: collate_fns goes with storages/samplers/writers; "
                    "buffers keep their own collate_fn"
                )
            storages = StorageEnsemble(
                *(rb.storage for rb in rbs), transforms=[rb._transform for rb in rbs]
            )
            samplers = SamplerEnsemble(
                *(rb.sampler for rb in rbs),
                p=p,
                sample_from_all=sample_from_all,
                num_buffer_sampled=num_buffer_sampled,
            )
            writers = WriterEnsemble(*(rb.writer for rb in rbs))
        else:
            rbs = self._buffers_from(storages, samplers, writers, collate_fns)
            if p is not None or sample_from_all or num_buffer_sampled is not None:
                raise TypeError(
                    "ReplayBufferEnsemble: with samplers=, set p, sample_from_all and "
                    "num_buffer_sampled on the SamplerEnsemble"
                )
        self._rbs: tuple[ReplayBuffer, ...] = rbs
        super().__init__(
            storage=storages,
            sampler=samplers,
            writer=writers,
            batch_size=batch_size,
            collate_fn=collate_fn,
            transform=transform,
            generator=generator,
            **kwargs,
        )

    @staticmethod
    def _buffers_from(
        storages: StorageEnsemble | None,
        samplers: SamplerEnsemble | None,
        writers: WriterEnsemble | None,
        collate_fns: Sequence[Callable | None] | None,
    ) -> tuple[ReplayBuffer, ...]:
        """The buffers made of the components' members, one each."""
        parts = {"storages": storages, "samplers": samplers, "writers": writers}
        missing = [name for name, part in parts.items() if part is None]
        if missing:
            raise TypeError(
                f"ReplayBufferEnsemble needs replay buffers, or storages, samplers and "
                f"writers (missing: {', '.join(missing)})"
            )
        n = len(storages._storages)
        if len(samplers) != n or len(writers) != n or (collate_fns and len(collate_fns) != n):
            raise ValueError(
                "ReplayBufferEnsemble: storages, samplers, writers (and collate_fns) must have "
                "one entry per buffer"
            )
        collate_fns = collate_fns or [None] * n
        return tuple(
            ReplayBuffer(
                storage=storages[i],
                sampler=samplers[i],
                writer=writers[i],
                transform=storages._transforms[i],
                collate_fn=collate_fns[i],
            )
            for i in range(n)
        )

    # ------------------------------------------------------------------ access
    def __getitem__(self, index: Any) -> Any:
        """``rb[i]``: buffer ``i``; ``rb[i, items]``: ``rb[i][items]``; a slice, list or
        tensor of buffer positions: an ensemble of those buffers."""
        if isinstance(index, tuple):
            buffer, *items = index
            if not items:
                return self[buffer]
            return self[buffer][items[0] if len(items) == 1 else tuple(items)]
        if isinstance(index, int):
            return self._rbs[index]
        sampler: SamplerEnsemble = self._sampler
        positions = _select(range(len(self._rbs)), index)
        return ReplayBufferEnsemble(
            *(self._rbs[i] for i in positions),
            transform=self._transform,
            batch_size=self._batch_size,
            collate_fn=self._collate_fn,
            p=None if sampler.p is None else sampler.p[positions],
            sample_from_all=sampler.sample_from_all,
            num_buffer_sampled=None if sampler.sample_from_all else sampler._num_buffer_sampled,
        )

    def __repr__(self) -> str:
        buffers = ", ".join(repr(rb) for rb in self._rbs)
        return (
            f"ReplayBufferEnsemble(buffers=[{buffers}], sampler={self._sampler!r}, "
            f"batch_size={self._batch_size})"
        )

    # ------------------------------------------------------------------ writing
    def extend(self, data: Any) -> torch.Tensor:
        """Not supported: extend one of the buffers (``rb[i].extend(data)``)."""
        raise RuntimeError(_WRITE_ERROR)

    def add(self, data: Any) -> int:
        """Not supported: add to one of the buffers (``rb[i].add(data)``)."""
        raise RuntimeError(_WRITE_ERROR)

    # ------------------------------------------------------------------ sampling
    def _sample(self, batch_size: int) -> tuple[Any, dict[str, Any]]:
        with self._buffer_locks():
            index, infos = self._sampler.sample(self._storage, batch_size)
            items = self._storage.get(index)
        samples = [
            _annotate(self._rbs[i]._as_sample(data), i, row, info)
            for (i, data), row, info in zip(items, index["index"], infos, strict=True)
        ]
        data = (self._collate_fn or _stack_samples)(samples)
        if self._transform is not None:
            data = self._transform(data)
        return data, _stack_info(index, infos)

    def _buffer_locks(self) -> contextlib.ExitStack:
        """Hold every buffer's lock: no write lands between drawing indices and reading."""
        stack = contextlib.ExitStack()
        for rb in self._rbs:
            stack.enter_context(rb._lock)
        return stack

    # ------------------------------------------------------------------ priorities
    def update_priority(
        self, index: TensorDictBase, priority: torch.Tensor | float | None = None
    ) -> None:
        """Set priorities in the buffers the items came from. ``index`` is a sample's
        ``"index"`` (``"buffer_ids"`` and ``"index"`` entries); a sampled TensorDict alone
        is read as :meth:`update_tensordict_priority` reads it."""
        if isinstance(index, TensorDictBase) and priority is None:
            self.update_tensordict_priority(index)
            return
        if not isinstance(index, TensorDictBase) or "buffer_ids" not in index.keys():
            raise TypeError(
                "ReplayBufferEnsemble.update_priority needs a sample's 'index' TensorDict "
                "(with 'buffer_ids' and 'index')"
            )
        if priority is None:
            raise TypeError("update_priority(index, priority) needs a priority")
        for i, local, value in _per_buffer(index, lambda _: priority):
            self._rbs[i].update_priority(local, value)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Update priorities from a sampled (loss-annotated) TensorDict: each buffer reads
        its ``priority_key`` (default ``"td_error"``) for the items it gave."""
        for i, local, value in _per_buffer(data.get("index"), partial(self._priority, data)):
            self._rbs[i].update_priority(local, value)

    def _priority(self, data: TensorDictBase, buffer_id: int) -> torch.Tensor:
        """Buffer ``buffer_id``'s ``priority_key`` entry of ``data``."""
        key = getattr(self._rbs[buffer_id], "priority_key", "td_error")
        priority = data.get(key, None)
        if priority is None:
            raise KeyError(
                f"update_tensordict_priority: key {key!r} (buffer {buffer_id}'s priority_key) "
                f"is not in the tensordict (keys: {list(data.keys())})"
            )
        return priority.detach()

    # ------------------------------------------------------------------ state
    def empty(self) -> None:
        """Empty every buffer."""
        self._drop_prefetched()
        for rb in self._rbs:
            rb.empty()

    def state_dict(self) -> dict[str, Any]:
        """Every buffer's :meth:`ReplayBuffer.state_dict`, under ``"0"``, ``"1"``, ..."""
        self._drop_prefetched()
        return self._with_rng_state({str(i): rb.state_dict() for i, rb in enumerate(self._rbs)})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self._drop_prefetched()
        for i, rb in enumerate(self._rbs):
            rb.load_state_dict(state_dict[str(i)])
        self._load_rng_state(state_dict)

    def dumps(self, path: str | os.PathLike) -> None:
        """Save every buffer into ``path/<i>`` (see :meth:`ReplayBuffer.dumps`)."""
        self._drop_prefetched()
        for i, rb in enumerate(self._rbs):
            rb.dumps(Path(path) / str(i))
        self._dump_rng(Path(path))

    def loads(self, path: str | os.PathLike) -> None:
        """Load what :meth:`dumps` wrote."""
        self._drop_prefetched()
        for i, rb in enumerate(self._rbs):
            rb.loads(Path(path) / str(i))
        self._load_rng(Path(path))
