"""SIGTERM and SIGINT outside the training loop, which handles its own (it finishes the
batch and saves a checkpoint): during start-up or the final evaluation a signal ends the run
at once with one ``Stopped by ...`` line; under torchrun a late forwarded copy is ignored;
once the app exits after a stop, another signal ends the process at once, without a
traceback from wherever the interpreter's shutdown was."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: the exit statuses of a run stopped by SIGINT or SIGTERM
STOP_STATUSES = frozenset(128 + int(sig) for sig in (signal.SIGINT, signal.SIGTERM))


class Phase:
    """What the app is doing, for the line a stop signal outside training prints."""

    name = "start-up (before the first batch)"
    trainer: Any = None

    def describe(self) -> str:
        """The phase, for the ``Stopped by ... during <phase>`` line."""
        if getattr(self.trainer, "interrupted", None) is not None:
            return "the shutdown after the stop"  # from the moment train() knows it stopped
        return self.name


class _StoppedOutsideTraining(KeyboardInterrupt):
    """SIGTERM or SIGINT while the app builds, resumes or runs the final evaluation."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_signals_outside_training(phase: Phase) -> Iterator[None]:
    """SIGTERM/SIGINT during start-up or the final evaluation end the run at once with one
    ``Stopped by ...`` line (exit status 128 + the signal); during :meth:`Trainer.train`
    the trainer's own handlers finish the batch and save a checkpoint instead. A run that
    a signal stopped leaves :func:`exit_at_once_on_another_signal`'s handlers in place for
    the rest of the process's exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: Any) -> None:
        raise _StoppedOutsideTraining(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, on_signal)
    stopped = False  # by a signal: the process is exiting
    try:
        yield
    except SystemExit as exit_:
        stopped = exit_.code in STOP_STATUSES
        raise
    except _StoppedOutsideTraining as stop:
        stopped = True
        trainer = phase.trainer
        where = getattr(trainer, "last_checkpoint", None) if trainer is not None else None
        if trainer is None or getattr(trainer, "rank", 0) == 0:
            print(
                f"Stopped by {stop} during {phase.describe()}; "
                + (f"checkpoint: {where}." if where else "no checkpoint was written."),
                file=sys.stderr,
                flush=True,
            )
        raise SystemExit(128 + stop.signum) from None
    finally:
        if stopped:
            exit_at_once_on_another_signal()
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextlib.contextmanager
def late_forwarded_signal_ignored(trainer) -> Iterator[None]:
    """Data-parallel: once :meth:`Trainer.train` was interrupted, ignore the first SIGTERM
    or SIGINT; any other signal acts as it would without this handler.

    torchrun forwards a signal to each rank in turn. The ranks agree on a stop after each
    batch, so the copy reaching rank 0 can stop every rank before rank 1's copy arrives;
    that late copy, acted on by the default handler, killed rank 1 while rank 0 waited for
    it in the parameter check, and the run ended in a gloo error instead of its message.
    """
    main = threading.current_thread() is threading.main_thread()
    if trainer.world_size <= 1 or not main:
        yield
        return
    ignored: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if trainer.interrupted is not None and not ignored:
            ignored.append(signum)
            return
        signal.signal(signum, previous[signum])
        signal.raise_signal(signum)

    previous = {
        sig: signal.signal(sig, on_signal) or signal.SIG_DFL  # None: not set from Python
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def exit_at_once_on_another_signal() -> None:
    """Once the app exits after a stop signal: another SIGINT or SIGTERM ends the process
    at once with status 128 + its number.

    With Python's default handlers, a second Ctrl-C during the exit after the ``Stopped
    ...`` line (Hydra unwinding its job, joining threads, finalizers, atexit) printed a
    ``KeyboardInterrupt`` traceback from whichever of them it landed in. Worker processes
    still alive are terminated first, so none is left behind."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum: int, frame: Any) -> None:
        for child in multiprocessing.active_children():
            with contextlib.suppress(Exception):
                child.terminate()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, on_signal)
