"""Storages: where a replay buffer keeps its items.

A storage is a fixed-capacity array of items addressed by integer index. Writers decide
*where* to write (:meth:`Storage.set`), samplers decide *what* to read (:meth:`Storage.get`).

- :class:`ListStorage` keeps arbitrary Python objects in a list.
- :class:`LazyTensorStorage` keeps a TensorDict (or a tensor) of leading size ``max_size`` in
  memory, allocated on the first write from the first data's shapes and dtypes.
- :class:`LazyMemmapStorage` does the same on disk through tensordict's memory-mapped
  tensors; the data survives the process and can be reopened (see its docstring).

Tensor storages take torchrl's ``ndim`` (default 1): how many leading (batch) dims of the
data written index items. With ``ndim=1`` a ``[num_envs, T]`` batch is ``num_envs`` items,
each a ``[T]`` trajectory; with ``ndim=2`` it is ``num_envs * T`` transitions, and
``max_size`` counts transitions. The items sit along one leading dim either way.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import MemoryMappedTensor, TensorDict, TensorDictBase

from rl_trainers import fast
from rl_trainers.envs.utils import flatten_batch
from rl_trainers.fast.packed import PackedColumns

__all__ = ["LazyMemmapStorage", "LazyTensorStorage", "ListStorage", "Storage", "TensorStorage"]

_META_FILE = "rl_trainers_storage.json"


def _check_max_size(max_size: int) -> int:
    if not isinstance(max_size, int) or isinstance(max_size, bool) or max_size < 1:
        raise ValueError(f"max_size must be a positive int, got {max_size!r}")
    return max_size


def _check_ndim(ndim: int) -> int:
    if not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < 1:
        raise ValueError(
            f"ndim must be an int >= 1 (the leading dims indexing items), got {ndim!r}"
        )
    return ndim


def merge_item_dims(
    data: TensorDictBase | torch.Tensor, ndim: int, caller: str
) -> TensorDictBase | torch.Tensor:
    """``data`` as the items a storage of ``ndim`` holds: its first ``ndim`` (batch) dims
    merged into one leading dim, the others kept as each item's shape.

    Raises:
        ValueError: for data with fewer than ``ndim`` batch dims (``caller`` names what was
            called with it, e.g. ``"extend()"``).
    """
    lead = data.batch_size if isinstance(data, TensorDictBase) else data.shape
    if len(lead) < ndim:
        dims = "1 batch dim" if ndim == 1 else f"{ndim} batch dims"
        raise ValueError(
            f"this storage has ndim={ndim}: {caller} needs data with at least {dims}, "
            f"got {list(lead)}"
        )
    if ndim == 1:
        return data
    if isinstance(data, TensorDictBase):
        return flatten_batch(data, ndim)
    return data.flatten(0, ndim - 1)


def item_positions(index: Any, n: int, what: str) -> tuple[torch.Tensor, bool]:
    """Positions ``0 .. n - 1`` selected by ``index`` (an int, slice, index list or tensor;
    negative ones count from the end) and whether it named a single item.

    Raises:
        IndexError: for a position outside the ``n`` items of the ``what``.
    """
    if isinstance(index, slice):
        positions = torch.arange(n)[index]
    else:
        positions = torch.as_tensor(index, dtype=torch.long)
    single = positions.dim() == 0
    positions = positions.reshape(-1)
    positions = torch.where(positions < 0, positions + n, positions)
    if bool(((positions < 0) | (positions >= n)).any()):
        raise IndexError(f"index {index!r} is out of range for a {what} of {n} items")
    return positions, single


class Storage:
    """Base class: a fixed-capacity container of items addressed by integer index.

    Args:
        max_size: the capacity.
    """

    def __init__(self, max_size: int) -> None:
        self.max_size = _check_max_size(max_size)
        self._len = 0
        # Index following the last written item: lets a reopened storage resume writing.
        self._last_cursor = 0

    def __len__(self) -> int:
        return self._len

    def _note_write(self, index: torch.Tensor) -> None:
        if index.numel() == 0:
            return
        self._len = max(self._len, int(index.max()) + 1)
        self._last_cursor = (int(index[-1]) + 1) % self.max_size

    def set(self, index: torch.Tensor, data: Any) -> None:
        """Write ``data`` (leading dim ``len(index)``) at ``index``."""
        raise NotImplementedError

    def get(self, index: torch.Tensor) -> Any:
        """Read the items at ``index``."""
        raise NotImplementedError

    def __getitem__(self, index: int | slice | Sequence[int] | torch.Tensor) -> Any:
        """``storage[i]`` / ``storage[a:b]``: :meth:`get` with ints, slices or index lists."""
        positions, single = item_positions(index, len(self), "storage")
        data = self.get(positions)
        return data[0] if single else data

    def empty(self) -> None:
        """Forget every item (the capacity and allocated memory are kept)."""
        self._len = 0
        self._last_cursor = 0

    def state_dict(self) -> dict[str, Any]:
        """Contents and counters, enough for :meth:`load_state_dict` to restore exactly."""
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        raise NotImplementedError

    def dumps(self, path: str | os.PathLike) -> None:
        """Save the storage into directory ``path``."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), path / "storage.pt")

    def loads(self, path: str | os.PathLike) -> None:
        """Load what :meth:`dumps` saved in directory ``path``."""
        self.load_state_dict(torch.load(Path(path) / "storage.pt", weights_only=False))


class ListStorage(Storage):
    """A storage of arbitrary Python objects (one list slot per item): it has no ``ndim``,
    the items are the objects given (``extend`` of a TensorDict or tensor: one per entry of
    the leading dim).

    Args:
        max_size: the capacity.
    """

    def __init__(self, max_size: int) -> None:
        super().__init__(max_size)
        self._items: list[Any] = []

    def set(self, index: torch.Tensor, data: Any) -> None:
        index = torch.as_tensor(index).reshape(-1)
        if len(data) != index.numel():
            raise ValueError(f"got {len(data)} items for {index.numel()} indices")
        for i, item in zip(index.tolist(), data):
            if i >= self.max_size:
                raise IndexError(f"index {i} out of range for max_size={self.max_size}")
            if i < len(self._items):
                self._items[i] = item
            elif i == len(self._items):
                self._items.append(item)
            else:
                self._items.extend([None] * (i - len(self._items)) + [item])
        self._note_write(index)

    def get(self, index: torch.Tensor) -> list[Any]:
        index = torch.as_tensor(index).reshape(-1)
        return [self._items[i] for i in index.tolist()]

    def empty(self) -> None:
        super().empty()
        self._items = []

    def state_dict(self) -> dict[str, Any]:
        return {"items": list(self._items), "len": self._len, "last_cursor": self._last_cursor}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._items = list(state_dict["items"])
        self._len = int(state_dict["len"])
        self._last_cursor = int(state_dict["last_cursor"])


def _as_storable(data: Any) -> Any:
    if isinstance(data, (TensorDictBase, torch.Tensor)):
        return data
    raise TypeError(
        f"tensor storages hold TensorDicts or tensors, got {type(data).__name__}; "
        "use ListStorage for other objects"
    )


def _layout_of(td: TensorDictBase) -> list[tuple[str, Any]] | None:
    """Nested ``[(key, tensor or sub-layout)]`` mirror of a TensorDict's leaves; None unless
    every leaf is a plain tensor in plain nested TensorDicts (non-tensor data, e.g.
    strings, go through TensorDict's own indexing)."""
    layout = []
    for key, value in td.items():
        if type(value) is TensorDict:
            sub = _layout_of(value)
            if sub is None:
                return None
            layout.append((key, sub))
        elif type(value) is torch.Tensor:
            layout.append((key, value))
        else:
            return None
    return layout


def _pair_leaves(layout: list[tuple[str, Any]], data: TensorDict, pairs: list) -> bool:
    """Append ``(storage column, data leaf)`` for every leaf of ``layout``; False when
    ``data`` lacks one, has another, nests differently or holds a leaf of another item
    shape."""
    entries = data._tensordict
    if len(entries) != len(layout):
        return False
    for key, column in layout:
        value = entries.get(key)
        if isinstance(column, list):
            if type(value) is not TensorDict or not _pair_leaves(column, value, pairs):
                return False
        elif type(value) is not torch.Tensor or value.shape[1:] != column.shape[1:]:
            return False
        else:
            pairs.append((column, value))
    return True


def _gather(layout: list[tuple[str, Any]], index: torch.Tensor) -> dict[str, Any]:
    return {
        key: _gather(value, index) if isinstance(value, list) else value.index_select(0, index)
        for key, value in layout
    }


class TensorStorage(Storage):
    """A storage over a TensorDict or tensor whose leading dimension is ``max_size``.

    Args:
        storage: the data (a TensorDict/tensor whose first ``ndim`` dims index the items),
            or None; given data counts as stored (``len`` = capacity), as a dataset does in
            torchrl.
        max_size: the capacity in items (read from ``storage`` when given).
        device: where the storage lives.
        ndim: how many leading (batch) dims of the data written index items (torchrl's
            argument): 1 (default) stores a ``[B, T]`` batch as ``B`` items of shape ``[T]``,
            2 as ``B * T`` items. Items are kept along one leading dim either way, so
            ``len`` and ``max_size`` count items.
        compilable: torchrl's option (code ``torch.compile`` can trace), accepted at either
            value without effect: the storage has one eager code path and stores the same
            items either way.
    """

    def __init__(
        self,
        storage: TensorDictBase | torch.Tensor | None = None,
        max_size: int | None = None,
        device: str | torch.device = "cpu",
        *,
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        del compilable  # torchrl's option: one eager code path, the same contents either way
        self.ndim = _check_ndim(ndim)
        if storage is not None:
            storage = merge_item_dims(storage, ndim, f"{type(self).__name__}(storage=...)")
        if max_size is None:
            if storage is None:
                raise ValueError("TensorStorage needs max_size or a pre-allocated storage")
            max_size = int(storage.shape[0])
        super().__init__(max_size)
        self.device = torch.device(device)
        self._storage: TensorDictBase | torch.Tensor | None = storage
        if storage is not None:  # a dataset given whole: every item is there (torchrl)
            self._len = min(int(storage.shape[0]), self.max_size)
        self._layout: tuple[Any, list] | None = None
        self._leaf_keys: tuple[Any, set] | None = None
        #: the packed columns the storage's leaves view (set when it allocates them so)
        self._packed: PackedColumns | None = None

    @property
    def initialized(self) -> bool:
        """Whether the underlying memory has been allocated."""
        return self._storage is not None

    def _allocate(self, data: TensorDictBase | torch.Tensor) -> TensorDictBase | torch.Tensor:
        shape = (self.max_size, *data.shape[1:])
        if isinstance(data, torch.Tensor):
            return torch.empty(shape, dtype=data.dtype, device=self.device)
        if data.shape[0] and fast.PACKED_STORAGE and PackedColumns.fits(data[0]):
            packed = PackedColumns(data[0], self.max_size, self.device)
            self._packed = packed
            return data[0].named_apply(
                lambda key, _: packed.columns[key],
                nested_keys=True,
                batch_size=shape,
                device=self.device,
            )
        if data.shape[0]:
            try:
                # uninitialised leaves: pages are only mapped (counted in RSS) once written,
                # so a 1M-capacity buffer costs memory for what it holds, not its capacity
                return data[0].apply(
                    lambda t: torch.empty(
                        (self.max_size, *t.shape), dtype=t.dtype, device=self.device
                    ),
                    batch_size=shape,
                    device=self.device,
                )
            except (TypeError, RuntimeError, AttributeError):  # e.g. non-tensor leaves
                pass
        td = data[0].clone() if data.shape[0] else data.clone()
        return td.to(self.device).expand(shape).clone().contiguous()

    def set(self, index: torch.Tensor, data: TensorDictBase | torch.Tensor) -> None:
        data = _as_storable(data)
        index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
        if data.shape[0] != index.numel():
            raise ValueError(f"got {data.shape[0]} items for {index.numel()} indices")
        if self._storage is None:
            self._storage = self._allocate(data)
        if index.numel() == 1 or bool((index[1:] - index[:-1] == 1).all()):
            start = int(index[0])
            where: slice | torch.Tensor = slice(start, start + index.numel())
        else:
            where = index
        if isinstance(data, TensorDictBase):
            data = data.to(self.device) if data.device != self.device else data
            stored_shape = self._storage.shape[1:]
            if data.batch_size[1:] != stored_shape:
                raise ValueError(
                    f"data of batch size {tuple(data.batch_size)} does not fit a storage of "
                    f"item shape {tuple(stored_shape)}"
                )
            if not self._scatter(data, where):
                self._add_new_leaves(data)
                self._storage[where] = data
        else:
            self._storage[where] = data
        self._note_write(index)

    def _scatter(self, data: TensorDictBase, where: slice | torch.Tensor) -> bool:
        """Write ``data`` leaf by leaf, or each packed dtype's rows at once (several times
        faster than TensorDict's indexed assignment for one-step batches); False, writing
        nothing, unless both are plain TensorDicts with the same leaves of the same shapes."""
        storage = self._storage
        if type(storage) is not TensorDict or type(data) is not TensorDict:
            return False
        if self._packed is not None:
            return self._packed.write(where, data)
        if self._layout is None or self._layout[0] is not storage:
            self._layout = (storage, _layout_of(storage))
        pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        if self._layout[1] is None or not _pair_leaves(self._layout[1], data, pairs):
            return False
        for column, value in pairs:
            column[where] = value
        return True

    def _add_new_leaves(self, data: TensorDictBase) -> bool:
        """Add the leaves ``data`` has and the storage lacks, e.g. a policy's outputs that
        appear once it takes over from random actions. Rows written before read zeros there;
        the rest stays unallocated memory until written, like the first leaves.

        Returns whether ``data`` already had exactly the storage's leaves.
        """
        storage = self._storage
        if self._leaf_keys is None or self._leaf_keys[0] is not storage:
            self._leaf_keys = (storage, set(storage.keys(True, True)))
        stored = self._leaf_keys[1]
        data_keys = list(data.keys(True, True))
        new_keys = [key for key in data_keys if key not in stored]
        if not new_keys:
            return len(data_keys) == len(stored)
        locked = storage.is_locked
        storage.unlock_()
        if self._packed is not None:
            self._repack(data, new_keys)
        else:
            for key in new_keys:
                leaf = data.get(key)
                column = torch.empty(
                    (self.max_size, *leaf.shape[1:]), dtype=leaf.dtype, device=self.device
                )
                column[: self._len].zero_()
                storage.set(key, column)
        self._stored_new_leaves()
        if locked:
            storage.lock_()
        self._leaf_keys = None
        self._layout = None
        return False

    def _repack(self, data: TensorDictBase, new_keys: list) -> None:
        """Pack the storage's leaves and ``data``'s ``new_keys`` anew: the items held are
        copied, the new leaves read zeros there."""
        template = self._storage[0].clone()
        for key in new_keys:
            template.set(key, data.get(key)[0])
        old, n = self._packed, self._len
        self._packed = packed = PackedColumns(template, self.max_size, self.device)
        for key, column in packed.columns.items():
            if key in old.columns:
                column[:n] = old.columns[key][:n]
            else:
                column[:n] = 0
            self._storage.set(key, column)

    def _stored_new_leaves(self) -> None:
        """Called after :meth:`_add_new_leaves` added columns (subclasses persist them)."""

    def get(self, index: torch.Tensor) -> TensorDictBase | torch.Tensor:
        storage = self._storage
        if storage is None:
            raise RuntimeError("cannot read from an empty storage: extend the buffer first")
        if isinstance(storage, torch.Tensor):
            return storage[index]
        if (
            isinstance(index, torch.Tensor)
            and index.dim() == 1
            and index.dtype == torch.long
            and type(storage) is TensorDict
        ):
            # Fast path: gather every leaf with index_select (each packed dtype's rows at
            # once) and build the result without TensorDict's per-key validation (about
            # twice as fast as ``storage[index]``).
            if self._packed is not None:
                gathered = self._packed.gather(index)
            else:
                if self._layout is None or self._layout[0] is not storage:
                    self._layout = (storage, _layout_of(storage))
                if self._layout[1] is None:
                    return storage[index]
                gathered = _gather(self._layout[1], index)
            return TensorDict._new_unsafe(
                gathered,
                batch_size=torch.Size([index.numel(), *storage.batch_size[1:]]),
                device=storage.device,
            )
        return storage[index]

    def state_dict(self) -> dict[str, Any]:
        """The items held, as copies: ``torch.save`` of a slice writes the whole tensor it
        views, so a 1M-capacity buffer holding 600 items would otherwise save 1M rows."""
        data = self._storage
        if isinstance(data, TensorDictBase):
            data = data[: self._len].clone()
            data = {"__tensordict__": data.to_dict(), "batch_size": list(data.batch_size)}
        elif data is not None:
            data = data[: self._len].clone()
        return {
            "storage": data,
            "len": self._len,
            "last_cursor": self._last_cursor,
            "max_size": self.max_size,
            "ndim": self.ndim,
        }

    def _check_layout(self, saved: dict[str, Any], source: str) -> None:
        """Raises unless ``saved`` (a state_dict or memmap metadata) describes a storage of
        this ``max_size`` and ``ndim`` (1 when absent: saved before ``ndim`` existed)."""
        for name in ("max_size", "ndim"):
            value = int(saved.get(name, 1))
            if value != getattr(self, name):
                raise ValueError(
                    f"{source} a storage of {name}={value}, this storage has "
                    f"{name}={getattr(self, name)}"
                )

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._check_layout(state_dict, "state_dict was saved from")
        data = state_dict["storage"]
        length = int(state_dict["len"])
        if data is not None:
            if isinstance(data, dict):
                batch_size = data.get("batch_size", [length])  # items may have their own dims
                data = TensorDict(data["__tensordict__"], batch_size=batch_size)
            if length:
                if self._storage is None:
                    self._storage = self._allocate(data)
                elif isinstance(data, TensorDictBase):
                    self._add_new_leaves(data)
                self._storage[:length] = data
        self._len = length
        self._last_cursor = int(state_dict["last_cursor"])


class LazyTensorStorage(TensorStorage):
    """In-memory storage allocated on the first write from the first data's shapes and dtypes.

    Args:
        max_size: the capacity in items (leading-dimension entries).
        device: where the storage lives.
        ndim: how many leading dims of the data written index items (see
            :class:`TensorStorage`; ``ndim=2`` stores a ``[num_envs, T]`` batch as
            transitions).
        compilable: torchrl's option, accepted without effect (see :class:`TensorStorage`).

    Example:
        >>> storage = LazyTensorStorage(1000)
        >>> rb = TensorDictReplayBuffer(storage=storage, batch_size=32)
        >>> rb.extend(collector_batch)  # [4, 200]: 4 trajectories  # doctest: +SKIP
        >>> rb.sample().shape  # doctest: +SKIP
        torch.Size([32, 200])
        >>> rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1000, ndim=2), batch_size=32)
        >>> rb.extend(collector_batch)  # 800 transitions  # doctest: +SKIP
        >>> rb.sample().shape  # doctest: +SKIP
        torch.Size([32])
    """

    def __init__(
        self,
        max_size: int,
        *,
        device: str | torch.device = "cpu",
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        super().__init__(
            storage=None, max_size=max_size, device=device, ndim=ndim, compilable=compilable
        )


class LazyMemmapStorage(TensorStorage):
    """On-disk storage of memory-mapped tensors, allocated on the first write.

    The tensors live in ``scratch_dir`` (a fresh temporary directory when None) in tensordict's
    memmap layout, next to a small JSON file with the fill level and write cursor, which is
    refreshed on every write. A storage created later over the same ``scratch_dir`` with
    ``existsok=True`` reopens that data (``len(storage)`` and the cursor included), so a new
    :class:`ReplayBuffer` over it sees the old items. With ``existsok=False`` an existing
    storage in ``scratch_dir`` is an error rather than silently overwritten. The metadata
    records ``max_size`` and ``ndim``: reopening with other values raises ``ValueError``.

    Args:
        max_size: the capacity in items.
        scratch_dir: directory holding the memory-mapped files (a path or a
            ``tempfile.TemporaryDirectory``).
        existsok: reopen data already in ``scratch_dir`` instead of raising.
        device: must be "cpu" (memory maps live in host memory).
        ndim: how many leading dims of the data written index items (see
            :class:`TensorStorage`).
        compilable: torchrl's option, accepted without effect (see :class:`TensorStorage`).
    """

    def __init__(
        self,
        max_size: int,
        *,
        scratch_dir: str | os.PathLike | tempfile.TemporaryDirectory | None = None,
        existsok: bool = False,
        device: str | torch.device = "cpu",
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        if torch.device(device).type != "cpu":
            raise ValueError(f"LazyMemmapStorage lives on cpu, got device={device!r}")
        super().__init__(
            storage=None, max_size=max_size, device="cpu", ndim=ndim, compilable=compilable
        )
        self._owns_dir = scratch_dir is None
        if isinstance(scratch_dir, tempfile.TemporaryDirectory):
            scratch_dir = scratch_dir.name  # as torchrl's tutorials pass it
        self.scratch_dir = Path(scratch_dir or tempfile.mkdtemp(prefix="rl_trainers_memmap_"))
        self.existsok = existsok
        if (self.scratch_dir / _META_FILE).exists():
            if not existsok:
                raise FileExistsError(
                    f"{self.scratch_dir} already holds a LazyMemmapStorage; pass existsok=True "
                    "to reopen it or choose another scratch_dir"
                )
            self._reopen()

    def _reopen(self) -> None:
        meta = json.loads((self.scratch_dir / _META_FILE).read_text())
        self._check_layout(meta, f"{self.scratch_dir} holds")
        if meta["kind"] == "tensordict":
            self._storage = TensorDict.load_memmap(self.scratch_dir / "data")
        else:
            self._storage = MemoryMappedTensor.from_filename(
                str(self.scratch_dir / "data.memmap"),
                dtype=getattr(torch, meta["dtype"]),
                shape=torch.Size(meta["shape"]),
            )
        self._len = int(meta["len"])
        self._last_cursor = int(meta["last_cursor"])

    def _write_meta(self) -> None:
        kind = "tensordict" if isinstance(self._storage, TensorDictBase) else "tensor"
        meta = {
            "kind": kind,
            "max_size": self.max_size,
            "ndim": self.ndim,
            "len": self._len,
            "last_cursor": self._last_cursor,
        }
        if kind == "tensor":
            meta["dtype"] = str(self._storage.dtype).removeprefix("torch.")
            meta["shape"] = list(self._storage.shape)
        tmp = self.scratch_dir / (_META_FILE + ".tmp")
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, self.scratch_dir / _META_FILE)

    def _allocate(self, data: TensorDictBase | torch.Tensor) -> TensorDictBase | torch.Tensor:
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        shape = (self.max_size, *data.shape[1:])
        if isinstance(data, torch.Tensor):
            return MemoryMappedTensor.empty(
                shape, dtype=data.dtype, filename=str(self.scratch_dir / "data.memmap")
            )
        template = data[:1].to("cpu").expand(shape)
        return template.memmap_like(prefix=self.scratch_dir / "data", existsok=True)

    def set(self, index: torch.Tensor, data: TensorDictBase | torch.Tensor) -> None:
        super().set(index, data)
        self._write_meta()

    def _stored_new_leaves(self) -> None:
        # memory-map the new columns next to the others and rewrite tensordict's metadata,
        # so a storage reopened over scratch_dir sees them (mapped leaves are kept as they are)
        self._storage.memmap_(prefix=self.scratch_dir / "data", existsok=True)

    def empty(self) -> None:
        super().empty()
        if self._storage is not None:
            self._write_meta()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        if self._storage is not None:
            self._write_meta()

    def dumps(self, path: str | os.PathLike) -> None:
        """Copy the memory-mapped files and metadata into directory ``path``.

        ``LazyMemmapStorage(max_size, scratch_dir=path, existsok=True)`` reopens the copy.
        """
        path = Path(path)
        if path.resolve() == self.scratch_dir.resolve():
            return
        if self._storage is None:
            path.mkdir(parents=True, exist_ok=True)
            return
        shutil.copytree(self.scratch_dir, path, dirs_exist_ok=True)

    def loads(self, path: str | os.PathLike) -> None:
        """Copy into this storage the data saved by :meth:`dumps` in ``path``."""
        other = LazyMemmapStorage(self.max_size, scratch_dir=path, existsok=True, ndim=self.ndim)
        self.load_state_dict(other.state_dict())

    def __del__(self) -> None:
        if getattr(self, "_owns_dir", False):
            shutil.rmtree(getattr(self, "scratch_dir", ""), ignore_errors=True)
