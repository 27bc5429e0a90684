"""A copy of what the run prints in its run directory's log (``train.log``)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .launch import app_words


class _LineCopy:
    """A text stream that writes through to ``stream`` and copies each complete line to
    ``log``; a progress bar's redraws (``\r``) are copied once, as last drawn."""

    def __init__(self, stream: Any, log: Any) -> None:
        self._stream = stream
        self._log = log
        self._pending = ""

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._pending += text
        if "\n" in self._pending:
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._copy(line)
            self._log.flush()
        if "\r" in self._pending:  # a progress bar's redraws: keep the last one only
            self._pending = "\r" + self._last_drawn(self._pending)
        return written

    @staticmethod
    def _last_drawn(line: str) -> str:
        drawn = [part for part in line.split("\r") if part.strip()]
        return drawn[-1] if drawn else ""

    def _copy(self, line: str) -> None:
        if "\r" in line:
            line = self._last_drawn(line).rstrip()
            if not line:
                return
        self._log.write(line + "\n")

    def end(self) -> None:
        """Copy an unfinished last line (a progress bar left on screen)."""
        if self._pending.strip():
            self._copy(self._pending)
            self._log.flush()
        self._pending = ""

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno...
        return getattr(self._stream, name)


@contextlib.contextmanager
def run_log() -> Iterator[None]:
    """Copy what the run prints (its start line first, warnings, progress, errors, the
    summary) to Hydra's job log in the run directory (``train.log``), which otherwise
    holds Hydra's own log records only: none in most runs.

    Only inside ``@hydra.main`` with Hydra's job logging on (the file exists), on the
    first data-parallel rank; the lines still go to the terminal as before.
    """
    path = _job_log_path()
    if path is None or not path.exists() or os.environ.get("RANK", "0") not in ("", "0"):
        yield
        return
    import shlex

    with open(path, "a", encoding="utf-8") as log:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        words = " ".join(shlex.quote(w) for w in [*app_words(), *sys.argv[1:]])
        log.write(f"[{stamp}] started: {words}\n")
        log.flush()
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _LineCopy(out, log), _LineCopy(err, log)
        try:
            yield
        finally:
            for copy in (sys.stdout, sys.stderr):
                if isinstance(copy, _LineCopy):
                    copy.end()
            sys.stdout, sys.stderr = out, err


def _job_log_path() -> Path | None:
    """Hydra's job log (``<run dir>/<job name>.log``) inside ``@hydra.main``, else None."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    return Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log"
