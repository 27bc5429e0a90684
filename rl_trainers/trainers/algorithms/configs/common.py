"""The one helper every config node uses: a typed field with a one-line description."""

from __future__ import annotations

import copy
from dataclasses import MISSING, field, fields, is_dataclass
from typing import Any


def config_field(default: Any = MISSING, help: str = "") -> Any:  # noqa: A002
    """A dataclass field carrying its one-line description in ``metadata["help"]``.

    Mutable defaults (lists, dicts) are copied per instance.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Node:
        ...     lr: float = config_field(3e-4, "learning rate")
    """
    metadata = {"help": help}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    if is_dataclass(default) and not isinstance(default, type):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def field_help(node: type) -> dict[str, str]:
    """The one-line description of each field of a config dataclass."""
    return {f.name: f.metadata.get("help", "") for f in fields(node) if not f.name.startswith("_")}
