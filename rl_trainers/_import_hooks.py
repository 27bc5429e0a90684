"""Run a callback right after a module executes, without importing it first."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["AfterImportHook", "call_after_import"]


class AfterImportHook(importlib.abc.MetaPathFinder):
    """A one-shot finder: when ``fullname`` is imported, ``callback(module)`` runs right after
    the module's code has executed. It removes itself at the first lookup of that name."""

    def __init__(self, fullname: str, callback: Callable[[Any], None]) -> None:
        self.fullname = fullname
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.fullname:
            return None
        sys.meta_path.remove(self)  # one import only; also keeps the lookup below plain
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_call(module: Any) -> None:
            exec_module(module)
            self.callback(module)

        loader.exec_module = exec_then_call
        return spec


def call_after_import(fullname: str, callback: Callable[[Any], None]) -> None:
    """``callback(module)`` now if ``fullname`` is loaded, else right after it is imported
    (once per callback)."""
    if fullname in sys.modules:
        callback(sys.modules[fullname])
    elif not any(isinstance(f, AfterImportHook) and f.callback is callback for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImportHook(fullname, callback))
