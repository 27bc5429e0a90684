"""Replay buffers: a storage, a sampler and a writer behind one ``extend``/``sample`` API."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, is_tensorclass
from torch.utils._pytree import tree_flatten, tree_unflatten

from rl_trainers.data.replay_buffers.samplers import PrioritizedSampler, RandomSampler, Sampler
from rl_trainers.data.replay_buffers.storages import (
    ListStorage,
    Storage,
    TensorStorage,
    item_positions,
    merge_item_dims,
)
from rl_trainers.data.replay_buffers.writers import RoundRobinWriter, Writer

__all__ = [
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
]

_RESERVED_KEYS = ("index", "_weight")


class ReplayBuffer:
    """A replay buffer of TensorDicts, tensors or (with :class:`ListStorage`) any objects.

    :meth:`extend` writes items along the first ``storage.ndim`` batch dims of the data, as
    torchrl does: with a default storage (``ndim=1``) a collector batch shaped
    ``[num_envs, T]`` is ``num_envs`` items, each a ``[T]`` trajectory, and samples are
    ``[batch_size, T]``; with ``LazyTensorStorage(N, ndim=2)`` it is ``num_envs * T``
    transitions and samples are ``[batch_size]``. To store transitions in a default storage,
    extend with ``data.reshape(-1)``. ``len(rb)`` counts items; :meth:`add` writes one item.

    Args:
        storage: where items live (default: ``ListStorage(1000)``).
        sampler: which items are drawn (default: :class:`RandomSampler`).
        writer: where new items go (default: :class:`RoundRobinWriter`).
        batch_size: default number of items per :meth:`sample`.
        collate_fn: turns what the storage returns into a batch (default: ``torch.stack`` for
            lists, identity for tensor storages).
        prefetch: number of batches sampled ahead in a background thread (needs
            ``batch_size``); None or 0 disables prefetching. Prefetched batches are drawn
            with the buffer's own generator, in the order they are asked for and from the
            contents at that moment (a write or priority update first waits for them), so
            seeded runs sample the same items and the main thread's random stream is left
            alone.
        transform: a callable applied to every sampled batch.
        pin_memory: torchrl's option, accepted and without effect (CPU samples).
        generator: the ``torch.Generator`` the sampler draws from (see :meth:`set_rng`).
            None: with ``prefetch``, a generator seeded from torch's global one when the
            buffer is built (``torch.manual_seed`` before building makes it
            deterministic); without, torch's global generator, as before. Its state is
            part of :meth:`state_dict`, so a resumed buffer continues the same draws.
        shared: torchrl's option, at its default only: the buffer is read and written by
            the process that built it (collectors' workers send their batches back), so
            ``shared=True`` raises a ``ValueError`` saying so.
        compilable: torchrl's option (a buffer ``torch.compile`` can trace), accepted at
            either value without effect: one eager code path, the same samples.

    Example:
        >>> rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100_000), batch_size=256)
        >>> rb.extend(collector_batch.reshape(-1))  # [num_envs, T] -> transitions
        >>> batch = rb.sample()  # TensorDict [256] with "index"
    """

    def __init__(
        self,
        *,
        storage: Storage | None = None,
        sampler: Sampler | None = None,
        writer: Writer | None = None,
        batch_size: int | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        prefetch: int | None = None,
        transform: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        generator: torch.Generator | None = None,
        shared: bool = False,
        compilable: bool = False,
    ) -> None:
        del pin_memory  # torchrl's option: samples stay in CPU memory, pinned or not
        del compilable  # torchrl's option: one eager code path, the same samples either way
        _check_shared(type(self).__name__, shared)
        self._storage = storage if storage is not None else ListStorage(1000)
        self._sampler = sampler if sampler is not None else RandomSampler()
        self._writer = writer if writer is not None else RoundRobinWriter()
        set_storage = getattr(self._sampler, "set_storage", None)
        if set_storage is not None:  # samplers reading stored entries (SliceSampler)
            set_storage(self._storage)
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size}")
        self._batch_size = batch_size
        self._collate_fn = collate_fn
        self._transform = transform
        self._prefetch = int(prefetch or 0)
        if self._prefetch and batch_size is None:
            raise ValueError("prefetch needs a default batch_size")
        self._lock = threading.RLock()
        # turns what a tensor storage holds back into the type written (tensorclass, pytree)
        self._decode: Callable[[Any], Any] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._futures: deque[Future] = deque()
        if generator is None and self._prefetch:
            # the background thread must not draw from the global generator the main
            # thread uses (policy, exploration): which thread draws first would decide
            seed = int(torch.randint(2**62, ()))
            generator = torch.Generator().manual_seed(seed)
        self._rng: torch.Generator | None = None
        if generator is not None:
            self.set_rng(generator)
        # A reopened storage (e.g. LazyMemmapStorage over an existing directory) already holds
        # items: continue writing after them.
        if len(self._storage):
            self._writer._cursor = self._storage._last_cursor
            self._sampler.extend(torch.arange(len(self._storage)))

    # ------------------------------------------------------------------ properties
    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def sampler(self) -> Sampler:
        return self._sampler

    @property
    def writer(self) -> Writer:
        return self._writer

    @property
    def batch_size(self) -> int | None:
        return self._batch_size

    def __len__(self) -> int:
        return len(self._storage)

    def set_rng(self, generator: torch.Generator) -> None:
        """Make the sampler draw from ``generator`` (torchrl's method)."""
        self._settle_prefetched()
        self._rng = generator
        self._sampler._rng = generator

    @property
    def write_count(self) -> int:
        """Items written so far through :meth:`add` and :meth:`extend` (reset by
        :meth:`empty`); unlike ``len(rb)`` it keeps growing once the storage is full."""
        return getattr(self._writer, "_write_count", 0)

    def __getitem__(self, index: int | slice | Sequence[int] | torch.Tensor) -> Any:
        """The items stored at ``index`` (storage positions ``0 .. len(self) - 1``; negative
        ones count from the end), through the buffer's transform as samples are: a read, no
        sampling, so samplers and priorities are untouched. ``rb[3]`` is one item,
        ``rb[:10]`` or ``rb[[0, 5]]`` a batch of them."""
        positions, single = item_positions(index, len(self), "buffer")
        with self._lock:
            data = self._storage.get(positions)
        if isinstance(data, list):
            data = data[0] if single else self._collate(data)
            if single and isinstance(data, TensorDictBase) and self._transform is not None:
                data = data.clone(False)  # a transform must not edit the stored item
        else:
            if self._decode is not None:
                data = self._decode(data)
            if single:
                data = data[0]
        return data if self._transform is None else self._transform(data)

    def __iter__(self) -> Iterator[Any]:
        """Yield :meth:`sample` batches until the sampler runs out (torchrl's iteration).

        With :class:`SamplerWithoutReplacement` that is the rest of the current epoch (a whole
        epoch when it starts fresh); other samplers never run out, so iteration is endless.
        """
        if self._batch_size is None:
            raise RuntimeError(
                "Cannot iterate over the replay buffer. Batch_size was not specified during "
                "construction of the replay buffer."
            )
        if self._sampler.ran_out:
            self._sampler.ran_out = False
        while not self._sampler.ran_out:
            yield self.sample()

    def append_transform(self, transform: Callable[[Any], Any]) -> ReplayBuffer:
        """Apply ``transform`` to what the buffer hands out (samples and ``rb[index]``), after
        the transforms already set."""
        previous = self._transform
        self._transform = transform if previous is None else _Chain(previous, transform)
        return self

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(storage={type(self._storage).__name__}"
            f"(max_size={self._storage.max_size}), sampler={type(self._sampler).__name__}, "
            f"len={len(self)}, batch_size={self._batch_size})"
        )

    # ------------------------------------------------------------------ writing
    @property
    def _item_dims(self) -> int:
        """How many leading dims of extended data index items: the storage's ``ndim`` (1 for
        storages without one, e.g. :class:`ListStorage`)."""
        return getattr(self._storage, "ndim", 1)

    def _as_items(self, data: Any, item_dims: int) -> Any:
        """``data`` as a batch of items along its leading dim: a TensorDict's or tensor's
        first ``item_dims`` dims merged into one (see
        :func:`~rl_trainers.data.replay_buffers.storages.merge_item_dims`), anything else
        as a list of items."""
        if isinstance(data, TensorDictBase) and any(k in data.keys() for k in _RESERVED_KEYS):
            data = data.exclude(*_RESERVED_KEYS)
        if isinstance(data, (TensorDictBase, torch.Tensor)):
            return merge_item_dims(data, item_dims, "extend()")
        return list(data)

    def _priority_of(self, data: Any) -> torch.Tensor | None:
        return None

    def _encode(self, data: Any, single: bool) -> Any:
        """A tensorclass or a pytree of tensors (dicts, lists, tuples) as a TensorDict that a
        tensor storage can hold; samples are turned back into the written type."""
        if isinstance(data, (TensorDictBase, torch.Tensor)) or not isinstance(
            self._storage, TensorStorage
        ):
            return data
        if is_tensorclass(data):
            self._decode = _TensorclassDecoder(type(data))
            td = data._tensordict
            return td.unsqueeze(0) if single else td
        leaves, spec = tree_flatten(data)
        if not leaves or not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
            return data  # the storage names what it accepts
        if single:
            leaves = [leaf.unsqueeze(0) for leaf in leaves]
        # the batch dims: the leading dims indexing items, as far as every leaf has them
        batch_dims = min(1 if single else self._item_dims, *(leaf.ndim for leaf in leaves))
        batch_size = leaves[0].shape[:batch_dims]
        td = TensorDict({str(i): leaf for i, leaf in enumerate(leaves)}, batch_size)
        self._decode = _PytreeDecoder(spec, len(leaves))
        return td

    def extend(self, data: Any) -> torch.Tensor:
        """Write a batch of items; returns their storage indices (int64 tensor).

        Tensor storages take TensorDicts, tensors, tensorclasses and pytrees (dicts,
        lists, tuples) of tensors; their first ``storage.ndim`` dims index the items (one
        dim for :class:`ListStorage`), the others are each item's shape.

        Raises:
            ValueError: for data with fewer batch dims than the storage's ``ndim``.
        """
        return self._write(self._as_items(self._encode(data, single=False), self._item_dims))

    def _write(self, data: Any) -> torch.Tensor:
        """Write the items along ``data``'s leading dim; returns their storage indices (-1
        for items the writer dropped, e.g. :class:`TensorDictMaxValueWriter`)."""
        n = len(data) if not isinstance(data, (TensorDictBase, torch.Tensor)) else data.shape[0]
        self._settle_prefetched()
        with self._lock:
            index, data, out = self._writer._select(data, n, self._storage.max_size)
            if index.numel():
                self._storage.set(index, data)
                self._sampler.extend(index, self._priority_of(data))
        return out

    def add(self, data: Any) -> int:
        """Write one item; returns its storage index.

        The item keeps its shape, whatever the storage's ``ndim``: ``add`` of a ``[T]``
        trajectory stores one item whose samples are ``[batch_size, T]``.
        """
        encoded = self._encode(data, single=True)
        if encoded is not data:
            batch = encoded
        elif isinstance(data, (TensorDictBase, torch.Tensor)):
            batch = data.unsqueeze(0)
        else:
            batch = [data]
        return int(self._write(self._as_items(batch, item_dims=1))[0])

    # ------------------------------------------------------------------ sampling
    def _sample(self, batch_size: int) -> tuple[Any, dict[str, Any]]:
        with self._lock:
            index, info = self._sampler.sample(len(self._storage), batch_size)
            data = self._storage.get(index)
        info["index"] = index
        return self._as_sample(data), info

    def _as_sample(self, data: Any) -> Any:
        """What the storage returned for a batch of indices, as a sample: collated, decoded
        and transformed (:class:`ReplayBufferEnsemble` reads its buffers through it)."""
        data = self._collate(data)
        if self._decode is not None:
            data = self._decode(data)
        if self._transform is not None:
            data = self._transform(data)
        return data

    def _collate(self, data: Any) -> Any:
        if self._collate_fn is not None:
            return self._collate_fn(data)
        if isinstance(data, list) and data:
            if isinstance(data[0], torch.Tensor):
                return torch.stack(data)
            if isinstance(data[0], TensorDictBase):
                return _stack_items(data)
        return data

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        """Draw a batch.

        Args:
            batch_size: number of items (defaults to the buffer's ``batch_size``).
            return_info: also return the dict of ``"index"`` (and ``"_weight"``).
        """
        if batch_size is None:
            batch_size = self._batch_size
            if batch_size is None:
                raise RuntimeError(
                    "sample() needs a batch_size: pass one or set it in the constructor"
                )
            if self._prefetch:
                data, info = self._prefetched()
                return (data, info) if return_info else data
        elif batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._settle_prefetched()  # drawn after the batches asked for before
        data, info = self._sample(batch_size)
        return (data, info) if return_info else data

    def _prefetched(self) -> tuple[Any, dict[str, Any]]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1)
        while len(self._futures) < self._prefetch + 1:
            self._futures.append(self._executor.submit(self._sample, self._batch_size))
        try:
            return self._futures.popleft().result()
        except BaseException:
            # the batches queued behind it were drawn from the same state: draw afresh
            self._drop_prefetched()
            raise

    def _drop_prefetched(self) -> None:
        """Wait for the batches being prefetched and discard them (errors included)."""
        self._settle_prefetched()
        self._futures.clear()

    def _settle_prefetched(self) -> None:
        """Wait until the batches being prefetched are drawn (they stay queued, an error
        raised when one is handed out), so a write, a priority update or another draw
        cannot land before them."""
        if self._futures:
            wait(tuple(self._futures))

    # ------------------------------------------------------------------ priorities
    def update_priority(self, index: torch.Tensor | int, priority: torch.Tensor | float) -> None:
        """Set the sampling priority of the items at ``index`` (prioritized samplers only).

        ``index`` may be a sample's ``"index"`` over items with their own dims (``[B, T]``,
        one value per item repeated over ``T``): it names the ``B`` items, and a ``[B, T]``
        priority is reduced per item by the sampler's ``reduction``.
        """
        index = torch.as_tensor(index)
        if index.ndim > 1:
            index = index.reshape(index.shape[0], -1)[:, 0]
        self._settle_prefetched()
        with self._lock:
            self._sampler.update_priority(index, torch.as_tensor(priority))

    # ------------------------------------------------------------------ state
    def empty(self) -> None:
        """Remove every item (capacity and configuration are kept)."""
        self._drop_prefetched()
        with self._lock:
            self._writer.empty()  # first: a writer refusing writes keeps the data
            self._storage.empty()
            self._sampler.empty()

    def state_dict(self) -> dict[str, Any]:
        """Contents, write cursor, sampler state and the generator's state (``"rng"``,
        with a generator of its own), for an exact resume.

        Batches prefetched and not yet handed out are dropped: the buffer continues, as a
        resumed one does, with fresh draws from the saved generator state.
        """
        self._drop_prefetched()
        with self._lock:
            state = {
                "storage": self._storage.state_dict(),
                "sampler": self._sampler.state_dict(),
                "writer": self._writer.state_dict(),
            }
        return self._with_rng_state(state)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self._drop_prefetched()
        with self._lock:
            self._storage.load_state_dict(state_dict["storage"])
            self._sampler.load_state_dict(state_dict["sampler"])
            self._writer.load_state_dict(state_dict["writer"])
        self._load_rng_state(state_dict)

    def _with_rng_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` with the generator's state under ``"rng"`` (none without one: the
        global generator is the checkpoint's ``"rng"``)."""
        if self._rng is not None:
            state["rng"] = self._rng.get_state()
        return state

    def _load_rng_state(self, state: dict[str, Any]) -> None:
        """Restore a saved generator state; a buffer without a generator gets one, so it
        continues the saved draws."""
        rng_state = state.get("rng")
        if rng_state is None:
            return
        if self._rng is None:
            self.set_rng(torch.Generator())
        self._rng.set_state(rng_state)

    def _dump_rng(self, path: Path) -> None:
        """:meth:`dumps`' part for the generator: ``path/rng.pt`` (only with one)."""
        rng = self._with_rng_state({})
        if rng:
            torch.save(rng, path / "rng.pt")

    def _load_rng(self, path: Path) -> None:
        """:meth:`loads`' part for the generator."""
        if (path / "rng.pt").exists():
            self._load_rng_state(torch.load(path / "rng.pt"))

    def dumps(self, path: str | os.PathLike) -> None:
        """Save storage, sampler and writer into directory ``path`` (see :meth:`loads`)."""
        self._drop_prefetched()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._storage.dumps(path / "storage")
            torch.save(self._sampler.state_dict(), path / "sampler.pt")
            (path / "writer.json").write_text(json.dumps(self._writer.state_dict()))
        self._dump_rng(path)

    def loads(self, path: str | os.PathLike) -> None:
        """Load what :meth:`dumps` wrote into directory ``path``."""
        self._drop_prefetched()
        path = Path(path)
        with self._lock:
            self._storage.loads(path / "storage")
            self._sampler.load_state_dict(torch.load(path / "sampler.pt", weights_only=False))
            self._writer.load_state_dict(json.loads((path / "writer.json").read_text()))
        self._load_rng(path)

    def __del__(self) -> None:
        executor = getattr(self, "_executor", None)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


class TensorDictReplayBuffer(ReplayBuffer):
    """A replay buffer of TensorDicts whose samples carry their ``"index"`` (and ``"_weight"``).

    With a :class:`PrioritizedSampler`, new items whose TensorDict holds ``priority_key`` get
    that priority, and :meth:`update_tensordict_priority` reads ``priority_key`` and
    ``"index"`` from a sampled (and loss-annotated) batch.

    Args:
        priority_key: the entry holding priorities (default ``"td_error"``).
        **kwargs: as :class:`ReplayBuffer`.
    """

    def __init__(self, *, priority_key: str = "td_error", **kwargs: Any) -> None:
        self.priority_key = priority_key
        super().__init__(**kwargs)

    def _priority_of(self, data: Any) -> torch.Tensor | None:
        if isinstance(data, TensorDictBase):
            return data.get(self.priority_key, None)
        return None

    def _encode(self, data: Any, single: bool) -> Any:
        if isinstance(data, dict):  # a dict of tensors is stored as the TensorDict it reads as
            td = TensorDict.from_dict(data, batch_size=[])
            lead = next(iter(td.values(True, True))).shape[: self._item_dims] if not single else ()
            td.batch_size = lead
            return td.unsqueeze(0) if single else td
        return super()._encode(data, single)

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        data, info = super().sample(batch_size, return_info=True)
        # a tensorclass sample carries index and weight in its TensorDict, as in torchrl
        td = data._tensordict if is_tensorclass(data) else data
        if not isinstance(td, TensorDictBase):
            raise TypeError(f"TensorDictReplayBuffer stores TensorDicts, got {type(data).__name__}")
        n = td.shape[0]
        index = info["index"]
        if td.batch_dims > 1:  # items with their own batch dims (``add`` of a trajectory)
            index = index.reshape(n, *([1] * (td.batch_dims - 1))).expand(td.shape)
        td.set("index", index)
        weight = info.get("_weight")
        if weight is not None:
            td.set("_weight", weight.reshape(n, *([1] * (td.batch_dims - 1))).expand(td.shape))
        for key, flag in info.items():  # e.g. SliceSampler's slice ends: truncated, done
            if key not in ("index", "_weight"):
                stored = td.get(key, None)
                td.set(key, flag if stored is None else stored | flag)
        return (data, info) if return_info else data

    def update_priority(
        self,
        index: torch.Tensor | int | TensorDictBase,
        priority: torch.Tensor | float | None = None,
    ) -> None:
        """Set the sampling priority of the items at ``index``; a sampled TensorDict alone
        (``rb.update_priority(sample)``, as torchrl's off-policy scripts call it) is read
        as :meth:`update_tensordict_priority` reads it."""
        if isinstance(index, TensorDictBase) and priority is None:
            self.update_tensordict_priority(index)
            return
        if priority is None:
            raise TypeError("update_priority(index, priority) needs a priority")
        super().update_priority(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Update priorities from ``data[priority_key]`` at ``data["index"]``."""
        priority = data.get(self.priority_key, None)
        if priority is None:
            raise KeyError(
                f"update_tensordict_priority: key {self.priority_key!r} is not in the tensordict "
                f"(keys: {list(data.keys())})"
            )
        self.update_priority(data.get("index"), priority.detach())


def _storage_and_prioritized_sampler(
    storage: Storage | None, alpha: float, beta: float, eps: float, reduction: str
) -> tuple[Storage, PrioritizedSampler]:
    """The storage (default ``ListStorage(1000)``) and a :class:`PrioritizedSampler` sized
    to it, as the prioritized buffers build them."""
    storage = storage if storage is not None else ListStorage(1000)
    return storage, PrioritizedSampler(storage.max_size, alpha, beta, eps, reduction=reduction)


class PrioritizedReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` with a :class:`PrioritizedSampler` sized to its storage.

    ``PrioritizedReplayBuffer(alpha=a, beta=b, storage=s)`` is
    ``ReplayBuffer(storage=s, sampler=PrioritizedSampler(s.max_size, a, b, eps))``, as in
    torchrl. Samples drawn with ``return_info=True`` carry ``"index"`` and the importance
    weights ``"_weight"``; set new priorities with :meth:`update_priority`.

    Args:
        alpha: priority exponent (0 = uniform).
        beta: importance-sampling exponent (1 = full correction).
        eps: added to priorities so no item has probability zero.
        storage: where items live (default: ``ListStorage(1000)``).
        batch_size, collate_fn, prefetch, transform, generator, shared, compilable: as
            :class:`ReplayBuffer`.
        reduction: how a priority with several entries per item is reduced (see
            :class:`PrioritizedSampler`).

    Example:
        >>> rb = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=ListStorage(100))
        >>> rb.extend(torch.arange(10))
        >>> data, info = rb.sample(4, return_info=True)
        >>> rb.update_priority(info["index"], torch.rand(4))
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        storage: Storage | None = None,
        batch_size: int | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        prefetch: int | None = None,
        transform: Callable[[Any], Any] | None = None,
        reduction: str = "max",
        pin_memory: bool = False,
        generator: torch.Generator | None = None,
        shared: bool = False,
        compilable: bool = False,
    ) -> None:
        _check_shared(type(self).__name__, shared)
        storage, sampler = _storage_and_prioritized_sampler(storage, alpha, beta, eps, reduction)
        super().__init__(
            storage=storage,
            sampler=sampler,
            batch_size=batch_size,
            collate_fn=collate_fn,
            prefetch=prefetch,
            transform=transform,
            generator=generator,
        )


class TensorDictPrioritizedReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` with a :class:`PrioritizedSampler` sized to its
    storage, torchrl's prioritized buffer of TensorDicts.

    Samples carry ``"index"`` and ``"_weight"``; new items whose TensorDict holds
    ``priority_key`` get that priority (others the largest seen so far), and
    :meth:`update_tensordict_priority` (what :class:`~rl_trainers.hooks.ReplayBufferTrainer`
    registers at ``"post_loss"``) reads ``priority_key`` and ``"index"`` from a sampled,
    loss-annotated batch.

    Args:
        alpha: priority exponent (0 = uniform).
        beta: importance-sampling exponent (1 = full correction).
        priority_key: the entry holding priorities (default ``"td_error"``).
        eps: added to priorities so no item has probability zero.
        storage: where items live (default: ``ListStorage(1000)``).
        batch_size, collate_fn, prefetch, transform, generator, shared, compilable: as
            :class:`ReplayBuffer`.
        reduction: how a priority with several entries per item is reduced: ``"max"``,
            ``"min"``, ``"mean"`` or ``"median"``.

    Example:
        >>> rb = TensorDictPrioritizedReplayBuffer(
        ...     alpha=0.7, beta=0.5, storage=LazyTensorStorage(100_000), batch_size=256
        ... )
        >>> rb.extend(collector_batch.reshape(-1))  # transitions
        >>> sample = rb.sample()  # [256], with "index" and "_weight"
        >>> sample.set("td_error", loss_td_error)
        >>> rb.update_tensordict_priority(sample)
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        priority_key: str = "td_error",
        eps: float = 1e-8,
        storage: Storage | None = None,
        batch_size: int | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        prefetch: int | None = None,
        transform: Callable[[Any], Any] | None = None,
        reduction: str = "max",
        pin_memory: bool = False,
        generator: torch.Generator | None = None,
        shared: bool = False,
        compilable: bool = False,
    ) -> None:
        _check_shared(type(self).__name__, shared)
        storage, sampler = _storage_and_prioritized_sampler(storage, alpha, beta, eps, reduction)
        super().__init__(
            priority_key=priority_key,
            storage=storage,
            sampler=sampler,
            batch_size=batch_size,
            collate_fn=collate_fn,
            prefetch=prefetch,
            transform=transform,
            generator=generator,
        )


def _check_shared(cls_name: str, shared: bool) -> None:
    """torchrl's ``shared=True`` puts the buffer in shared memory for writers in other
    processes; here every buffer lives in the process that built it."""
    if shared:
        raise ValueError(
            f"{cls_name}(shared=True) is not supported: rl_trainers' replay buffers are "
            "written and sampled in the process that built them (collector workers send "
            "their batches back to it). Drop shared=True and extend the buffer with each "
            "collected batch, or give it to SyncDataCollector(replay_buffer=...)."
        )


def _stack_items(items: list[TensorDictBase]) -> TensorDictBase:
    """Stack TensorDict items; entries some items lack read zeros there (as in tensor
    storages), e.g. a policy's outputs next to the random warm-up steps that had none."""
    try:
        return torch.stack(items)
    except (KeyError, RuntimeError):
        keys = [set(item.keys(True, True)) for item in items]
        if all(k == keys[0] for k in keys):
            raise
    templates = {}
    for item, item_keys in zip(items, keys):
        for key in item_keys:
            templates.setdefault(key, item.get(key))
    filled = []
    for item, item_keys in zip(items, keys):
        missing = [key for key in templates if key not in item_keys]
        if missing:
            item = item.clone(False)
            for key in missing:
                item.set(key, torch.zeros_like(templates[key]))
        filled.append(item)
    return torch.stack(filled)


class _Chain:
    """``second(first(data))``: transforms appended one after the other."""

    def __init__(self, first: Callable[[Any], Any], second: Callable[[Any], Any]) -> None:
        self.first, self.second = first, second

    def __call__(self, data: Any) -> Any:
        return self.second(self.first(data))


class _TensorclassDecoder:
    """Stored TensorDict -> the tensorclass that was written."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.fields = {f.name for f in dataclasses.fields(cls)}

    def __call__(self, td: TensorDictBase) -> Any:
        if "index" in td.keys() and "index" not in self.fields:
            td = td.exclude("index")  # stored by TensorDictRoundRobinWriter, not a field
        return self.cls.from_tensordict(td)


class _PytreeDecoder:
    """Stored TensorDict of leaves ``"0"``, ``"1"``, ... -> the pytree that was written."""

    def __init__(self, spec: Any, n: int) -> None:
        self.spec, self.n = spec, n

    def __call__(self, td: TensorDictBase) -> Any:
        return tree_unflatten([td.get(str(i)) for i in range(self.n)], self.spec)
