"""``python -m rl_trainers.plot`` (also ``rl-trainers-plot``): learning curves of runs.

    python -m rl_trainers.plot multirun/ppo/CartPole-v1/<time>             # a sweep
    python -m rl_trainers.plot outputs/ppo/CartPole-v1/* --metric train/episode_return
    python -m rl_trainers.plot <dir> --list-metrics
    python -m rl_trainers.plot <dir> --group-by optimizer.lr --band minmax --csv curves.csv
    python -m rl_trainers.plot <dir_a> <dir_b> --label baseline --label ablation

x is the number of frames collected (the step of every point the app logs); one curve per
group of runs that differ only by seed, its mean drawn with a shaded band (std or min-max).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

from .curves import Curve, Group, aggregate, common_range, group_runs, smooth
from .runs import PlotError, Run, find_runs

#: The series plotted without ``--metric``: the first one some run logged (runs with
#: ``eval.interval=0``, the recipes' default, log no periodic evaluation).
DEFAULT_METRICS = ("eval/return_mean", "train/episode_return")
BANDS = ("std", "minmax", "none")

#: The y-axis label of the series the algorithm trainers log (others: their name).
METRIC_LABELS = {
    "eval/return_mean": "evaluation return (mean over episodes)",
    "eval/return_std": "evaluation return (std over episodes)",
    "train/episode_return": "training episode return",
    "train/episode_length": "training episode length",
    "optim_steps": "optimisation steps",
}


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as one ``Error:`` line, exit status 2."""

    def error(self, message: str):
        raise PlotError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m rl_trainers.plot",
        description=(
            "Plot learning curves (x: frames collected) of rl_trainers runs: one curve per "
            "group of runs that differ only by seed, the mean with a shaded band. Reads the "
            "CSV logger's files, TensorBoard event files or an MLflow store in each run "
            "directory (W&B offline runs are not readable)."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        help="run directories, sweep directories (multirun/<algo>/<env>/<time>) or any "
        "directory above them",
    )
    parser.add_argument(
        "--metric",
        help=f"the logged series to plot (default {DEFAULT_METRICS[0]}, or "
        f"{DEFAULT_METRICS[1]} if no run has it: runs with eval.interval=0; see "
        "--list-metrics)",
    )
    parser.add_argument(
        "--list-metrics",
        action="store_true",
        help="print the series the runs logged, with how many runs have each, and exit",
    )
    parser.add_argument(
        "--out",
        default="curves.png",
        help="the figure file; its extension picks the format: png, pdf, svg, ... "
        "(default curves.png)",
    )
    parser.add_argument(
        "--csv",
        metavar="FILE",
        help="also write the aggregated curves: group,frames,mean,std,min,max,runs",
    )
    parser.add_argument(
        "--group-by",
        metavar="KEY[,KEY...]",
        default="auto",
        help="auto (default): runs whose configs differ only by seed (and logging, threads, "
        "checkpoint settings) form a group; config keys such as optimizer.lr or "
        "optimizer.lr,loss.gamma: group by these only; run: one curve per run; path: one "
        "curve per DIR given, of the runs found in it; none: all runs in one group",
    )
    parser.add_argument(
        "--band",
        choices=BANDS,
        default="std",
        help="the shaded band around the mean: std (default; one population standard "
        "deviation), minmax (the lowest and highest run) or none",
    )
    parser.add_argument(
        "--smooth",
        type=int,
        default=1,
        metavar="N",
        help="average each run's points over a trailing window of N points before "
        "aggregating (default 1: no smoothing)",
    )
    parser.add_argument(
        "--finished",
        action="store_true",
        help="only the runs that finished (with a summary.json; default: runs still going too)",
    )
    parser.add_argument(
        "--common-range",
        action="store_true",
        help="draw and write each curve only over the frames all its runs cover (default: "
        "each run counts from its first to its last logged step, so a curve's ends can be "
        "the mean of fewer runs)",
    )
    parser.add_argument(
        "--label",
        action="append",
        metavar="TEXT",
        help="the legend label of a curve, once per curve in the order they are drawn "
        "(default: the labels --group-by gives; an Error lists them in order)",
    )
    parser.add_argument("--title", help="the figure title (default: the metric and runs)")
    parser.add_argument(
        "--ylabel", help="the y-axis label (default: a description of the metric, or its name)"
    )
    parser.add_argument("--dpi", type=int, default=150, help="resolution of a PNG (default 150)")
    return parser


def _readable(runs: list[Run]) -> list[Run]:
    good = [r for r in runs if r.source is not None]
    if not good:
        why = runs[0].unreadable
        where = runs[0].path if len(runs) == 1 else f"{runs[0].path} (and {len(runs) - 1} more)"
        raise PlotError(f"{where}: no logs to plot: {why}")
    for run in runs:
        if run.source is None:
            print(f"warning: {run.path} left out: {run.unreadable}", file=sys.stderr)
    return good


def list_metrics(runs: list[Run]) -> str:
    counts: dict[str, int] = {}
    for run in runs:
        for name in run.series():
            counts[name] = counts.get(name, 0) + 1
    width = max((len(n) for n in counts), default=0)
    lines = [f"{name:<{width}}  {n} of {len(runs)} runs" for name, n in sorted(counts.items())]
    return "\n".join(lines)


def _select(runs: list[Run], metric: str) -> list[Run]:
    having = [r for r in runs if metric in r.series()]
    if not having:
        names = sorted({n for r in runs for n in r.series()})
        raise PlotError(
            f"--metric {metric}: no run logged it; available: {', '.join(names) or '(none)'}"
        )
    for run in runs:
        if run not in having:
            print(f"warning: {run.path} left out: it has no {metric} series", file=sys.stderr)
    return having


def _relabel(groups: list[Group], labels: list[str]) -> list[Group]:
    """The groups under the labels given with ``--label``, one per group, in order."""
    if len(labels) != len(groups):
        found = "; ".join(f"{i + 1}. {g.label} ({len(g.runs)} runs)" for i, g in enumerate(groups))
        raise PlotError(
            f"--label given {len(labels)} time(s) for {len(groups)} curve(s); give one per "
            f"curve, in this order: {found}"
        )
    return [Group(label, g.runs) for label, g in zip(labels, groups)]


def _title(metric: str, runs: list[Run]) -> str:
    pairs = {
        (
            str(r.config.get("algorithm", "")).upper(),
            str(r.config.get("env", {}).get("env_name", "")),
        )
        for r in runs
        if isinstance(r.config.get("env"), dict)
    }
    if len(pairs) == 1:
        algo, env = next(iter(pairs))
        return f"{algo} on {env}: {metric}"
    return metric


def _seeds_note(curves: list[Curve], band: str) -> str:
    sizes = sorted({c.runs for c in curves})
    runs = f"{sizes[0]} run{'s' if sizes[0] > 1 else ''}" if len(sizes) == 1 else "runs"
    shade = {"std": "mean ± std", "minmax": "mean, min-max", "none": "mean"}[band]
    return f"{shade} over {runs} per curve" if max(sizes) > 1 else "one run per curve"


def draw(curves: list[Curve], ylabel: str, out: Path, band: str, title: str, dpi: int = 150):
    """Draw the curves with matplotlib's Agg backend (no display needed) into ``out``; the
    (closed) figure is returned, its legend below the axes."""
    try:
        import matplotlib
    except ImportError as err:
        raise PlotError("plotting needs matplotlib: pip install 'rl_trainers[plot]'") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    # the legend goes below the axes, never over the curves: the figure grows with its rows
    columns = 1 if max((len(c.label) for c in curves), default=0) > 45 else 2
    rows = -(-len(curves) // columns)
    fig, ax = plt.subplots(figsize=(7, 4.2 + 0.22 * (rows + 1)), layout="constrained")
    supported = fig.canvas.get_supported_filetypes()
    if out.suffix.lstrip(".").lower() not in supported:
        plt.close(fig)
        raise PlotError(
            f"--out {out}: unknown figure format {out.suffix or '(no extension)'!r}; "
            f"use one of {', '.join('.' + e for e in sorted(supported))}"
        )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    same_size = len({c.runs for c in curves}) == 1  # then the legend title gives the size
    for i, curve in enumerate(curves):
        color = colors[i % len(colors)]
        label = curve.label + ("" if same_size else f" (n={curve.runs})")
        ax.plot(curve.steps, curve.mean, color=color, linewidth=1.8, label=label)
        if len(curve.steps) == 1:
            ax.plot(curve.steps, curve.mean, "o", color=color)
        if band != "none" and curve.runs > 1:
            lo, hi = (
                (curve.mean - curve.std, curve.mean + curve.std)
                if band == "std"
                else (curve.min, curve.max)
            )
            ax.fill_between(curve.steps, lo, hi, color=color, alpha=0.2, linewidth=0)
    ax.set_xlabel("frames collected")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.legend(
        loc="outside lower center",
        ncols=columns,
        title=_seeds_note(curves, band),
        fontsize="small",
        title_fontsize="small",
        frameon=False,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return fig


def write_csv(curves: list[Curve], path: Path) -> None:
    """The aggregated curves, one row per group and step (``runs``: runs covering it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["group", "frames", "mean", "std", "min", "max", "runs"])
        for c in curves:
            for i, step in enumerate(c.steps):
                writer.writerow(
                    [
                        c.label,
                        int(step),
                        repr(float(c.mean[i])),
                        repr(float(c.std[i])),
                        repr(float(c.min[i])),
                        repr(float(c.max[i])),
                        int(c.count[i]),
                    ]
                )


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smooth < 1:
        raise PlotError(f"--smooth {args.smooth}: a number of points, 1 or more")
    runs = find_runs(args.paths)
    if args.finished:
        runs = [r for r in runs if (r.path / "summary.json").is_file()]
        if not runs:
            raise PlotError(f"--finished: no run under {', '.join(args.paths)} has finished")
    runs = _readable(runs)
    if not any(r.series() for r in runs):
        where = ", ".join(args.paths)
        raise PlotError(
            f"{where}: the {len(runs)} run(s) found logged no series (a run logs its scalars "
            "on batches crossing a multiple of trainer.log_interval frames: one shorter than "
            "that logs nothing; set trainer.log_interval lower)"
        )
    if args.list_metrics:
        print(list_metrics(runs))
        return 0
    if args.metric is None:
        logged = {n for r in runs for n in r.series()}
        args.metric = next((m for m in DEFAULT_METRICS if m in logged), DEFAULT_METRICS[0])
        if args.metric != DEFAULT_METRICS[0]:
            print(
                f"note: no run logged {DEFAULT_METRICS[0]} (periodic evaluations need "
                f"eval.interval > 0): plotting {args.metric}",
                file=sys.stderr,
            )
    runs = _select(runs, args.metric)
    groups = group_runs(runs, [k.strip() for k in args.group_by.split(",") if k.strip()])
    if args.label:
        groups = _relabel(groups, args.label)
    curves = [
        aggregate(g.label, [smooth(r.series()[args.metric], args.smooth) for r in g.runs])
        for g in groups
    ]
    if args.common_range:
        curves = [common_range(c) for c in curves]
        for curve in curves:
            if not len(curve.steps):
                raise PlotError(
                    f"--common-range: the runs of the curve {curve.label!r} share no logged frames"
                )
    out = Path(args.out)
    ylabel = args.ylabel or METRIC_LABELS.get(args.metric, args.metric)
    title = args.title or _title(args.metric, runs)
    draw(curves, ylabel, out, args.band, title, args.dpi)
    if args.csv:
        write_csv(curves, Path(args.csv))
    sizes = ", ".join(f"{g.label or 'runs'}: {len(g.runs)}" for g in groups)
    print(f"Wrote {out} ({len(groups)} curve(s) from {len(runs)} run(s); {sizes})")
    if args.csv:
        print(f"Wrote {args.csv}")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """The console entry point: ``Error: <message>`` and exit status 2 on a bad input."""
    try:
        code = run(argv)
    except PlotError as err:
        print(f"Error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code)
