"""Attributes of a package imported on first use (PEP 562), so importing the package stays
cheap: ``__getattr__ = lazy_attributes(__name__, {"load_policy": "rl_trainers.agents.policy"})``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``sources`` from
    the module named beside it the first time it is read, then keeps it in the package."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
