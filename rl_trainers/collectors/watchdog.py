"""Deadlines for code that may block for ever (an env step, the last batch before a stop).

:class:`Watchdog` watches a heartbeat from a background thread. When the heartbeat is older
than its limit it interrupts the main thread with ``SIGALRM``, whose handler raises the
watchdog's error there: a blocking system call (``time.sleep``, a pipe read of a vector
env's worker) is interrupted and the error unwinds the stack as any exception would, so
``finally`` blocks (closing envs and worker processes) still run. If the main thread does
not get back to Python code within ``hard_exit_s`` (a C extension looping without checking
for signals), the watchdog prints its message, kills the process's multiprocessing
children and ends the process with :func:`os._exit`.

Only the main thread can run Python signal handlers: a watchdog armed from another thread
cannot interrupt it and goes straight to the hard exit. ``SIGALRM`` is taken over while a
watchdog is armed (and given back when it is disarmed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EnvStepTimeout", "StopGraceExpired", "Watchdog"]

#: Seconds a fired watchdog waits for the main thread to unwind before ending the process.
HARD_EXIT_S = 10.0


class EnvStepTimeout(RuntimeError):
    """An env step (or reset) took longer than ``collector.step_timeout_s``."""


class StopGraceExpired(KeyboardInterrupt):
    """The batch running when a stop was requested did not end within the grace time."""


class Watchdog:
    """Raise ``make_error(elapsed)`` in the main thread once no :meth:`beat` came for
    ``timeout_s`` seconds while armed.

    Args:
        timeout_s: the longest silence allowed between :meth:`arm`/:meth:`beat` calls.
        make_error: builds the exception from the seconds elapsed (its message is also
            what the hard exit prints).
        hard_exit_s: seconds after firing before the process is ended if the main thread
            did not unwind (None: never).
        exit_code: the status of the hard exit.
    """

    def __init__(
        self,
        timeout_s: float,
        make_error: Callable[[float], BaseException],
        *,
        hard_exit_s: float | None = HARD_EXIT_S,
        exit_code: int = 1,
    ) -> None:
        if not timeout_s or timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.timeout_s = float(timeout_s)
        self.make_error = make_error
        self.hard_exit_s = hard_exit_s
        self.exit_code = exit_code
        self._beat = time.monotonic()
        self._armed = False
        self._closed = False
        self._pending: BaseException | None = None
        self._previous: Any = None
        self._installed = False
        self._target = threading.main_thread().ident
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ heartbeat
    def beat(self) -> None:
        """Progress: the limit counts from now."""
        self._beat = time.monotonic()

    def arm(self) -> None:
        """Start watching (the limit counts from now)."""
        self._beat = time.monotonic()
        if threading.current_thread() is threading.main_thread() and not self._installed:
            with contextlib.suppress(ValueError, OSError):
                self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
                self._installed = True
        self._armed = True
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="watchdog", daemon=True)
            self._thread.start()
        self._wake.set()

    def disarm(self) -> None:
        """Stop watching; give ``SIGALRM`` back."""
        self._armed = False
        self._pending = None
        if self._installed and threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)
            self._installed = False

    def close(self) -> None:
        """Disarm and end the watching thread."""
        self.disarm()
        self._closed = True
        self._wake.set()

    def __enter__(self) -> Watchdog:
        self.arm()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.disarm()

    # ------------------------------------------------------------------ firing
    def _on_alarm(self, signum: int, frame: Any) -> None:
        err, self._pending = self._pending, None
        if err is not None:
            raise err

    def _watch(self) -> None:
        poll = min(0.25, self.timeout_s / 4)
        while not self._closed:
            if not self._armed:
                self._wake.wait()
                self._wake.clear()
                continue
            elapsed = time.monotonic() - self._beat
            if elapsed < self.timeout_s:
                time.sleep(min(poll, self.timeout_s - elapsed + 0.01))
                continue
            self._fire(elapsed)

    def _fire(self, elapsed: float) -> None:
        err = self.make_error(elapsed)
        fired_at = self._beat
        if self._installed and self._target is not None:
            self._pending = err
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pthread_kill(self._target, signal.SIGALRM)
        if self.hard_exit_s is None:
            self._armed = False
            return
        end = time.monotonic() + self.hard_exit_s
        while time.monotonic() < end:
            if not self._armed or self._closed or self._beat != fired_at:
                return  # the main thread unwound (or went on)
            time.sleep(0.05)
        hard_exit(
            f"{err} (the main thread did not stop within {self.hard_exit_s:g} s)", self.exit_code
        )


def hard_exit(message: str, code: int) -> None:
    """Print ``Error: message``, kill this process's multiprocessing children, ``os._exit``."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"\nError: {message}\n".encode())
    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
    os._exit(code)
