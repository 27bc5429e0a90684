"""What a run does when its logging backend fails mid-run (``logger.on_error``).

:class:`GuardedLogger` wraps any :class:`Logger`. While the backend works, every call goes
to it. The first exception a backend call raises (a TensorBoard directory removed, an MLflow
store that refuses writes, a W&B directory that is gone...) is its failure: from then on
the metrics go to a :class:`CSVLogger` in ``fallback_dir`` (the CSV logger's usual place,
``<run dir>/logs``), starting with the scalars logged since the backend's last successful
flush (those the backend may have lost with its buffers), and the backend is no longer
called.

``on_error="continue"`` (the default) prints one ``Warning:`` line naming the backend and
the error, and training goes on. ``on_error="raise"`` records a :class:`LoggerBackendError`
instead, which the :class:`~rl_trainers.core.loop.Trainer` takes after the batch in
progress (:meth:`GuardedLogger.pop_failure`): the batch ends, a checkpoint is written, and
``train()`` raises it (the app prints it as one ``Error:`` line, exit status 2).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from torch import Tensor

from .common import Logger, to_python_scalar

__all__ = ["ON_ERROR_CHOICES", "GuardedLogger", "LoggerBackendError", "guard_logger"]

#: The values of ``logger.on_error``.
ON_ERROR_CHOICES = ("continue", "raise")

#: The backend is flushed once this many scalars wait for it, so that the scalars kept to be
#: replayed into the fallback stay few.
_FLUSH_EVERY = 2000

#: Packages whose background threads belong to a backend: an exception there is reported
#: with the backend's failure (one line), not as a thread traceback.
_BACKEND_PACKAGES = ("tensorboard", "torch/utils/tensorboard", "wandb", "mlflow")


class LoggerBackendError(RuntimeError):
    """The logging backend failed and ``logger.on_error=raise``: the run stops after the
    batch in progress, with its checkpoint."""


def _one_line(err: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class GuardedLogger(Logger):
    """A logger that keeps a run going (or stops it cleanly) when its backend fails.

    Attributes of the backend not defined here (``run_dir``, ``run_id``, ``tracking_uri``...)
    are read from it.

    Args:
        backend: the logger to guard.
        on_error: ``"continue"`` or ``"raise"`` (see the module's documentation).
        fallback_dir: where the CSV fallback writes (``<fallback_dir>/<exp_name>/``); ``None``
            (and for a :class:`CSVLogger` backend): no fallback, the metrics after a failure
            are dropped.
        stream: where the warning line goes (default: ``sys.stderr`` at the time).
    """

    lazy_experiment = True

    def __init__(
        self,
        backend: Logger,
        *,
        on_error: str = "continue",
        fallback_dir: str | Path | None = None,
        stream: Any = None,
    ) -> None:
        from .csv import CSVLogger

        if on_error not in ON_ERROR_CHOICES:
            raise ValueError(
                f"on_error must be one of {', '.join(ON_ERROR_CHOICES)}, got {on_error!r}."
            )
        self.backend = backend
        self.on_error = on_error
        self.fallback_dir = None if isinstance(backend, CSVLogger) else fallback_dir
        self.fallback: Logger | None = None
        self.error: str | None = None  #: the backend's failure, as one line
        self._failure: LoggerBackendError | None = None
        self._media_failed: set[str] = set()  # log_video, log_histogram: warned once each
        self._pending: list[tuple[str, Any, int | None]] = []
        self._hparams: Any = None
        self._thread_error: BaseException | None = None
        self._dirs_checked = 0.0
        self._stream = stream
        super().__init__(exp_name=backend.exp_name, log_dir=backend.log_dir)
        self._install_thread_hook()

    # ------------------------------------------------------------------ delegation
    def __getattr__(self, name: str) -> Any:
        if name == "backend" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.backend, name)

    def _create_experiment(self) -> Any:
        return self.backend.experiment

    @property
    def experiment(self) -> Any:
        """The backend's object."""
        return self.backend.experiment

    def output_dirs(self) -> list[str]:
        """The backend's directories."""
        return self.backend.output_dirs()

    @property
    def failed(self) -> bool:
        """Whether the backend failed (the metrics go to the fallback since)."""
        return self.error is not None

    @property
    def fallback_path(self) -> Path | None:
        """The directory of the fallback's files, ``<fallback_dir>/<exp_name>``."""
        if self.fallback_dir is None:
            return None
        return Path(self.fallback_dir, self.exp_name)

    # ------------------------------------------------------------------ failure
    def _install_thread_hook(self) -> None:
        """An exception in a backend's background thread (TensorBoard's writer) would print
        a traceback; it is the backend's failure, reported once by the guard instead."""
        previous = threading.excepthook
        guard = self

        def hook(args: threading.ExceptHookArgs) -> None:
            frames = traceback.extract_tb(args.exc_traceback) if args.exc_traceback else []
            paths = [f.filename.replace("\\", "/") for f in frames]
            ours = any(f"/{pkg}/" in p for p in paths for pkg in _BACKEND_PACKAGES)
            if ours and not guard._closed and args.exc_value is not None:
                # handled on the main thread, at the next call (TensorBoard re-raises it then)
                guard._thread_error = guard._thread_error or args.exc_value
                return
            previous(args)

        threading.excepthook = hook
        self._thread_hooks = (hook, previous)

    def _fail(self, what: str, err: BaseException) -> None:
        """The backend failed: warn (or record the error to raise), open the fallback and
        give it what the backend may have lost."""
        name = type(self.backend).__name__
        self.error = f"{name} failed in {what}: {_one_line(err)}"
        fallback_note = self._open_fallback()
        if self.on_error == "raise":
            self._failure = LoggerBackendError(
                f"the logger backend {self.error}; logger.on_error=raise stopped the run "
                f"after the batch in progress ({fallback_note}); fix the backend and resume "
                "with trainer.resume=true, or set logger.on_error=continue to train on"
            )
            self._failure.__cause__ = err
            return
        print(
            f"Warning: the logger backend {self.error}; training continues and {fallback_note} "
            "(logger.on_error=raise stops the run instead).",
            file=self._stream or sys.stderr,
            flush=True,
        )

    def _open_fallback(self) -> str:
        """Opens the CSV fallback and replays the scalars not confirmed by the backend;
        returns what the warning says of it."""
        pending, self._pending = self._pending, []
        if self.fallback_dir is None:
            return "the metrics logged from now on are dropped"
        from .csv import CSVLogger

        try:
            fallback = CSVLogger(self.exp_name, log_dir=str(self.fallback_dir), video_format="gif")
            if self._hparams is not None:
                fallback.log_hparams(self._hparams)
            for name, value, step in pending:
                fallback.log_scalar(name, value, step=step)
            fallback.flush()
        except Exception as err:  # noqa: BLE001 - the fallback's own failure is reported
            return (
                f"the CSV fallback in {self.fallback_path} failed too ({_one_line(err)}): "
                "the metrics logged from now on are dropped"
            )
        self.fallback = fallback
        return f"the metrics go to the CSV files in {self.fallback_path}"

    def pop_failure(self) -> LoggerBackendError | None:
        """The error to raise (``on_error="raise"`` only), once."""
        failure, self._failure = self._failure, None
        return failure

    def _call(self, what: str, backend_call: Callable[[Logger], Any], fallback_call=None) -> Any:
        """``backend_call(backend)`` while the backend works; after its failure (or if this
        call fails), ``fallback_call(fallback)`` if given."""
        if self.error is None:
            self._check_thread_error()
            try:
                if self.error is None:
                    return backend_call(self.backend)
            except Exception as err:  # noqa: BLE001 - any backend failure is handled alike
                self._fail(what, err)
            if what in ("log_scalar", "log_metrics"):
                return None  # the fallback got this call's values with the pending ones
        if fallback_call is not None and self.fallback is not None:
            try:
                return fallback_call(self.fallback)
            except Exception as err:  # noqa: BLE001
                bad, self.fallback = self.fallback, None
                with contextlib.suppress(Exception):
                    bad.close()
                print(
                    f"Warning: the CSV fallback of the logger failed too ({_one_line(err)}): "
                    "the metrics logged from now on are dropped.",
                    file=self._stream or sys.stderr,
                    flush=True,
                )
        return None

    def _call_media(self, what: str, backend_call: Callable[[Logger], Any], fallback_call) -> Any:
        """A video or a histogram: with ``on_error="continue"`` its failure (no video
        writer, data the backend refuses) loses that item, not the backend: one ``Warning:``
        line per kind, and the scalars go on to the backend. Otherwise :meth:`_call`."""
        if self.on_error != "continue" or self.error is not None:
            return self._call(what, backend_call, fallback_call)
        self._check_thread_error()
        if self.error is not None:
            return self._call(what, backend_call, fallback_call)
        try:
            return backend_call(self.backend)
        except Exception as err:  # noqa: BLE001 - any item the backend refuses is handled alike
            if what not in self._media_failed:
                self._media_failed.add(what)
                kind = what.removeprefix("log_")
                print(
                    f"Warning: the logger backend {type(self.backend).__name__} failed in "
                    f"{what}: {_one_line(err)}; the {kind}s it fails on are skipped and the "
                    "scalars go on to it (logger.on_error=raise stops the run instead).",
                    file=self._stream or sys.stderr,
                    flush=True,
                )
        return None

    def _check_thread_error(self) -> None:
        if self.error is None and self._thread_error is not None:
            self._fail("a background write", self._thread_error)

    def _check_dirs(self, force: bool = False) -> None:
        """The backend's directories must still be directories (checked at most once a
        second, and at every flush): one removed under a backend writing through open files
        loses its records silently."""
        now = time.monotonic()
        if self.error is not None or (not force and now - self._dirs_checked < 1.0):
            return
        self._dirs_checked = now
        try:
            dirs = self.backend.output_dirs()
        except Exception:  # noqa: BLE001 - a backend that cannot say is not checked
            return
        for path in dirs:
            if not os.path.isdir(path):
                what = "removed" if not os.path.exists(path) else "replaced by a file"
                err = FileNotFoundError(errno.ENOENT, f"its directory was {what}", path)
                self._fail("a check of its directory", err)
                return

    def _after_scalars(self) -> None:
        self._check_dirs()
        if self.error is None and len(self._pending) >= _FLUSH_EVERY:
            self.flush()

    # ------------------------------------------------------------------ logging
    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        value = to_python_scalar(value)
        self._record_step(name, step)
        if self.error is None:
            self._pending.append((name, value, step))
        self._call(
            "log_scalar",
            lambda b: b.log_scalar(name, value, step=step),
            lambda f: f.log_scalar(name, value, step=step),
        )
        self._after_scalars()

    def _log_metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        for name in metrics:
            self._record_step(name, step)
        if self.error is None:
            self._pending.extend((name, value, step) for name, value in metrics.items())
        self._call(
            "log_metrics",
            lambda b: b._log_metrics(metrics, step),
            lambda f: f._log_metrics(metrics, step),
        )
        self._after_scalars()

    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        self._hparams = cfg
        self._call("log_hparams", lambda b: b.log_hparams(cfg), lambda f: f.log_hparams(cfg))

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        self._record_step(name, step)
        self._call_media(
            "log_video",
            lambda b: b.log_video(name, video, step=step, **kwargs),
            lambda f: f.log_video(name, video, step=step, **kwargs),
        )

    def log_histogram(
        self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs
    ) -> None:
        self._record_step(name, step)
        self._call_media(
            "log_histogram",
            lambda b: b.log_histogram(name, data, step=step, **kwargs),
            lambda f: f.log_histogram(name, data, step=step, **kwargs),
        )

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        self._record_step(name, step)
        self._call(
            "log_str",
            lambda b: b.log_str(name, value, step=step),
            lambda f: f.log_str(name, value, step=step),
        )

    def flush(self) -> None:
        """Flushes the backend (the scalars it held are then safe) or the fallback."""
        self._check_thread_error()
        self._check_dirs(force=True)
        if self.error is None:
            try:
                self.backend.flush()
            except Exception as err:  # noqa: BLE001
                self._fail("flush", err)
            else:
                self._pending.clear()
                return
        self._call("flush", None, lambda f: f.flush())

    def close(self) -> None:
        """Closes the backend (its errors after a failure are not reported again) and the
        fallback."""
        if self._closed:
            return
        self._check_thread_error()
        if self.error is None:
            try:
                self.backend.close()
            except Exception as err:  # noqa: BLE001
                self._fail("close", err)
        else:
            with contextlib.suppress(Exception):
                self.backend.close()
        if self.fallback is not None:
            with contextlib.suppress(Exception):
                self.fallback.close()
        hook, previous = self._thread_hooks
        if threading.excepthook is hook:
            threading.excepthook = previous
        super().close()

    # ------------------------------------------------------------------ resume
    def state_dict(self) -> dict[str, Any]:
        """The backend's state; after its failure, the base state and the fallback's."""
        self._check_thread_error()
        self._check_dirs(force=True)
        if self.error is None:
            try:
                state = self.backend.state_dict()
            except Exception as err:  # noqa: BLE001
                self._fail("state_dict", err)
            else:
                self._pending.clear()  # the backend flushed
                return state
        state = super().state_dict()
        if self.fallback is not None:
            with contextlib.suppress(Exception):
                state["fallback"] = self.fallback.state_dict()
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores the backend (and, if the saved run had failed over, the fallback)."""
        super().load_state_dict(state_dict)
        self._call("load_state_dict", lambda b: b.load_state_dict(state_dict))
        saved = state_dict.get("fallback")
        if saved is not None and self.fallback_dir is not None:
            from .csv import CSVLogger

            with contextlib.suppress(Exception):
                fallback = CSVLogger(self.exp_name, str(self.fallback_dir), video_format="gif")
                fallback.load_state_dict(saved)  # drops rows past the checkpoint
                fallback.close()

    def __repr__(self) -> str:
        return f"GuardedLogger({self.backend!r}, on_error={self.on_error!r})"


def guard_logger(
    backend: Logger | None, on_error: str = "continue", fallback_dir: str | Path | None = None
) -> GuardedLogger | None:
    """``backend`` wrapped in a :class:`GuardedLogger` (``None`` stays ``None``)."""
    if backend is None:
        return None
    return GuardedLogger(backend, on_error=on_error, fallback_dir=fallback_dir)
