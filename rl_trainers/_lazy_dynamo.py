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
  :mod:`rl_trainers.trainers.optimizer_step`, does not go through it).

:func:`install` (an opt-in: ``import rl_trainers`` does not call it; the Hydra app's
``train.py`` scripts do, before anything imports tensordict) defers the first two until
something imports ``torch._dynamo``: tensordict's registrations are recorded and the optimiser methods call their undecorated function.
Whatever imports it later (``torch.compile``, ``trainer.compile=true``, a user's own code)
then sees what an eager import would have set up: right after the module executes, the
recorded registrations are made and the optimiser methods go back to building their
dynamo-disabled versions. If ``torch._dynamo`` is already loaded (tensordict imported
first) or torch's internals differ from what is expected here, nothing is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.compiler
import torch.optim

from rl_trainers._import_hooks import AfterImportHook

__all__ = ["install"]

_DYNAMO = "torch._dynamo"
# (name of the torch._dynamo decorator, function) pairs waiting for the import
_pending: list[tuple[str, Callable]] = []
# undecorated functions whose dynamo-disabled version is preset to themselves
_preset: list[Callable] = []
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


@contextmanager
def _deferred_registrations() -> Iterator[None]:
    names = ("allow_in_graph", "assume_constant_result")
    originals = {name: getattr(torch.compiler, name) for name in names}
    for name, real in originals.items():
        setattr(torch.compiler, name, _lazy(name, real))
    try:
        yield
    finally:
        for name, real in originals.items():
            setattr(torch.compiler, name, real)


def _disable_dynamo_wrappers() -> list[Callable]:
    """The undecorated functions of ``Optimizer``'s ``torch._disable_dynamo`` methods."""
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
    while _pending:
        name, fn = _pending.pop(0)
        getattr(dynamo, name)(fn)
    while _preset:
        fn = _preset.pop()
        if fn.__dict__.get("__dynamo_disable") is fn:
            del fn.__dict__["__dynamo_disable"]  # rebuilt, disabled, on the next call


def install() -> None:
    """Defer ``torch._dynamo``'s import (see the module docstring); idempotent."""
    global _installed
    if _installed or _DYNAMO in sys.modules:
        return
    wrapped = _disable_dynamo_wrappers()
    if not wrapped or not hasattr(torch.compiler, "assume_constant_result"):
        return  # not the torch this was written against: leave it alone
    _installed = True
    sys.meta_path.insert(0, AfterImportHook(_DYNAMO, _after_dynamo_import))
    for fn in wrapped:
        if "__dynamo_disable" not in fn.__dict__:
            fn.__dict__["__dynamo_disable"] = fn  # torch._compile's cache: call fn itself
            _preset.append(fn)
    with _deferred_registrations():
        import tensordict  # noqa: F401  (registers its compile helpers on import)
        import tensordict.nn  # noqa: F401
