"""Vectorised sum and min segment trees used by :class:`PrioritizedSampler`.

Both trees live in one flat numpy array of ``2 * capacity`` entries (``capacity`` rounded up
to a power of two). Node ``i`` has children ``2 * i`` and ``2 * i + 1``; the root is node 1
and leaf ``k`` is node ``capacity + k``. Updates and prefix-sum searches walk the tree level
by level for a whole batch of indices at once, so their cost is ``O(depth)`` numpy calls
rather than ``O(batch * depth)`` Python steps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MinSegmentTree", "SumSegmentTree"]


class _SegmentTree:
    _neutral: float = 0.0

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"segment tree size must be >= 1, got {size}")
        self.size = int(size)
        capacity = 1
        while capacity < self.size:
            capacity *= 2
        self.capacity = capacity
        self.depth = capacity.bit_length() - 1
        self._tree = np.full(2 * capacity, self._neutral, dtype=np.float64)

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __setitem__(self, index: np.ndarray | int, value: np.ndarray | float) -> None:
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        if index.size == 0:
            return
        if index.min() < 0 or index.max() >= self.size:
            raise IndexError(f"segment tree index out of range [0, {self.size}): {index}")
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), index.shape)
        nodes = index + self.capacity
        self._tree[nodes] = value
        tree = self._tree
        # Duplicate nodes are harmless: each write recomputes the same value from children
        # that are already up to date, so no (slow, sorting) np.unique is needed.
        combine = self._combine
        for _ in range(self.depth):
            nodes = nodes >> 1
            left = nodes << 1
            tree[nodes] = combine(tree[left], tree[left + 1])

    def __getitem__(self, index: np.ndarray | int) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        return self._tree[index + self.capacity]

    def reduce(self) -> float:
        """Reduction (sum or min) over every leaf."""
        return float(self._tree[1])

    def clear(self) -> None:
        """Set every node back to the neutral element."""
        self._tree.fill(self._neutral)

    def leaves(self) -> np.ndarray:
        """A copy of the ``size`` leaf values."""
        return self._tree[self.capacity : self.capacity + self.size].copy()

    def set_leaves(self, values: np.ndarray) -> None:
        """Overwrite all leaves and rebuild every internal node (``O(capacity)``)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.size,):
            raise ValueError(f"expected {self.size} leaf values, got shape {values.shape}")
        tree = self._tree
        tree[self.capacity : self.capacity + self.size] = values
        tree[self.capacity + self.size :] = self._neutral
        level = self.capacity
        while level > 1:
            parents = np.arange(level // 2, level)
            tree[parents] = self._combine(tree[2 * parents], tree[2 * parents + 1])
            level //= 2


class SumSegmentTree(_SegmentTree):
    """Segment tree whose internal nodes hold the sum of their children."""

    _neutral = 0.0

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left + right

    def find_prefixsum_index(self, prefix: np.ndarray) -> np.ndarray:
        """For each ``prefix`` value, the leaf ``k`` with ``sum(leaves[:k]) <= prefix < sum(leaves[:k+1])``.

        Args:
            prefix: values in ``[0, total)``.

        Returns:
            int64 leaf indices, same shape as ``prefix``.
        """
        prefix = np.array(prefix, dtype=np.float64, copy=True).reshape(-1)
        nodes = np.ones(prefix.shape, dtype=np.int64)
        tree = self._tree
        for _ in range(self.depth):
            left = 2 * nodes
            left_sum = tree[left]
            go_right = prefix >= left_sum
            prefix -= left_sum * go_right
            nodes = left + go_right
        leaves = nodes - self.capacity
        # Floating point round-off may land on an empty (zero-priority) padding leaf.
        np.minimum(leaves, self.size - 1, out=leaves)
        return leaves


class MinSegmentTree(_SegmentTree):
    """Segment tree whose internal nodes hold the minimum of their children."""

    _neutral = float("inf")

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.minimum(left, right)
