"""Find the runs under a directory and read the scalar series they logged.

A *run* is a directory holding ``.hydra/config.yaml`` (one ``train.py`` run, or one job
of a ``-m`` sweep: ``multirun/<algo>/<env>/<time>/<job num>/``). Its series are read from
the first of these found inside it:

- the CSV logger's files, ``<log_dir>/<exp_name>/scalars/**/*.csv`` (rows ``step,value``);
- TensorBoard event files, ``<log_dir>/<exp_name>/events.out.tfevents.*``, through
  TensorBoard's ``EventAccumulator``;
- an MLflow store, ``<tracking_uri>/mlflow.db``, through ``MlflowClient`` (one MLflow run
  per store, as the app writes it).

W&B offline runs (``wandb/offline-run-*/run-*.wandb``) are not readable: wandb has no
public reader for them; sync them and plot in the W&B UI, or log with another logger.

A directory without ``.hydra/`` whose files are those of a logger (a ``CSVLogger``
experiment directory with ``scalars/``, or a directory of TensorBoard event files) is also
a run, without a config (e.g. logs written from a Python script).
"""

from __future__ import annotations

import csv
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: ``(step, value)`` pairs of one series, sorted by step, one value per step.
Series = list[tuple[int, float]]


class PlotError(Exception):
    """A bad input: the command prints ``Error: <message>`` and exits with status 2."""


@dataclass
class Run:
    """One run: its directory, its saved config and overrides, and where its logs are."""

    path: Path
    #: The run's composed config as saved by Hydra (``.hydra/config.yaml``), not resolved;
    #: empty for a bare logger directory.
    config: dict[str, Any] = field(default_factory=dict)
    #: The command-line overrides of the run (``.hydra/overrides.yaml``).
    overrides: list[str] = field(default_factory=list)
    #: ``("csv" | "tensorboard" | "mlflow", directory)``, or None when no readable log.
    source: tuple[str, Path] | None = None
    #: Every log of the run, ``source`` first: a run resumed with another ``logger=`` or
    #: experiment name, or whose backend failed over to CSV, has its points in two of them.
    sources: list[tuple[str, Path]] = field(default_factory=list)
    #: Why no log could be read (set when ``source`` is None).
    unreadable: str = ""
    #: The directory given to :func:`find_runs` that the run was found in.
    given: str = ""
    _series: dict[str, Series] | None = field(default=None, repr=False)
    _choices: dict[str, str] | None = field(default=None, repr=False)

    @property
    def seed(self) -> Any:
        return self.config.get("seed")

    @property
    def choices(self) -> dict[str, str]:
        """The option picked in each config group (``{"model/policy": "normal", ...}``,
        Hydra's ``runtime.choices`` in ``.hydra/hydra.yaml``); empty without it."""
        if self._choices is None:
            saved = _load_yaml(self.path / ".hydra" / "hydra.yaml")
            runtime = saved.get("hydra", {}).get("runtime", {}) if isinstance(saved, dict) else {}
            choices = runtime.get("choices") if isinstance(runtime, dict) else None
            self._choices = {
                str(k): str(v) for k, v in (choices if isinstance(choices, dict) else {}).items()
            }
        return self._choices

    def series(self) -> dict[str, Series]:
        """Every scalar series of the run, by name (e.g. ``eval/return_mean``)."""
        if self._series is None:
            self._series = read_series(self) if self.source is not None else {}
        return self._series


# ----------------------------------------------------------------------------- discovery


def _load_yaml(path: Path) -> Any:
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None


def _is_tb_dir(path: Path) -> bool:
    return any(p.name.startswith("events.out.tfevents.") for p in path.iterdir() if p.is_file())


def _find_sources(run_dir: Path) -> tuple[list[tuple[str, Path]], str]:
    """The log directories of a run, CSV first, then TensorBoard, then MLflow, each kind's
    oldest first (a run resumed under another experiment name holds two, whose points
    :func:`read_series` merges); when there is none, why."""
    csv_dirs, tb_dirs, mlflow_dbs, wandb_runs = [], [], [], []
    for root, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if d not in (".hydra", "checkpoints"))
        here = Path(root)
        if "scalars" in dirs:
            csv_dirs.append(here)
        if any(f.startswith("events.out.tfevents.") for f in files):
            tb_dirs.append(here)
        if "mlflow.db" in files:
            mlflow_dbs.append(here / "mlflow.db")
        if here.name.startswith("offline-run-") and here.parent.name == "wandb":
            wandb_runs.append(here)
    kinds = (("csv", csv_dirs), ("tensorboard", tb_dirs), ("mlflow", mlflow_dbs))
    found = [
        (kind, where)
        for kind, dirs in kinds
        for where in sorted(dirs, key=lambda d: (d.stat().st_mtime, str(d)))
    ]
    if found:
        return found, ""
    if wandb_runs:
        return [], (
            "it holds only W&B offline logs, which cannot be read here (wandb has no public "
            "reader for them): `wandb sync` them and plot in the W&B UI, or log with "
            "logger=csv, tensorboard or mlflow"
        )
    return [], "it holds no CSV, TensorBoard or MLflow logs"


def _make_run(path: Path, given: str) -> Run:
    hydra = path / ".hydra"
    config = _load_yaml(hydra / "config.yaml") if hydra.is_dir() else None
    overrides = _load_yaml(hydra / "overrides.yaml") if hydra.is_dir() else None
    sources, why = _find_sources(path)
    return Run(
        path=path,
        config=config if isinstance(config, dict) else {},
        overrides=[str(o) for o in overrides] if isinstance(overrides, list) else [],
        source=sources[0] if sources else None,
        sources=sources,
        unreadable=why,
        given=given,
    )


def _job_order(path: Path) -> tuple:
    # multirun job directories are numbers: 2 before 10
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.parts)


def find_runs(paths: list[str | os.PathLike]) -> list[Run]:
    """The runs in ``paths`` (run directories, sweep directories, or any directory above
    them), in path order (sweep jobs by number). Raises :class:`PlotError` for a path that
    does not exist or holds no run."""
    runs: list[Run] = []
    seen: set[Path] = set()
    for given in paths:
        top = Path(given)
        if not top.exists():
            raise PlotError(f"{given}: no such directory (give a run or sweep directory)")
        if not top.is_dir():
            raise PlotError(f"{given}: not a directory (give a run or sweep directory)")
        found = []
        for root, dirs, _files in os.walk(top):
            here = Path(root)
            if (here / ".hydra" / "config.yaml").is_file():
                found.append(here)
                dirs[:] = []  # a run's own sub-directories are its logs
                continue
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if not found:  # logger directories written outside the app
            for root, dirs, _files in os.walk(top):
                here = Path(root)
                if "scalars" in dirs or _is_tb_dir(here):
                    found.append(here)
                    dirs[:] = []
                    continue
                dirs[:] = sorted(dirs)
        if not found:
            raise PlotError(
                f"{given}: no run found (a run directory holds .hydra/config.yaml and its "
                "logs, e.g. outputs/<algo>/<env>/<time>/ or multirun/<algo>/<env>/<time>/<job>/)"
            )
        for path in sorted(found, key=_job_order):
            resolved = path.resolve()
            if resolved not in seen:
                seen.add(resolved)
                runs.append(_make_run(path, str(given)))
    return runs


# ----------------------------------------------------------------------------- reading


def _clean(points: list[tuple[int, float]]) -> Series:
    """Sorted by step, the last value written for a step kept (a resumed run may rewrite)."""
    by_step: dict[int, float] = {}
    for step, value in points:
        by_step[int(step)] = float(value)
    return sorted(by_step.items())


def _read_csv(exp_dir: Path) -> dict[str, Series]:
    scalars = exp_dir / "scalars"
    out = {}
    for path in sorted(scalars.rglob("*.csv")):
        name = path.relative_to(scalars).with_suffix("").as_posix()
        points = []
        with open(path, newline="") as f:
            for row in csv.reader(f):
                if len(row) >= 2:
                    try:
                        points.append((int(float(row[0])), float(row[1])))
                    except ValueError:
                        continue
        if points:
            out[name] = _clean(points)
    return out


def _read_tensorboard(events_dir: Path) -> dict[str, Series]:
    from tensorboard.backend.event_processing.event_accumulator import (
        SCALARS,
        EventAccumulator,
    )

    events = EventAccumulator(str(events_dir), size_guidance={SCALARS: 0})  # 0: keep all
    # a resumed run's writer hides the points its interrupted session logged after the
    # checkpoint (purge_step); the reader drops them as intended, but warns about each
    # purge as if TensorFlow had restarted
    tb_logger = logging.getLogger("tensorboard")
    level = tb_logger.level
    tb_logger.setLevel(logging.ERROR)
    try:
        events.Reload()
    finally:
        tb_logger.setLevel(level)
    return {
        tag: _clean([(e.step, e.value) for e in events.Scalars(tag)])
        for tag in sorted(events.Tags()[SCALARS])
    }


def _read_mlflow(db: Path) -> dict[str, Series]:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as err:
        raise PlotError(
            f"{db}: reading MLflow logs needs mlflow: pip install 'rl_trainers[mlflow]'"
        ) from err
    client = MlflowClient(tracking_uri=f"sqlite:///{db.resolve()}")
    experiments = client.search_experiments()
    runs = client.search_runs([e.experiment_id for e in experiments]) if experiments else []
    if len(runs) != 1:
        raise PlotError(
            f"{db}: holds {len(runs)} MLflow runs; plot reads stores of one run, as the app "
            "writes them in each run directory"
        )
    run_id = runs[0].info.run_id
    return {
        key: _clean([(m.step, m.value) for m in client.get_metric_history(run_id, key)])
        for key in sorted(runs[0].data.metrics)
    }


def read_series(run: Run) -> dict[str, Series]:
    """Every scalar series of ``run``'s logs, the points of all its logs merged by step."""
    assert run.source is not None
    readers = {"csv": _read_csv, "tensorboard": _read_tensorboard, "mlflow": _read_mlflow}
    points: dict[str, list[tuple[int, float]]] = {}
    for kind, where in run.sources or [run.source]:
        for name, series in readers[kind](where).items():
            points.setdefault(name, []).extend(series)
    return {name: _clean(series) for name, series in sorted(points.items())}


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optimizer": {"lr": 1e-3}}`` as ``{"optimizer.lr": 1e-3}`` (lists kept whole)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out
