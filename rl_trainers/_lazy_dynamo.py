"""Keep ``torch._dynamo`` out of runs that never compile.

``torch._dynamo`` (the front end of ``torch.compile``, with sympy and torch.fx) adds about
70 MiB to a process's resident memory, a fifth of a SAC run's peak. Nothing in an eager run
uses it, yet three import-time paths load it:

* tensordict registers a few functions with ``torch.compiler.allow_in_graph`` and
  ``assume_constant_result`` when it is imported;
* every method of ``torch.optim.Optimizer`` decorated with ``torch._disable_dynamo``
  (``add_param_group``, hence every optimiser's constructor, ``zero_grad``, ``state_dict``,
  ``load_state_dict``) imports it on its first call, to build its dynamo-disabled twin;
* ``Optimizer.step``'s wrapper imports it on every call (the trainer's lean fused-Adam step,
  :mod:`rl_trainers.fast.adam`, does not go through it).

:func:`install` (an opt-in: ``import rl_trainers`` does not call it; the Hydra app's
``train.py`` scripts do, before anything imports tensordict; it acts when torch is imported,
so the ``--help`` path, which never imports torch, stays fast) defers the first two until
something imports ``torch._dynamo``: ``torch.compiler.allow_in_graph`` and
``assume_constant_result`` record their function (tensordict's registrations) and the
optimiser methods call their undecorated function.
Whatever imports it later (``torch.compile``, ``trainer.compile=true``, a user's own code)
then sees what an eager import would have set up: right after the module executes, the
recorded registrations are made and the optimiser methods go back to building their
dynamo-disabled versions. If ``torch._dynamo`` is already loaded (tensordict imported
first) or torch's internals differ from what is expected here, nothing is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from rl_trainers._import_hooks import AfterImportHook, call_after_import

__all__ = ["install"]

_DYNAMO = "torch._dynamo"
# (name of the torch._dynamo decorator, function) pairs waiting for the import
_pending: list[tuple[str, Callable]] = []
# undecorated functions whose dynamo-disabled version is preset to themselves
_preset: list[Callable] = []
# the torch.compiler functions replaced by recording stand-ins until dynamo loads
_originals: dict[str, Callable] = {}
_installed = False


def _lazy(name: str, real: Callable) -> Callable:
    """A stand-in for ``torch.compiler.<name>`` that records ``fn`` until dynamo loads."""

    def register(fn):
        if _DYNAMO in sys.modules:
            return real(fn)
        _pending.append((name, fn))
        return fn

    register.__name__ = register.__qualname__ = name
    register.__doc__ = real.__doc__
    return register


def _disable_dynamo_wrappers() -> list[Callable]:
    """The undecorated functions of ``Optimizer``'s ``torch._disable_dynamo`` methods."""
    import torch
    import torch.optim

    inner_code = torch._disable_dynamo(lambda: None).__code__
    found = []
    for value in vars(torch.optim.Optimizer).values():
        if getattr(value, "__code__", None) is inner_code and callable(
            getattr(value, "__wrapped__", None)
        ):
            found.append(value.__wrapped__)
    return found


def _after_dynamo_import(dynamo: Any) -> None:
    """Make the held-back registrations on the freshly executed ``torch._dynamo``."""
    import torch.compiler

    while _originals:
        name, real = _originals.popitem()
        setattr(torch.compiler, name, real)
    while _pending:
        name, fn = _pending.pop(0)
        getattr(dynamo, name)(fn)
    while _preset:
        fn = _preset.pop()
        if fn.__dict__.get("__dynamo_disable") is fn:
            del fn.__dict__["__dynamo_disable"]  # rebuilt, disabled, on the next call


def install() -> None:
    """Defer ``torch._dynamo``'s import (see the module docstring) once torch is imported
    (now, if it is loaded); idempotent."""
    call_after_import("torch", _install)


def _install(_torch: Any) -> None:
    global _installed
    if _installed or _DYNAMO in sys.modules:
        return
    import torch.compiler

    wrapped = _disable_dynamo_wrappers()
    if not wrapped or not hasattr(torch.compiler, "assume_constant_result"):
        return  # not the torch this was written against: leave it alone
    _installed = True
    sys.meta_path.insert(0, AfterImportHook(_DYNAMO, _after_dynamo_import))
    for fn in wrapped:
        if "__dynamo_disable" not in fn.__dict__:
            fn.__dict__["__dynamo_disable"] = fn  # torch._compile's cache: call fn itself
            _preset.append(fn)
    for name in ("allow_in_graph", "assume_constant_result"):
        _originals[name] = getattr(torch.compiler, name)
        setattr(torch.compiler, name, _lazy(name, _originals[name]))
