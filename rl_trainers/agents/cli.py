"""The commands on trained runs: ``rl-trainers eval|enjoy|export|results`` (dispatched by
:mod:`rl_trainers.app.cli`) and ``python -m rl_trainers.<command>``. A bad input is one
``Error: ...`` line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rl_trainers.errors import warnings_as_lines


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2, as every other bad input
        print(f"Error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 2


def _add_run_and_checkpoint(p: argparse.ArgumentParser) -> None:
    """RUN_DIR and which of its policies: the options eval, enjoy and export share."""
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (holds .hydra/)")
    p.add_argument(
        "--checkpoint",
        default=None,
        help="a checkpoint file of this run (default: its latest checkpoint)",
    )
    p.add_argument(
        "--best",
        action="store_true",
        help="the policy of the run's best periodic evaluation (runs with eval.interval > 0)",
    )


# ----------------------------------------------------------------------------- eval


def eval_parser(prog: str = "rl-trainers eval") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Evaluate a trained run; writes eval.json in RUN_DIR.")
    _add_run_and_checkpoint(p)
    p.add_argument("--episodes", type=int, default=None, help="default: the run's eval.episodes")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="evaluation seed (default: the run's own, seed+10000: reproduces summary.json)",
    )
    p.add_argument("--stochastic", action="store_true", help="sample actions (default: mode)")
    return p


def _refuse_below_one(options: dict[str, int | None]) -> None:
    """One ``Error:`` line for a count option below 1, before anything is loaded."""
    from rl_trainers.errors import RunError

    for option, value in options.items():
        if value is not None and value < 1:
            raise RunError(f"{option} {value}: at least 1")


def eval_main(argv: Sequence[str] | None = None) -> int:
    args = eval_parser().parse_args(argv)  # before torch is imported: --help at once
    _refuse_below_one({"--episodes": args.episodes})
    from rl_trainers.agents.policy import evaluate, load_policy

    which = "best" if args.best else "latest"
    policy = load_policy(args.run_dir, which=which, checkpoint=args.checkpoint)
    result = evaluate(
        policy,
        episodes=args.episodes,
        seed=args.seed,
        deterministic=False if args.stochastic else None,
    )
    summary = {
        "algorithm": policy.algorithm,
        "env": policy.env_name,
        "frames": policy.frames,
        **result.summary(),
    }
    s = summary
    print(
        f"{policy.algorithm} {policy.env_name} ({policy.frames} frames, {s['eval_episodes']} "
        f"episodes, seed {s['seed']}): return {s['eval_return_mean']:.2f} ± "
        f"{s['eval_return_std']:.2f}, length {s['eval_length_mean']:.1f} ± "
        f"{s['eval_length_std']:.1f}"
    )
    out = Path(policy.run_dir) / "eval.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- enjoy


def enjoy_parser(prog: str = "rl-trainers enjoy") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Watch a trained agent: a window, or a video file.")
    _add_run_and_checkpoint(p)
    p.add_argument(
        "--video",
        default=None,
        help="write the episodes to this file (.mp4, .gif; default without a display: "
        "RUN_DIR/enjoy.mp4)",
    )
    p.add_argument("--episodes", type=int, default=1, help="how many episodes (default 1)")
    p.add_argument(
        "--seed", type=int, default=0, help="the first episode's reset seed, +1 each (default 0)"
    )
    p.add_argument("--stochastic", action="store_true", help="sample actions (default: mode)")
    p.add_argument(
        "--max-steps", type=int, default=10_000, help="steps per episode at most (default 10000)"
    )
    return p


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


#: The video files ``enjoy`` writes: these through ffmpeg, and ``.gif`` (without ffmpeg).
_FFMPEG_SUFFIXES = (".mp4", ".mkv", ".avi", ".mov", ".webm")


def _check_video(path: Path) -> None:
    """A video file ``enjoy`` can write, with what it needs installed: else a
    :class:`RunError`, before anything is loaded, rendered or written."""
    from rl_trainers.errors import RunError

    suffix = path.suffix.lower()
    if suffix not in (*_FFMPEG_SUFFIXES, ".gif"):
        raise RunError(
            f"--video {path}: a video file ends in .mp4 or .gif "
            f"(also {', '.join(_FFMPEG_SUFFIXES[1:])})"
        )
    try:
        import imageio.v2  # noqa: F401
    except ImportError:
        raise RunError(
            'writing a video needs imageio: pip install "rl_trainers[video]" (imageio[ffmpeg])'
        ) from None
    if suffix in _FFMPEG_SUFFIXES:
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise RunError(
                f'writing {path.suffix} videos needs ffmpeg: pip install "rl_trainers[video]" '
                "(imageio[ffmpeg]), or give --video out.gif"
            ) from None


def _video_writer(path: Path, fps: int):
    _check_video(path)
    import imageio.v2 as imageio

    if path.suffix.lower() in _FFMPEG_SUFFIXES:
        return imageio.get_writer(str(path), fps=fps, macro_block_size=1)
    return imageio.get_writer(str(path), duration=1000 / fps, loop=0)


def enjoy_main(argv: Sequence[str] | None = None) -> int:
    args = enjoy_parser().parse_args(argv)
    _refuse_below_one({"--episodes": args.episodes, "--max-steps": args.max_steps})
    video = Path(args.video) if args.video else None
    if video is None and not _has_display():
        video = Path(args.run_dir) / "enjoy.mp4"
    if video is not None:
        _check_video(video)  # before torch is imported, anything loaded or written
    from rl_trainers.agents.policy import load_policy, make_env
    from rl_trainers.errors import RunError

    mode = "rgb_array" if video is not None else "human"
    if video is not None:
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        video.parent.mkdir(parents=True, exist_ok=True)
    policy = load_policy(
        args.run_dir, which="best" if args.best else "latest", checkpoint=args.checkpoint
    )
    try:
        env = make_env(args.run_dir, render_mode=mode)
    except TypeError as err:
        if "render_mode" not in str(err):
            raise
        raise RunError(
            f"{policy.env_name} cannot render: its constructor takes no render_mode argument; "
            "to watch it, give the env's __init__ a render_mode=None argument, "
            "metadata = {'render_modes': ['rgb_array']} and a render() returning an RGB array "
            f"(rl-trainers eval {args.run_dir} plays it without rendering)"
        ) from None
    fps = int(env.metadata.get("render_fps") or 30)
    writer = _video_writer(video, fps) if video is not None else None
    try:
        for episode in range(args.episodes):
            obs, _ = env.reset(seed=args.seed + episode)
            total, steps, done = 0.0, 0, False
            while not done and steps < args.max_steps:
                if writer is not None:
                    frame = env.render()
                    if frame is None:
                        raise RunError(
                            f"{policy.env_name} renders no rgb_array frames (its render() "
                            "returned None): to watch it, make render() return an RGB array "
                            "when render_mode='rgb_array' (rl-trainers eval "
                            f"{args.run_dir} plays it without rendering)"
                        )
                    writer.append_data(frame)
                action = policy.act(obs, deterministic=not args.stochastic)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                steps += 1
                done = terminated or truncated
            print(f"episode {episode}: return {total:.2f}, length {steps}")
    finally:
        env.close()
        if writer is not None:
            writer.close()
    if video is not None:
        print(f"wrote {video}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- export


def export_parser(prog: str = "rl-trainers export") -> argparse.ArgumentParser:
    from rl_trainers.agents import EXPORT_FORMATS as FORMATS

    p = _Parser(
        prog=prog,
        description="Write the trained policy as one standalone file (torch, or onnxruntime).",
    )
    _add_run_and_checkpoint(p)
    p.add_argument(
        "out",
        metavar="OUT",
        help="the file to write; its extension says the format: .pt2 exported, .ts or .pt "
        "torchscript, .onnx onnx",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="exported (torch.export, load with torch.export.load), torchscript "
        "(torch.jit.load) or onnx (onnxruntime; needs the onnx extra); default: the one "
        "OUT's extension stands for. A format that contradicts the extension is an error",
    )
    return p


def export_main(argv: Sequence[str] | None = None) -> int:
    import warnings

    args = export_parser().parse_args(argv)
    from rl_trainers.agents import export_format

    fmt = export_format(args.out, args.format, cli=True)  # before torch is imported
    from rl_trainers.agents.export import export_policy
    from rl_trainers.agents.policy import load_policy

    if fmt == "onnx":
        from rl_trainers.agents.export import _require_onnx

        _require_onnx()
    policy = load_policy(
        args.run_dir, which="best" if args.best else "latest", checkpoint=args.checkpoint
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = export_policy(policy, args.out, fmt)
    kind = "int64 action indices" if policy.action_spec.dtype != _float() else "float32 actions"
    print(
        f"wrote {out} ({fmt}): float32 observations [batch, "
        f"{', '.join(map(str, policy.observation_shape))}] -> {kind}"
    )
    return 0


def _float():
    import torch

    return torch.float32


# ----------------------------------------------------------------------------- results


def results_parser(prog: str = "rl-trainers results") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description=(
            "A table of runs grouped by what differs in their configs except the seed: final "
            "evaluation return (mean ± sample std over runs; interquartile mean with a bootstrap 95% "
            "interval when rliable is installed), the distinct seeds (and the runs, where more), "
            "frames, training time (every launch of a resumed run)."
        ),
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run, sweep or outputs directories")
    p.add_argument(
        "--format",
        choices=("text", "csv", "markdown"),
        default="text",
        help="text (default), csv or markdown",
    )
    p.add_argument(
        "--group-by",
        metavar="KEY[,KEY...]",
        default="auto",
        help="which runs form a row, as rl-trainers-plot groups them: auto (default; runs "
        "that differ only by seed), config keys (optimizer.lr), run (one row per run, e.g. "
        "to compare seeds), path (one row per DIR) or none (one row)",
    )
    return p


_rliable_warned: list[bool] = []


def _warn_broken_rliable(err: Exception) -> None:
    """Say once why the IQM column is missing when rliable is there but cannot import."""
    if _rliable_warned:
        return
    _rliable_warned.append(True)
    print(
        f"Warning: rliable is installed but does not import ({type(err).__name__}: {err}); "
        "the IQM column is left out. pip install 'rl_trainers[results]' installs versions "
        "that work together.",
        file=sys.stderr,
    )


def _iqm(values: list[float]) -> tuple[float, float, float] | None:
    """rliable's interquartile mean and its stratified-bootstrap 95% interval."""
    import numpy as np

    try:
        from rliable import library as rly
        from rliable import metrics
    except ModuleNotFoundError as err:
        if err.name != "rliable":
            _warn_broken_rliable(err)
        return None
    except Exception as err:  # noqa: BLE001 - installed, but broken by its dependencies
        _warn_broken_rliable(err)
        return None
    scores = {"g": np.asarray(values, dtype=np.float64).reshape(-1, 1)}
    point, interval = rly.get_interval_estimates(
        scores, lambda x: np.array([metrics.aggregate_iqm(x)]), reps=2000
    )
    return float(point["g"][0]), float(interval["g"][0][0]), float(interval["g"][1][0])


def results_rows(dirs: Sequence[str], group_by: Sequence[str] = ("auto",)) -> list[dict]:
    from rl_trainers.plot.curves import group_runs
    from rl_trainers.plot.runs import find_runs

    runs = [r for r in find_runs(list(dirs)) if (r.path / "summary.json").is_file()]
    if not runs:
        from rl_trainers.errors import RunError

        raise RunError(f"{', '.join(dirs)}: no finished run (no summary.json) found")
    rows = []
    for group in group_runs(runs, list(group_by)):
        summaries = [json.loads((r.path / "summary.json").read_text()) for r in group.runs]
        returns = [float(s["eval_return_mean"]) for s in summaries]
        n = len(returns)
        mean = statistics.fmean(returns)
        std = statistics.stdev(returns) if n > 1 else None  # over runs: the sample std
        frames = sorted({s.get("frames", 0) for s in summaries})
        row = {
            "group": group.label,
            "algorithm": _distinct(s.get("algorithm") for s in summaries),
            "env": _distinct(s.get("env") for s in summaries),
            # a run without a saved seed is counted as a seed of its own
            "seeds": len({r.seed if r.seed is not None else r.path for r in group.runs}),
            "runs": n,
            "return_mean": mean,
            "return_std": std,
            "iqm": None,
            "iqm_low": None,
            "iqm_high": None,
            "frames": frames[0] if len(frames) == 1 else f"{frames[0]}-{frames[-1]}",
            "train_time_s": sum(_train_time(s) for s in summaries) / n,
        }
        iqm = _iqm(returns)
        if iqm is not None:
            row["iqm"], row["iqm_low"], row["iqm_high"] = iqm
        rows.append(row)
    return rows


def _distinct(values: Iterable[str | None]) -> str | None:
    """A row's cell for the runs' ``values``: each value once, in the runs' order
    (``ppo, sac`` for a row that pools both)."""
    return ", ".join(dict.fromkeys(v for v in values if v is not None)) or None


def _train_time(summary: dict) -> float:
    """A run's training time over all its launches (``total_train_time_s``; a summary written
    before that field: this launch's, or its wall time)."""
    for key in ("total_train_time_s", "train_time_s", "wall_time_s"):
        if summary.get(key) is not None:
            return float(summary[key])
    return 0.0


def _table(rows: list[dict], fmt: str) -> str:
    import csv
    import io

    has_iqm = any(r["iqm"] is not None for r in rows)
    header = ["group", "algorithm", "env", "seeds", "return (mean ± std)"]
    if has_iqm:
        header.append("IQM [95% CI]")
    header += ["frames", "train time (s)"]
    if fmt == "csv":
        buf = io.StringIO()
        keys = list(rows[0])
        writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    lines = []
    for r in rows:
        cells = [
            str(r["group"]),
            str(r["algorithm"]),
            str(r["env"]),
            str(r["seeds"]) + (f" ({r['runs']} runs)" if r["runs"] > r["seeds"] else ""),
            f"{r['return_mean']:.2f}"
            + ("" if r["return_std"] is None else f" ± {r['return_std']:.2f}"),
        ]
        if has_iqm:
            cells.append(
                "n/a"
                if r["iqm"] is None
                else f"{r['iqm']:.2f} [{r['iqm_low']:.2f}, {r['iqm_high']:.2f}]"
            )
        cells += [str(r["frames"]), f"{r['train_time_s']:.1f}"]
        lines.append(cells)
    if fmt == "markdown":
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c) + " |" for c in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += [
        "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        for cells in lines
    ]
    return "\n".join(out)


def results_main(argv: Sequence[str] | None = None) -> int:
    args = results_parser().parse_args(argv)
    group_by = [k.strip() for k in args.group_by.split(",") if k.strip()]
    print(_table(results_rows(args.dirs, group_by), args.format))
    return 0


# ----------------------------------------------------------------------------- dispatch

_MAINS = {"eval": eval_main, "enjoy": enjoy_main, "export": export_main, "results": results_main}


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors that are the user's mistakes. ``CheckpointError`` only once its module is
    loaded: a command that never loaded it cannot raise it, and loading it imports torch,
    which ``--help`` and ``results`` do without."""
    from rl_trainers.errors import ConfigError, RunError
    from rl_trainers.plot.runs import PlotError

    errors: tuple[type[Exception], ...] = (RunError, PlotError, ConfigError)
    checkpoint = sys.modules.get("rl_trainers.core.checkpoint")
    return errors if checkpoint is None else (*errors, checkpoint.CheckpointError)


#: rl-zoo's options that find a run by algorithm, env and log folder (``python -m
#: rl_zoo3.enjoy --algo ppo --env CartPole-v1 -f logs/``), where these commands take its directory
RL_ZOO_RUN_OPTIONS = ("--algo", "--env", "-f", "--folder", "--exp-id")

#: rl-zoo enjoy's other options, as these commands spell them (None: nothing to pass)
RL_ZOO_ENJOY_OPTIONS = {
    "--load-best": "--best",
    "--no-render": None,  # without a display enjoy writes a video
    "--deterministic": None,  # the default here
    "--stochastic": "--stochastic",
    "-n": None,  # timesteps: enjoy plays --episodes N
    "--n-timesteps": None,
}


def rl_zoo_run_dir_hint(command: str, argv: Sequence[str]) -> str:
    """The ``Error:`` text for rl-zoo's way of naming a run: the run directory to pass, the
    newest run of that algorithm and env under the folder (``outputs`` by default, where
    the training commands put them) when there is one."""

    found: dict[str, str] = {}
    rest: list[str] = []  # the words that are not rl-zoo's: OUT of export, --episodes 3
    words = iter(argv)
    for word in words:
        name, eq, value = word.partition("=")
        if name in RL_ZOO_RUN_OPTIONS:
            found[name] = value if eq else next(words, "")
        elif name in RL_ZOO_ENJOY_OPTIONS:
            if name in ("-n", "--n-timesteps") and not eq:
                next(words, "")  # its value
            if RL_ZOO_ENJOY_OPTIONS[name]:
                rest.append(RL_ZOO_ENJOY_OPTIONS[name])
        else:
            rest.append(word)
    values = {i + 1 for i, word in enumerate(rest) if word in ("--checkpoint", "--format")}
    if command == "export" and all(w.startswith("-") or i in values for i, w in enumerate(rest)):
        rest.append("policy.pt2")  # export's OUT, which rl-zoo has no counterpart of
    algo, env = found.get("--algo"), found.get("--env")
    folder = Path(found.get("-f") or found.get("--folder") or "outputs")
    runs = []
    if algo and env:
        runs = sorted(p.parent for p in (folder / algo / env).glob("*/.hydra"))
    said = "rl-zoo's --algo, --env and -f name a run; rl-trainers {0} takes its directory:"
    if runs:
        newest = " ".join(["rl-trainers", command, str(runs[-1]), *rest])
        return (
            f"{said.format(command)} {newest} (the newest of {len(runs)} under {runs[-1].parent})"
        )
    where = f"{folder}/{algo or '<algorithm>'}/{env or '<env id>'}"
    return (
        f"{said.format(command)} {' '.join(['rl-trainers', command, 'RUN_DIR', *rest])}; "
        "training puts a run in outputs/<algorithm>/<env id>/<date> unless hydra.run.dir "
        f"chose another (no run under {where} here)"
    )


def run_command(command: str, argv: Sequence[str] | None = None) -> int:
    """Run one command; the user's mistakes become ``Error: ...`` and status 2."""
    words = list(sys.argv[1:] if argv is None else argv)
    if command != "results" and any(word.partition("=")[0] in RL_ZOO_RUN_OPTIONS for word in words):
        return _fail(rl_zoo_run_dir_hint(command, words))
    try:
        with warnings_as_lines():
            return _MAINS[command](argv)
    except _user_errors() as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)
    except KeyboardInterrupt:
        return 130
