"""Helpers of torchrl's ``torchrl._utils`` used by example scripts: ``logger``, ``timeit``,
``compile_with_warmup`` and ``_append_last`` (torchrl's discrete SAC script imports it).

``logger`` is the ``"rl_trainers"`` logger: level ``INFO`` (or ``$RL_LOGGING_LEVEL``),
lines ``<time> [rl_trainers][INFO] <message>`` on stderr (stdout with
``RL_TRAINERS_CONSOLE_STREAM=stdout``), not propagated to the root logger.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["logger", "timeit", "compile_with_warmup"]


class _ConsoleHandler(logging.StreamHandler):
    """A stream handler writing to the *current* ``sys.stderr``/``sys.stdout`` (so
    ``contextlib.redirect_stderr`` and test capture see the lines)."""

    def __init__(self, stream_name: str) -> None:
        super().__init__()
        self._stream_name = stream_name

    @property
    def stream(self) -> TextIO:
        return getattr(sys, self._stream_name)

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.__init__ assigns it
        pass


def _make_logger() -> logging.Logger:
    log = logging.getLogger("rl_trainers")
    log.setLevel(os.environ.get("RL_LOGGING_LEVEL", "INFO").upper())
    log.propagate = False
    if not any(isinstance(h, _ConsoleHandler) for h in log.handlers):
        stream = "stdout" if os.environ.get("RL_TRAINERS_CONSOLE_STREAM") == "stdout" else "stderr"
        handler = _ConsoleHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s [%(name)s][%(levelname)s] %(message)s"))
        log.addHandler(handler)
    return log


logger = _make_logger()


class timeit:  # noqa: N801 - torchrl's name
    """Accumulate wall-clock timings per name; a context manager and a decorator.

    Every exit of ``timeit(name)`` adds one call to ``name``'s record: the mean time per
    call, the total and the count, kept until :meth:`erase`.

    Args:
        name: the timer's name.
        sync: synchronise CUDA before reading the clock (no-op without CUDA).

    Example:
        >>> @timeit("update")
        ... def update(): ...
        >>> with timeit("collect"):
        ...     batch = next(iterator)
        >>> metrics = timeit.todict(prefix="time")  # {"time/collect": ..., "time/update": ...}
        >>> timeit.print()  # one line per timer through ``logger``
        >>> timeit.erase()
    """

    _REG: dict[str, list[float]] = {}  # name -> [mean per call, total, count]
    _MARKS: dict[str, float] = {}
    _printevery_count = 0

    def __init__(self, name: str, *, sync: bool = False) -> None:
        self.name = name
        self._sync = sync
        self.t0 = 0.0

    def _now(self) -> float:
        if self._sync:
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        return time.perf_counter()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with timeit(self.name, sync=self._sync):
                return fn(*args, **kwargs)

        return timed

    def __enter__(self) -> timeit:
        self.t0 = self._now()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._record(self.name, self.elapsed())

    def start(self) -> timeit:
        """Start the clock without a ``with`` block (read it with :meth:`elapsed`)."""
        self.t0 = self._now()
        return self

    def elapsed(self) -> float:
        """Seconds since the timer started."""
        return self._now() - self.t0

    @classmethod
    def _record(cls, name: str, elapsed: float) -> None:
        entry = cls._REG.setdefault(name, [0.0, 0.0, 0])
        entry[1] += elapsed
        entry[2] += 1
        entry[0] = entry[1] / entry[2]

    @classmethod
    def mark_start(cls, name: str) -> None:
        """Start a named event (ended by :meth:`mark_end`)."""
        cls._MARKS[name] = time.perf_counter()

    @classmethod
    def mark_end(cls, name: str) -> None:
        """End a named event started by :meth:`mark_start` and record it."""
        cls._record(name, time.perf_counter() - cls._MARKS.pop(name))

    @classmethod
    def print(cls, prefix: str | None = None) -> str:  # noqa: A003 - torchrl's name
        """Log one line per timer (sorted by name) through ``logger``; return the lines."""
        lines = []
        for name in sorted(cls._REG):
            mean, total, _ = cls._REG[name]
            line = (
                f"{name} took {mean * 1000:4.4f} msec (total = {total: 4.4f} sec since last reset)."
            )
            lines.append(f"{prefix} -- {line}" if prefix else line)
            logger.info(lines[-1])
        return "\n".join(lines)

    @classmethod
    def printevery(
        cls,
        num_prints: int,
        total_count: int,
        *,
        prefix: str | None = None,
        erase: bool = False,
    ) -> None:
        """Call once per iteration: :meth:`print` about ``num_prints`` times over
        ``total_count`` calls (on the first call and every ``total_count // num_prints``)."""
        interval = max(1, total_count // max(1, num_prints))
        if cls._printevery_count % interval == 0:
            cls.print(prefix=prefix)
            if erase:
                cls.erase()
        cls._printevery_count += 1

    @classmethod
    def todict(cls, percall: bool = True, prefix: str | None = None) -> dict[str, float]:
        """``{name: seconds}``: mean per call (``percall``) or total; keys ``prefix/name``."""
        column = 0 if percall else 1
        return {
            (f"{prefix}/{name}" if prefix else name): entry[column]
            for name, entry in cls._REG.items()
        }

    @classmethod
    def erase(cls) -> None:
        """Zero every timer (names are kept, with a count of 0)."""
        for name in cls._REG:
            cls._REG[name] = [0.0, 0.0, 0]

    @classmethod
    def reset(cls) -> None:
        """Same as :meth:`erase`."""
        cls.erase()


def compile_with_warmup(
    model: Callable | None = None, *, warmup: int = 1, **compile_kwargs: Any
) -> Callable:
    """``torch.compile(model, **compile_kwargs)`` after ``warmup`` eager calls.

    The first ``warmup`` calls run ``model`` itself (lazy modules get initialised, shapes
    settle); the next ones run the compiled model. Without ``model``, returns a decorator.
    ``torch._dynamo`` is only imported when the compilation happens.

    Example:
        >>> policy = compile_with_warmup(policy, warmup=2, mode="default")
    """
    if model is None:
        return lambda fn: compile_with_warmup(fn, warmup=warmup, **compile_kwargs)
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}.")
    calls = 0
    compiled: Callable | None = None

    def run(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls, compiled
        if compiled is None:
            if calls < warmup:
                calls += 1
                return model(*args, **kwargs)
            import torch

            compiled = torch.compile(model, **compile_kwargs)
        return compiled(*args, **kwargs)

    functools.update_wrapper(run, model, updated=())  # name/doc only, not a module's state
    return run


def _append_last(key: str | tuple[str, ...], suffix: str) -> str | tuple[str, ...]:
    """``key`` with ``suffix`` appended to its last name: ``"obs"`` -> ``"obs_flat"``,
    ``("agent", "obs")`` -> ``("agent", "obs_flat")``; nested tuples are flattened first
    (tensordict's ``unravel_key``, so ``("obs",)`` -> ``"obs_flat"``)."""
    from tensordict.utils import unravel_key  # imported here: this module stays light

    key = unravel_key(key)
    if isinstance(key, str):
        return key + suffix
    return (*key[:-1], key[-1] + suffix)
