"""How long the CLI takes to answer a new user: ``--help``, ``--cfg job`` and a config
error's one line, medians over ``--repeats`` runs (5), for PPO and SAC.

    python benchmarks/cli_latency.py [--repeats 5] [--algorithms ppo sac]

Each command runs in a fresh interpreter, as typed in a shell; the figures are its wall
time (start to exit) and its CPU time (user + system, which other jobs on the machine
change less). Say what else runs on the machine when quoting them. ``--repo DIR`` times
another checkout (its ``sota-implementations`` and its package, e.g. an older commit).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: name -> the arguments after ``train.py``, and the exit status expected.
COMMANDS = {
    "--help": (["--help"], 0),
    "--cfg job": (["--cfg", "job"], 0),
    "config error (optimizer.lr=-1)": (["optimizer.lr=-1"], 2),
    "unknown field (trainer.totl_frames=1)": (["trainer.totl_frames=1"], 2),
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(
    script: Path, args: list[str], expected: int, cwd: Path, env: dict
) -> tuple[float, float]:
    """Wall and CPU seconds of ``python script args``."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, cwd=cwd, env=env
    )
    elapsed = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    if proc.returncode != expected:
        raise SystemExit(
            f"{script.parent.name} {' '.join(args)} exited {proc.returncode} "
            f"(expected {expected}):\n{proc.stderr[-2000:]}"
        )
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--algorithms", nargs="+", default=["ppo", "sac"])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to time")
    args = parser.parse_args()
    repo = args.repo.resolve()
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} cores, load average {load:.2f} at start; medians of {args.repeats}")
    print(f"{repo}: wall / CPU seconds")
    print(f"{'command':<40} " + " ".join(f"{a:>15}" for a in args.algorithms))
    cwd = Path(os.environ.get("TMPDIR", "/tmp"))
    for name, (words, expected) in COMMANDS.items():
        cells = []
        for algorithm in args.algorithms:
            script = repo / "sota-implementations" / f"{algorithm}_trainer" / "train.py"
            times = [time_command(script, words, expected, cwd, env) for _ in range(args.repeats)]
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            cells.append(f"{wall:6.2f} / {cpu:5.2f}")
        print(f"{name:<40} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
