"""Group runs that differ only by seed and aggregate their series into one curve per group.

Runs are grouped by their saved config (``.hydra/config.yaml``, flattened to
``optimizer.lr``-style keys) with ``seed`` and the keys that cannot change what is learned
(:data:`IGNORED_KEYS`: logging, progress bar, threads, checkpoint and resume settings, ...)
left out, a ``None`` value the same as a missing key (a field a later version added) and
this package's builders (``_target_``) compared by name, not by module path; ``group_by=["optimizer.lr"]`` groups by the listed keys only, ``["run"]`` keeps
each run alone, ``["path"]`` pools the runs of each directory given to ``find_runs`` and
``["none"]`` pools every run.

A group's curve is sampled at every step (frames collected) any of its runs logged; each
run contributes, between its first and last logged step, its value there (linearly
interpolated between two logged steps when it did not log that step itself), so runs that
log at the same steps (e.g. ``eval/return_mean``, every ``trainer.log_interval`` frames)
are averaged point by point without interpolation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .runs import PlotError, Run, Series, flatten

#: Config keys (or prefixes ending in ``.``) that do not change the learning curve; runs
#: that differ only in them are seeds of the same group.
IGNORED_KEYS = (
    "seed",
    "logger.",
    "device",
    "env.device",
    "trainer._config_",
    "trainer.progress_bar",
    "trainer.num_threads",
    "trainer.resume",
    "trainer.resume_from",
    "trainer.save_trainer_interval",
    "trainer.keep_checkpoints",
    "trainer.keep_freed_memory",
    "trainer.compile",
    "trainer.compile_mode",
    "eval.video",
    "eval.video_fps",
    "eval.video_max_frames",
)

#: The ``--group-by`` values that are not config keys.
GROUP_MODES = ("auto", "run", "path", "none")


def _ignored(key: str) -> bool:
    """Whether grouping leaves ``key`` out: one of :data:`IGNORED_KEYS`, a key under one of
    its prefixes, or the config group a prefix names (``logger``, as ``logger=csv`` sets it)."""
    return any(
        key.startswith(k) or key == k[:-1] if k.endswith(".") else key == k for k in IGNORED_KEYS
    )


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_show(v) for v in value) + "]"
    return str(value)


@dataclass
class Group:
    """Runs plotted as one curve, and the legend label that tells it from the others."""

    label: str
    runs: list[Run]


def _override_key(override: str) -> str:
    return override.lstrip("+~").partition("=")[0]


def _labels_from_overrides(groups: list[list[Run]]) -> list[str] | None:
    """Labels made of the overrides (those of keys grouping leaves out, :data:`IGNORED_KEYS`,
    left out) that are not common to every group, if the overrides tell the groups apart
    (each group's runs sharing them)."""
    per_group = []
    for runs in groups:
        sets = {frozenset(o for o in r.overrides if not _ignored(_override_key(o))) for r in runs}
        if len(sets) != 1:
            return None
        per_group.append(next(iter(sets)))
    common = frozenset.intersection(*per_group) if per_group else frozenset()
    labels = []
    for runs, overrides in zip(groups, per_group):
        own = [o for o in runs[0].overrides if o in overrides and o not in common]
        labels.append(", ".join(own))
    if len(set(labels)) != len(labels) or (len(labels) > 1 and "" in labels):
        return None
    return labels


#: Keys a label names first when they tell groups apart (what a reader looks for first).
LEADING_KEYS = ("algorithm", "env.env_name")

_MISSING = object()


def distinguishing_keys(keys: list[dict[str, Any]]) -> list[str]:
    """Config keys whose values tell every group apart: :data:`LEADING_KEYS` where they
    differ, then, greedily, the key that splits the most groups still sharing a label
    (among equals the key most groups have, then by name). Leading keys first, then by
    name."""
    names = sorted({k for d in keys for k in d})
    differing = [n for n in names if len({_freeze(d.get(n, _MISSING)) for d in keys}) > 1]

    def classes(chosen: list[str]) -> int:
        return len({tuple(_freeze(d.get(n, _MISSING)) for n in chosen) for d in keys})

    wanted = classes(differing)
    chosen = [n for n in LEADING_KEYS if n in differing]
    while classes(chosen) < wanted:
        rest = [n for n in differing if n not in chosen]
        best = max(
            rest,
            key=lambda n: (classes([*chosen, n]), sum(n in d for d in keys), [-ord(c) for c in n]),
        )
        chosen.append(best)
    leading = [n for n in LEADING_KEYS if n in chosen]
    return leading + sorted(n for n in chosen if n not in leading)


def _labels_from_config(keys: list[dict[str, Any]], groups: list[list[Run]]) -> list[str]:
    """Labels made of the config values that tell the groups apart
    (:func:`distinguishing_keys`; a key a group's config lacks is left out of its label).
    A node's ``_target_`` that a config group's option set is named by that option, as on
    the command line (``model/policy=normal``, not the builder's import path)."""
    chosen = distinguishing_keys(keys)
    labels = []
    for d, runs in zip(keys, groups):
        parts = []
        for name in (n for n in chosen if n in d):
            group = name.removesuffix("._target_").replace(".", "/")
            option = runs[0].choices.get(group) if name.endswith("._target_") else None
            parts.append(f"{group}={option}" if option else f"{name}={_show(d[name])}")
        labels.append(", ".join(parts))
    return labels


def group_runs(runs: list[Run], group_by: list[str] | None = None) -> list[Group]:
    """The runs in groups, in the order their first run comes (see the module docstring)."""
    mode = group_by or ["auto"]
    if mode == ["none"]:
        return [Group("all runs" if len(runs) > 1 else _short(runs[0]), list(runs))]
    if mode == ["run"]:
        return [Group(_short(r), [r]) for r in runs]
    if mode == ["path"]:
        by_path: dict[str, list[Run]] = {}
        for run in runs:
            by_path.setdefault(run.given, []).append(run)
        return [Group(given, members) for given, members in by_path.items()]
    if any(m in GROUP_MODES for m in mode):
        if len(mode) != 1:
            raise PlotError(
                f"--group-by {','.join(mode)}: {', '.join(GROUP_MODES)} cannot be combined "
                "with config keys"
            )
    flat = [flatten(r.config) for r in runs]
    if mode == ["auto"]:
        keys = [
            {k: _comparable(k, v) for k, v in f.items() if not _ignored(k) and v is not None}
            if r.config
            else {"run": str(r.path)}
            for r, f in zip(runs, flat)
        ]
    else:
        for name in mode:
            missing = [r for r, f in zip(runs, flat) if name not in f]
            if len(missing) == len(runs):
                known = sorted({k for f in flat for k in f})
                hint = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
                raise PlotError(
                    f"--group-by {name}: no run has this config key (keys: {hint}; or one of "
                    f"{', '.join(GROUP_MODES)})"
                )
        keys = [{n: f.get(n) for n in mode} for f in flat]
    order: dict[Any, int] = {}
    members: list[list[Run]] = []
    member_keys: list[dict[str, Any]] = []
    for run, key in zip(runs, keys):
        frozen = _freeze(key)
        if frozen not in order:
            order[frozen] = len(members)
            members.append([])
            member_keys.append(key)
        members[order[frozen]].append(run)
    if len(members) == 1:
        labels = [_common_label(members[0])]
    elif mode == ["auto"]:
        labels = _labels_from_overrides(members) or _labels_from_config(member_keys, members)
    else:
        labels = [", ".join(f"{n}={_show(k.get(n))}" for n in mode) for k in member_keys]
    return [Group(label, rs) for label, rs in zip(_told_apart(labels, members), members)]


def _comparable(key: str, value: Any) -> Any:
    """A config value as groups compare it: one of this package's builders (a ``_target_``
    in ``rl_trainers.``) by its name alone, so that runs of the same settings saved by
    versions of the code with other module paths group together."""
    if key.endswith("._target_") and isinstance(value, str) and value.startswith("rl_trainers."):
        return "rl_trainers." + value.rpartition(".")[2]
    return value


def _told_apart(labels: list[str], groups: list[list[Run]]) -> list[str]:
    """``labels``, each one that several groups share followed by its first run's directory."""
    shared = {label for label in labels if labels.count(label) > 1}
    return [
        f"{label} ({_short(runs[0])})" if label in shared else label
        for label, runs in zip(labels, groups)
    ]


def _short(run: Run) -> str:
    parts = run.path.resolve().parts
    return "/".join(parts[-2:])


def _common_label(runs: list[Run]) -> str:
    cfg = runs[0].config
    if cfg.get("algorithm") and isinstance(cfg.get("env"), dict):
        return f"{str(cfg['algorithm']).upper()} {cfg['env'].get('env_name', '')}".strip()
    return _short(runs[0]) if len(runs) == 1 else "all runs"


# ----------------------------------------------------------------------------- aggregation


def smooth(series: Series, window: int) -> Series:
    """The trailing mean of each point and the ``window - 1`` points before it."""
    if window <= 1 or not series:
        return series
    values = np.array([v for _, v in series], dtype=float)
    sums = np.cumsum(np.insert(values, 0, 0.0))
    out = []
    for i, (step, _) in enumerate(series):
        lo = max(0, i + 1 - window)
        out.append((step, float((sums[i + 1] - sums[lo]) / (i + 1 - lo))))
    return out


@dataclass
class Curve:
    """A group's aggregated series: at each step, statistics over the runs covering it."""

    label: str
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    min: np.ndarray
    max: np.ndarray
    count: np.ndarray
    runs: int


def aggregate(label: str, series: list[Series]) -> Curve:
    """The mean, population std, min and max over ``series`` at every step any of them has
    (a series counts between its first and last step, interpolated linearly in between)."""
    steps = np.array(sorted({s for points in series for s, _ in points}), dtype=float)
    table = np.full((len(series), len(steps)), math.nan)
    for i, points in enumerate(series):
        xs = np.array([s for s, _ in points], dtype=float)
        ys = np.array([v for _, v in points], dtype=float)
        inside = (steps >= xs[0]) & (steps <= xs[-1])
        table[i, inside] = np.interp(steps[inside], xs, ys)
    present = ~np.isnan(table)
    count = present.sum(axis=0)
    filled = np.where(present, table, 0.0)
    mean = filled.sum(axis=0) / count
    std = np.sqrt(np.where(present, (table - mean) ** 2, 0.0).sum(axis=0) / count)
    return Curve(
        label=label,
        steps=steps,
        mean=mean,
        std=std,
        min=np.nanmin(table, axis=0),
        max=np.nanmax(table, axis=0),
        count=count,
        runs=len(series),
    )


def common_range(curve: Curve) -> Curve:
    """``curve`` over the steps every one of its runs covers (its ends, where some runs had
    not started or had already stopped, cut off)."""
    keep = curve.count == curve.runs
    return Curve(
        label=curve.label,
        steps=curve.steps[keep],
        mean=curve.mean[keep],
        std=curve.std[keep],
        min=curve.min[keep],
        max=curve.max[keep],
        count=curve.count[keep],
        runs=curve.runs,
    )
