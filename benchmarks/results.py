"""MuJoCo learning results: run the shipped presets at real budgets, or re-tabulate kept logs.

    python benchmarks/results.py                 # table + plots from the kept logs
    python benchmarks/results.py --run           # first train the runs that have no summary
    python benchmarks/results.py --run --only ppo_HalfCheetah-v5 --workers 1
    python benchmarks/results.py --run --only sb3_sac_Hopper-v5 --seeds 1

Every run lives in ``benchmarks/results/runs/<side>_<algo>/<env>/seed<k>/``:

* ``rl_trainers`` runs are the real entry point ``sota-implementations/<algo>_trainer/train.py``
  with a shipped preset (``experiment=ppo_halfcheetah`` and the like, plus ``env=...``), the
  CSV logger, one thread, no progress bar. The directory is the run directory itself
  (``.hydra/``, ``logs/``, ``summary.json``); checkpoints are not kept.
* ``sb3`` runs are Stable-Baselines3 at the same hyperparameters (rl-zoo's MuJoCo settings
  for SAC and TD3), with the same episode-return CSV and ``summary.json`` keys.

The final evaluation is deterministic, 10 episodes, on a separate env (both sides). The
table (``docs/results.md``) lists, per preset and env, the mean and std over seeds of the
final evaluation's mean return, each seed's value, the mean training episode return over
the last tenth of the frames, the wall time and the frames/s (training only), beside
published anchors at 1M frames. Learning curves over seeds are drawn with
``rl_trainers.plot`` into ``docs/img/results_<algo>_<env>.png``.

A run takes hours of one core (PPO 1M frames about 25 min, SAC/TD3 300k frames about an
hour): start ``--run`` with ``setsid nohup ... &`` and re-tabulate whenever runs finish.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS_DIR = ROOT / "benchmarks" / "results" / "runs"
DOC = ROOT / "docs" / "results.md"
IMG_DIR = ROOT / "docs" / "img"
EVAL_EPISODES = 10
ENV_OPTIONS = {
    "HalfCheetah-v5": "halfcheetah",
    "Hopper-v5": "hopper",
    "Walker2d-v5": "walker2d",
    "Ant-v5": "ant",
}


@dataclass(frozen=True)
class Cell:
    """One (side, algorithm, env) of the table, run for several seeds at one budget."""

    side: str  # "rl_trainers" or "sb3"
    algo: str  # "ppo", "sac", "td3"
    env: str  # gymnasium id
    frames: int
    seeds: tuple[int, ...] = (0, 1, 2)
    #: an ablation of the preset: its name and the overrides added after the preset's
    variant: str = ""
    overrides: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.side}_{self.algo}" + (f"_{self.variant}" if self.variant else "")

    def run_dir(self, seed: int) -> Path:
        return RUNS_DIR / self.name / self.env / f"seed{seed}"


#: The matrix, in the order ``--run`` works through it: one seed of every cell first, so
#: SB3's cells get their first seed before any cell its third.
CELLS = [Cell("rl_trainers", "ppo", env, 1_000_000) for env in ENV_OPTIONS] + [
    Cell(side, algo, env, 300_000)
    for side in ("rl_trainers", "sb3")
    for algo in ("sac", "td3")
    for env in ("HalfCheetah-v5", "Hopper-v5")
]

#: Ablations, run on demand (``--run --only <name>_<env>``) and listed once they have a run:
#: the SAC preset with torchrl's biased-softplus actor scale instead of SB3's
#: ``exp(clamp(x, -20, 2))``.
VARIANTS = [
    Cell(
        "rl_trainers",
        "sac",
        env,
        300_000,
        variant="torchrl_scale",
        overrides=("model.policy.scale_mapping=biased_softplus_1.0",),
    )
    for env in ("HalfCheetah-v5", "Hopper-v5")
]

#: Published returns at 1M frames, for reference (the budgets above are 1M for PPO and 300k
#: for SAC/TD3): (algorithm, env) -> [(source, return)]. CleanRL's ``ppo_continuous_action``
#: (the same 64x64 PPO as the preset, MuJoCo v2, mean ± std over seeds); rl-zoo's
#: benchmark.md (SB3 with hyperparameters tuned per env, MuJoCo v3, one run); the TD3 paper
#: (Fujimoto et al. 2018, Table 1, MuJoCo v1, mean ± std over 10 seeds).
ANCHORS: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("ppo", "HalfCheetah-v5"): [("CleanRL", "1823 ± 928"), ("rl-zoo (tuned)", "5819")],
    ("ppo", "Hopper-v5"): [("CleanRL", "2231 ± 657"), ("rl-zoo (tuned)", "2410")],
    ("ppo", "Walker2d-v5"): [("CleanRL", "3050 ± 1136"), ("rl-zoo (tuned)", "3479")],
    ("ppo", "Ant-v5"): [("rl-zoo (tuned)", "1327")],
    ("sac", "HalfCheetah-v5"): [("rl-zoo", "9535")],
    ("sac", "Hopper-v5"): [("rl-zoo", "2326")],
    ("td3", "HalfCheetah-v5"): [("rl-zoo", "9656"), ("TD3 paper", "9637 ± 859")],
    ("td3", "Hopper-v5"): [("rl-zoo", "3606"), ("TD3 paper", "3564 ± 115")],
}


def _train_cmd(cell: Cell, seed: int, run_dir: Path, code: Path) -> list[str]:
    if cell.side == "sb3":
        return [
            sys.executable,
            str(ROOT / "benchmarks" / "sb3_mujoco.py"),
            cell.algo,
            cell.env,
            "--seed",
            str(seed),
            "--frames",
            str(cell.frames),
            "--eval-episodes",
            str(EVAL_EPISODES),
            "--out",
            str(run_dir),
        ]
    return [
        sys.executable,
        str(code / "sota-implementations" / f"{cell.algo}_trainer" / "train.py"),
        f"experiment={cell.algo}_halfcheetah",
        f"env={ENV_OPTIONS[cell.env]}",
        f"seed={seed}",
        f"trainer.total_frames={cell.frames}",
        f"eval.episodes={EVAL_EPISODES}",
        "trainer.num_threads=1",
        "trainer.progress_bar=false",
        "logger=csv",
        f"hydra.run.dir={run_dir}",
        *cell.overrides,
    ]


def train(cell: Cell, seed: int, code: Path = ROOT) -> None:
    """Train one run into its directory (replacing an unfinished one) with ``code``'s package."""
    run_dir = cell.run_dir(seed)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(code))
    start = time.time()
    log = run_dir.parent / f"seed{seed}.out"
    with open(log, "w") as out:
        code = subprocess.call(
            _train_cmd(cell, seed, run_dir, code), cwd=code, env=env, stdout=out, stderr=out
        )
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    status = "done" if code == 0 else f"FAILED ({code}, see {log})"
    if code == 0:
        log.unlink()
    print(
        f"{time.strftime('%H:%M:%S')} {cell.name} {cell.env} seed{seed}: {status} "
        f"in {time.time() - start:.0f} s",
        flush=True,
    )


def pending(cells: list[Cell]) -> list[tuple[Cell, int]]:
    """Runs without a summary, one seed of every cell before the next seed."""
    todo = []
    for seed in range(max(len(c.seeds) for c in cells)):
        for cell in cells:
            if (
                seed < len(cell.seeds)
                and not (cell.run_dir(cell.seeds[seed]) / "summary.json").exists()
            ):
                todo.append((cell, cell.seeds[seed]))
    return todo


# ------------------------------------------------------------------ the table
def finished_seeds(cell: Cell) -> list[int]:
    return [seed for seed in cell.seeds if (cell.run_dir(seed) / "summary.json").exists()]


def summaries(cell: Cell) -> list[dict]:
    return [
        json.loads((cell.run_dir(s) / "summary.json").read_text()) for s in finished_seeds(cell)
    ]


def late_training_return(cell: Cell, seed: int) -> float | None:
    """The mean of the training episode returns logged over the run's last tenth of frames:
    the exploring policy over many episodes, a steadier figure than one final evaluation."""
    files = sorted(cell.run_dir(seed).glob("logs/**/scalars/train/episode_return.csv"))
    if not files:
        return None
    values = []
    with open(files[0]) as f:
        for row in csv.reader(f):
            try:
                frame, value = float(row[0]), float(row[1])
            except (ValueError, IndexError):
                continue  # a header
            if frame >= 0.9 * cell.frames:
                values.append(value)
    return statistics.mean(values) if values else None


def _duration_s(run: dict) -> float:
    """A run's time: its launch's wall time; for a resumed run, whose summary's wall time
    covers its last launch only, its training time over every launch."""
    if run.get("resumed_from_frame") and run.get("total_train_time_s"):
        return run["total_train_time_s"]
    return run["wall_time_s"]


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{statistics.mean(values):.0f} ± {statistics.stdev(values):.0f}"


def table(cells: list[Cell]) -> list[str]:
    lines = [
        "| algorithm | env | frames | side | seeds | final return (mean ± std over seeds) "
        "| per seed | training return, last 10% of frames | wall time (min) | frames/s "
        "| published at 1M |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        runs = summaries(cell)
        returns = [r["eval_return_mean"] for r in runs]
        late = [late_training_return(cell, seed) for seed in finished_seeds(cell)]
        per_seed = ", ".join(f"{v:.0f}" for v in returns) or "-"
        wall = _mean_std([_duration_s(r) / 60 for r in runs]) if runs else "-"
        fps = f"{statistics.mean(r['frames'] / _duration_s(r) for r in runs):.0f}" if runs else "-"
        lines.append(
            f"| {cell.algo.upper()} | {cell.env} | {cell.frames // 1000}k | {_side(cell)} "
            f"| {len(runs)}/{len(cell.seeds)} | {_mean_std(returns)} | {per_seed} "
            f"| {_mean_std([v for v in late if v is not None])} "
            f"| {wall} | {fps} | {_anchors(cell)} |"
        )
    return lines


def _side(cell: Cell) -> str:
    return f"{cell.side} ({cell.variant})" if cell.variant else cell.side


def _anchors(cell: Cell) -> str:
    if cell.side != "rl_trainers":
        return ""
    return "; ".join(
        f"{source}: {value}" for source, value in ANCHORS.get((cell.algo, cell.env), [])
    )


def plot(cells: list[Cell]) -> list[str]:
    """One PNG per (algo, env) with every side's runs; returns the markdown links."""
    links = []
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.algo, cell.env), []).append(cell)
    for (algo, env), group in groups.items():
        done = [c for c in group if summaries(c)]
        if not done:
            continue
        png = IMG_DIR / f"results_{algo}_{env}.png"
        dirs = [str(RUNS_DIR / c.name / env) for c in done]
        cmd = [sys.executable, "-m", "rl_trainers.plot", *dirs, "--metric", "train/episode_return"]
        # one curve per cell (its seeds), named as the table's side column names it
        cmd += ["--group-by", "path", *(a for c in done for a in ("--label", _side(c)))]
        cmd += ["--out", str(png), "--title", f"{algo.upper()} {env}", "--smooth", "10"]
        # finished runs only, each curve over the frames all its seeds cover: no tail where
        # one seed's last episodes stand for all
        cmd += ["--finished", "--common-range"]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"plot {algo} {env} failed: {proc.stdout}{proc.stderr}", file=sys.stderr)
            continue
        links.append(f"![{algo.upper()} {env}](img/{png.name})")
    return links


def write_doc(cells: list[Cell]) -> None:
    text = DOC.read_text() if DOC.exists() else ""
    start, end = "<!-- results-table -->", "<!-- /results-table -->"
    block = "\n".join([start, *table(cells), "", *plot(cells), end])
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text + "\n" + block + "\n"
    DOC.write_text(text)
    print("\n".join(table(cells)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", action="store_true", help="train the runs not yet finished")
    parser.add_argument("--workers", type=int, default=2, help="runs at a time (--run)")
    parser.add_argument(
        "--only",
        default="",
        help="with --run: train only these, comma-separated <side>_<algo>_<env> or <algo>_<env>",
    )
    parser.add_argument(
        "--seeds",
        default="",
        help="with --run: train only these seeds, comma-separated (default: every seed of a cell)",
    )
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the checkout whose train.py and package train (--run; e.g. a git worktree "
        "pinned at one commit while this one changes)",
    )
    args = parser.parse_args()
    cells = CELLS + VARIANTS
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        cells = [
            c for c in cells if any(k in (f"{c.name}_{c.env}", f"{c.algo}_{c.env}") for k in keys)
        ]
    if args.run:
        jobs = pending(cells)
        if args.seeds:
            wanted = {int(s) for s in args.seeds.split(",") if s.strip()}
            jobs = [(cell, seed) for cell, seed in jobs if seed in wanted]
        with ThreadPoolExecutor(args.workers) as pool:
            for _ in pool.map(lambda job: train(*job, args.code.resolve()), jobs):
                pass
    # the page always shows the whole matrix, and the ablations that have runs
    write_doc(CELLS + [c for c in VARIANTS if summaries(c)])


if __name__ == "__main__":
    main()
