"""A minimal-dependency logger writing plain CSV files.

Layout, under ``<log_dir>/<exp_name>/``::

    scalars/<name>.csv      one file per series, rows "step,value" (no header);
                            a name "train/loss" gives scalars/train/loss.csv
    texts/<name>.csv        rows "step,text" (csv-quoted)
    videos/<name>_<step>.<fmt>   fmt "pt" (a uint8 [T, C, H, W] tensor), "gif" or "mp4"
    histograms/<name>_<step>.pt  the raw data as a tensor
    hparams.yaml            the (nested) hyper-parameters

Re-opening a logger on an existing directory appends to the same files. To resume a run
from a checkpoint without duplicate points, either call ``logger.truncate_after(step)`` or
restore the logger's ``state_dict()`` saved with the checkpoint: ``load_state_dict`` drops,
series by series, every row written after that state was taken.
"""

from __future__ import annotations

import atexit
import csv
import io
import os
import re
import time
import weakref
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .common import (
    Logger,
    encode_gif,
    hparams_to_dict,
    to_python_scalar,
    video_to_frames,
    video_to_uint8,
)

__all__ = ["CSVLogger", "CSVExperiment"]

_VIDEO_FORMATS = ("pt", "gif", "mp4")


def _safe_relpath(name: str) -> str:
    """Turns a series name into a relative path, refusing ones that escape the directory."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"Invalid series name {name!r}: it must name a path inside the log dir.")
    return os.path.join(*parts)


def _read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return [row for row in csv.reader(f) if row]


class CSVExperiment:
    """The files of one CSV experiment; keeps one open append handle per series.

    Every row reaches its file when it is written, as with torchrl's ``CSVExperiment``;
    with ``flush_secs > 0`` rows are buffered instead and flushed every ``flush_secs``
    seconds (checked on write), on :meth:`flush` and on :meth:`close`.

    As torchrl's ``CSVExperiment``, :attr:`scalars` keeps in memory, per series name, the
    ``(step, value)`` pairs this object has logged (a run re-opened on an existing directory
    starts it empty; the files hold the whole history). Truncations for a resume drop the
    matching pairs.

    Args:
        log_dir: the experiment directory (``<log_dir>/<exp_name>``).
        video_format: ``"pt"``, ``"gif"`` or ``"mp4"``.
        video_fps: frames per second of encoded videos.
        flush_secs: the longest time written rows may stay in memory (0: none).
    """

    def __init__(
        self,
        log_dir: str,
        *,
        video_format: str = "pt",
        video_fps: int = 30,
        flush_secs: float = 0.0,
    ) -> None:
        if video_format not in _VIDEO_FORMATS:
            raise ValueError(
                f"Unknown video_format {video_format!r}; expected one of {_VIDEO_FORMATS}."
            )
        self.log_dir = str(log_dir)
        self.video_format = video_format
        self.video_fps = video_fps
        self.flush_secs = flush_secs
        self._handles: dict[tuple[str, str], io.TextIOBase] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._media_counts: dict[tuple[str, str], int] = {}
        self._last_flush = time.monotonic()
        self.scalars: defaultdict[str, list[tuple[int, float]]] = defaultdict(list)
        os.makedirs(self.log_dir, exist_ok=True)
        for sub in ("scalars", "videos", "texts"):
            os.makedirs(os.path.join(self.log_dir, sub), exist_ok=True)
        ref = weakref.ref(self)
        atexit.register(lambda: ref() is not None and ref().close())

    # -- paths and handles -------------------------------------------------------------
    def series_path(self, kind: str, name: str) -> Path:
        """The CSV file of series ``name`` in ``kind`` ("scalars" or "texts")."""
        return Path(self.log_dir, kind, _safe_relpath(name) + ".csv")

    def _handle(self, kind: str, name: str) -> io.TextIOBase:
        key = (kind, name)
        handle = self._handles.get(key)
        if handle is None:
            path = self.series_path(kind, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._counts[key] = len(_read_rows(path)) if path.exists() else 0
            handle = open(path, "a", newline="", buffering=1 << 16)  # noqa: SIM115
            self._handles[key] = handle
        return handle

    def _written(self, handle: io.TextIOBase) -> None:
        """After a row went to ``handle``: flush it (unbuffered), or every handle once
        ``flush_secs`` have passed since the last flush."""
        if self.flush_secs <= 0:
            handle.flush()
        elif time.monotonic() - self._last_flush >= self.flush_secs:
            self.flush()

    # -- writing ---------------------------------------------------------------------
    def add_scalar(self, name: str, value: float, global_step: int | None = None) -> int:
        """Appends a ``step,value`` row; returns the step used (row count when ``None``)."""
        handle = self._handle("scalars", name)
        key = ("scalars", name)
        step = self._counts[key] if global_step is None else int(global_step)
        handle.write(f"{step},{value!r}\n")
        self._counts[key] += 1
        self.scalars[name].append((step, float(value)))
        self._written(handle)
        return step

    def add_text(self, name: str, text: str, global_step: int | None = None) -> int:
        """Appends a ``step,text`` row (csv-quoted); returns the step used."""
        handle = self._handle("texts", name)
        key = ("texts", name)
        step = self._counts[key] if global_step is None else int(global_step)
        csv.writer(handle, lineterminator="\n").writerow([step, text])
        self._counts[key] += 1
        self._written(handle)
        return step

    def _media_step(self, kind: str, name: str, global_step: int | None) -> int:
        key = (kind, name)
        count = self._media_counts.get(key, 0)
        self._media_counts[key] = count + 1
        return count if global_step is None else int(global_step)

    def add_video(self, name: str, video: Tensor, global_step: int | None = None, **kwargs) -> Path:
        """Writes a video file and returns its path."""
        step = self._media_step("videos", name, global_step)
        fmt = kwargs.pop("format", self.video_format)
        fps = kwargs.pop("fps", self.video_fps)
        path = Path(self.log_dir, "videos", f"{_safe_relpath(name)}_{step}.{fmt}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "pt":
            torch.save(video_to_uint8(video).clone(), path)
        elif fmt == "gif":
            path.write_bytes(encode_gif(video, fps=fps))
        elif fmt == "mp4":
            try:
                import imageio.v2 as imageio

                imageio.mimwrite(path, video_to_frames(video), fps=fps, **kwargs)
            except Exception as err:  # imageio or its ffmpeg plugin missing
                raise ImportError(
                    "Writing mp4 videos needs imageio with the ffmpeg plugin (imageio-ffmpeg): "
                    "pip install \"rl_trainers[video]\"; use video_format='gif' or 'pt' "
                    "otherwise."
                ) from err
        else:
            raise ValueError(f"Unknown video format {fmt!r}; expected one of {_VIDEO_FORMATS}.")
        return path

    def add_histogram(self, name: str, data: Any, global_step: int | None = None) -> Path:
        """Saves ``data`` as a tensor under ``histograms/`` and returns the file path."""
        step = self._media_step("histograms", name, global_step)
        path = Path(self.log_dir, "histograms", f"{_safe_relpath(name)}_{step}.pt")
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(torch.as_tensor(data).detach().cpu().clone(), path)
        return path

    def save_hparams(self, hparams: Mapping[str, Any]) -> Path:
        """Writes the hyper-parameters to ``hparams.yaml`` (merged with any existing ones)."""
        import yaml

        path = Path(self.log_dir, "hparams.yaml")
        merged: dict[str, Any] = {}
        if path.exists():
            merged = yaml.safe_load(path.read_text()) or {}
        merged.update(hparams)
        path.write_text(yaml.safe_dump(_yaml_safe(merged), sort_keys=False))
        return path

    # -- resume ----------------------------------------------------------------------
    def truncate(self, kind: str, name: str, max_step: int | None) -> None:
        """Drops the rows of one series whose step exceeds ``max_step`` (all if ``None``)."""
        key = (kind, name)
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.close()
        if kind == "scalars" and name in self.scalars:
            pairs = self.scalars[name]
            self.scalars[name] = [] if max_step is None else [p for p in pairs if p[0] <= max_step]
        path = self.series_path(kind, name)
        if not path.exists():
            return
        rows = _read_rows(path)
        kept = [] if max_step is None else [r for r in rows if int(r[0]) <= max_step]
        if len(kept) != len(rows):
            with open(path, "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(kept)
        self._counts.pop(key, None)

    def series_names(self, kind: str) -> list[str]:
        """Names of the series of ``kind`` found on disk or open for writing."""
        root = Path(self.log_dir, kind)
        names = {p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.csv")}
        names.update(name for k, name in self._handles if k == kind)
        return sorted(names)

    def truncate_media(self, max_step: int) -> None:
        """Removes videos and histograms whose file-name step exceeds ``max_step``."""
        pattern = re.compile(r"_(\d+)\.[A-Za-z0-9]+$")
        for sub in ("videos", "histograms"):
            root = Path(self.log_dir, sub)
            if not root.exists():
                continue
            for path in root.rglob("*"):
                match = pattern.search(path.name)
                if path.is_file() and match and int(match.group(1)) > max_step:
                    path.unlink()
        self._media_counts.clear()

    # -- lifecycle -------------------------------------------------------------------
    def flush(self) -> None:
        """Writes every buffered row to disk."""
        for handle in self._handles.values():
            handle.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flushes and closes every file (they reopen in append mode on the next write)."""
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def __repr__(self) -> str:
        return f"CSVExperiment(log_dir={self.log_dir!r})"


def _yaml_safe(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _yaml_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_yaml_safe(v) for v in value]
    if isinstance(value, Tensor):
        return value.tolist()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class CSVLogger(Logger):
    """A minimal-dependency CSV logger.

    See the module docstring for the file layout. File handles stay open; every row is in its
    file as soon as :meth:`log_scalar` returns (torchrl's behaviour), or, with
    ``flush_secs > 0``, within ``flush_secs`` seconds (fewer writes for scalars logged at
    every step).

    Args:
        exp_name: the experiment name (a sub-directory of ``log_dir``).
        log_dir: the root directory; defaults to ``"csv_logs"``.
        video_format: ``"pt"`` (default), ``"gif"`` or ``"mp4"``.
        video_fps: frames per second of encoded videos.
        flush_secs: the longest time rows may stay buffered (default 0: not buffered).

    The logged scalars are also kept in memory, as in torchrl:
    ``logger.experiment.scalars["train/reward"]`` is the list of ``(step, value)`` pairs;
    :meth:`print_log_dir` prints where the files are.

    Examples:
        >>> with CSVLogger("my_exp", log_dir="/tmp/logs") as logger:
        ...     logger.log_scalar("train/reward", 1.5, step=10)
        >>> open("/tmp/logs/my_exp/scalars/train/reward.csv").read()
        '10,1.5\\n'
        >>> logger.experiment.scalars["train/reward"]
        [(10, 1.5)]
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | None = None,
        video_format: str = "pt",
        video_fps: int = 30,
        *,
        flush_secs: float = 0.0,
    ) -> None:
        if log_dir is None:
            log_dir = "csv_logs"
        self.video_format = video_format
        self.video_fps = video_fps
        self._flush_secs = flush_secs
        super().__init__(exp_name=exp_name, log_dir=str(log_dir))

    def _create_experiment(self) -> CSVExperiment:
        return CSVExperiment(
            os.path.join(self.log_dir, self.exp_name),
            video_format=self.video_format,
            video_fps=self.video_fps,
            flush_secs=self._flush_secs,
        )

    def output_dirs(self) -> list[str]:
        """The experiment directory (``<log_dir>/<exp_name>``)."""
        return [] if self._experiment is None else [self._experiment.log_dir]

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Appends ``step,value`` to ``scalars/<name>.csv`` (step = row index if ``None``)."""
        used = self.experiment.add_scalar(name, to_python_scalar(value), step)
        self._record_step(name, used)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        """Writes ``videos/<name>_<step>.<format>``; ``fps``/``format`` may override defaults."""
        self.experiment.add_video(name, video, step, **kwargs)

    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        """Writes the (nested, resolved) hyper-parameters to ``hparams.yaml``."""
        self.experiment.save_hparams(hparams_to_dict(cfg))

    def log_histogram(
        self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs
    ) -> None:
        """Saves the raw data to ``histograms/<name>_<step>.pt``."""
        self.experiment.add_histogram(name, data, step)

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        """Appends ``step,value`` to ``texts/<name>.csv``."""
        self.experiment.add_text(name, str(value), step)

    def truncate_after(self, step: int) -> None:
        """Drops every scalar/text row, video and histogram logged at a step above ``step``.

        Call it when resuming from a checkpoint taken at ``step`` so that the resumed run
        continues the same files without duplicate points.
        """
        step = int(step)
        for kind in ("scalars", "texts"):
            for name in self.experiment.series_names(kind):
                self.experiment.truncate(kind, name, step)
        self.experiment.truncate_media(step)
        self._last_steps = {k: min(v, step) for k, v in self._last_steps.items()}

    def state_dict(self) -> dict[str, Any]:
        """The base state plus the row count of every scalar and text series."""
        state = super().state_dict()  # flushes
        exp = self.experiment
        rows: dict[str, int] = {}
        for kind in ("scalars", "texts"):
            for name in exp.series_names(kind):
                count = exp._counts.get((kind, name))
                if count is None:
                    count = len(_read_rows(exp.series_path(kind, name)))
                rows[f"{kind}:{name}"] = count
        state["rows"] = rows
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Truncates every series back to where it was when ``state_dict`` was taken.

        Series keep their first ``rows`` rows; series absent from the state (created after
        it) are emptied.
        """
        super().load_state_dict(state_dict)
        rows = state_dict.get("rows", {})
        for kind in ("scalars", "texts"):
            for name in self.experiment.series_names(kind):
                keep = rows.get(f"{kind}:{name}", 0)
                self._keep_rows(kind, name, int(keep))

    def _keep_rows(self, kind: str, name: str, keep: int) -> None:
        exp = self.experiment
        handle = exp._handles.pop((kind, name), None)
        if handle is not None:
            handle.close()
        exp._counts.pop((kind, name), None)
        path = exp.series_path(kind, name)
        if path.exists():
            rows = _read_rows(path)
            if len(rows) > keep:
                with open(path, "w", newline="") as f:
                    csv.writer(f, lineterminator="\n").writerows(rows[:keep])
            pairs = exp.scalars.get(name) if kind == "scalars" else None
            if pairs:
                # the in-memory pairs are the last len(pairs) rows of the file
                first_row = len(rows) - len(pairs)
                exp.scalars[name] = pairs[: max(0, keep - first_row)]

    def print_log_dir(self) -> None:
        """Prints the experiment directory (``<log_dir>/<exp_name>``), as torchrl's."""
        print(f"Log dir: {self.experiment.log_dir}")

    def flush(self) -> None:
        """Writes buffered rows to disk now."""
        self.experiment.flush()

    def close(self) -> None:
        """Flushes and closes all files."""
        self.experiment.close()
        super().close()

    def __repr__(self) -> str:
        return f"CSVLogger(exp_name={self.exp_name!r}, log_dir={self.experiment.log_dir!r})"
