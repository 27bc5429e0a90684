"""Writers: where a replay buffer puts new items."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["RoundRobinWriter", "Writer"]


class Writer:
    """Base writer: chooses storage indices for new items."""

    def __init__(self) -> None:
        self._cursor = 0
        self._write_count = 0  # items written since the buffer was created or emptied

    def next_indices(self, n: int, max_size: int) -> torch.Tensor:
        """The ``n`` storage indices the next ``n`` items go to, and advance."""
        raise NotImplementedError

    def empty(self) -> None:
        self._cursor = 0
        self._write_count = 0

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self._cursor, "write_count": self._write_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._cursor = int(state_dict["cursor"])
        self._write_count = int(state_dict.get("write_count", 0))


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
