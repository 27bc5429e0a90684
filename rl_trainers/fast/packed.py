"""A replay buffer's TensorDict storage packed as one table per dtype (``PACKED_STORAGE``).

Reading a batch of transitions from a 1M-row storage is a gather of random rows: with one
tensor per leaf (15 for a MuJoCo frame as the collector writes it) that is 15 gathers, each
touching other memory. Packed, the leaves of one dtype are columns of one
``[max_size, width]`` table: one gather per dtype, the rows of a transition side by side.
The storage's TensorDict holds the columns as its leaves (views), so everything that writes
or slices a leaf works on them unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

__all__ = ["PackedColumns"]


class PackedColumns:
    """A TensorDict storage's leaves as column views of one ``[max_size, width]`` tensor
    per dtype, so that reading a batch of items is one row gather per dtype instead of one
    per leaf (the rows of a transition sit together in memory).

    ``columns`` maps each leaf's key to its view (``[max_size, *item_shape]``), which the
    storage's TensorDict holds as its leaves: writes and slices go through them as through
    separate tensors. :meth:`gather` reads items into a plain nested dict of contiguous
    leaves. Built from one item (``template``); every leaf a plain tensor.
    """

    def __init__(self, template: TensorDictBase, max_size: int, device: torch.device) -> None:
        leaves: dict[torch.dtype, list[tuple[Any, torch.Size]]] = {}
        for key, leaf in template.items(True, True):
            leaves.setdefault(leaf.dtype, []).append((key, leaf.shape))
        self.groups: list[torch.Tensor] = []
        self.widths: list[list[int]] = []
        self.columns: dict[Any, torch.Tensor] = {}
        #: key -> (group, part, item shape), to rebuild a gathered leaf
        self._where: dict[Any, tuple[int, int, torch.Size]] = {}
        for dtype, entries in leaves.items():
            widths = [shape.numel() for _, shape in entries]
            group = torch.empty((max_size, sum(widths)), dtype=dtype, device=device)
            start = 0
            for part, ((key, shape), width) in enumerate(zip(entries, widths)):
                column = group[:, start : start + width]
                self.columns[key] = column.unflatten(1, shape) if shape else column[:, 0]
                self._where[key] = (len(self.groups), part, shape)
                start += width
            self.groups.append(group)
            self.widths.append(widths)
        self._template = _key_tree(template)

    @staticmethod
    def fits(template: TensorDictBase) -> bool:
        """Whether ``template`` (one item) is a plain TensorDict of plain tensors, nested
        TensorDicts of its batch size."""
        if type(template) is not TensorDict:
            return False
        return all(
            type(value) is torch.Tensor
            or (
                isinstance(value, TensorDictBase)
                and value.batch_size == template.batch_size
                and PackedColumns.fits(value)
            )
            for value in template._tensordict.values()
        )

    def write(self, where: slice | torch.Tensor, data: TensorDict) -> bool:
        """Write ``data``'s items at ``where``, each dtype's leaves as one block of rows;
        False, writing nothing, unless ``data`` has exactly these leaves, of these item
        shapes, in plain TensorDicts."""
        rows: list[list[Any]] = [[None] * len(widths) for widths in self.widths]
        if not self._collect(self._template, data, rows):
            return False
        for group, parts in zip(self.groups, rows):
            group[where] = torch.cat(parts, 1) if len(parts) > 1 else parts[0]
        return True

    def _collect(self, tree: list, data: TensorDict, rows: list[list[Any]]) -> bool:
        entries = data._tensordict
        if len(entries) != len(tree):
            return False
        for key, full_key, sub in tree:
            value = entries.get(key)
            if sub is not None:
                if type(value) is not TensorDict or not self._collect(sub, value, rows):
                    return False
                continue
            group, part, shape = self._where[full_key]
            if type(value) is not torch.Tensor or value.shape[1:] != shape:
                return False
            if value.dim() != 2:
                value = value.reshape(value.shape[0], -1)
            dtype = self.groups[group].dtype
            rows[group][part] = value if value.dtype == dtype else value.to(dtype)
        return True

    def gather(self, index: torch.Tensor) -> dict[str, Any]:
        """The items at ``index`` (a 1-D int64 tensor), as a nested dict of new tensors."""
        n = index.numel()
        parts = [
            torch.split_with_sizes_copy(group.index_select(0, index), widths, 1)
            if len(widths) > 1
            else (group.index_select(0, index),)
            for group, widths in zip(self.groups, self.widths)
        ]

        def build(tree: list) -> dict[str, Any]:
            out = {}
            for key, full_key, sub in tree:
                if sub is not None:
                    out[key] = build(sub)
                    continue
                group, part, shape = self._where[full_key]
                leaf = parts[group][part]
                out[key] = leaf if len(shape) == 1 else leaf.view(n, *shape)
            return out

        return build(self._template)


def _key_tree(td: TensorDictBase, prefix: tuple = ()) -> list:
    """``[(key, full key, sub-tree or None)]``: the nesting of ``td``'s entries (the full
    key of a top-level leaf is its name, as ``items(True, True)`` gives it)."""
    tree = []
    for key, value in td._tensordict.items():
        full = (*prefix, key)
        if isinstance(value, TensorDictBase):
            tree.append((key, full, _key_tree(value, full)))
        else:
            tree.append((key, full if prefix else key, None))
    return tree
