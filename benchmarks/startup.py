"""Start-up cost: ``import rl_trainers``, ``train.py --help`` and a short PPO run.

Each command runs ``--repeats`` times in a fresh interpreter, the commands alternating; the
table gives the medians of each one's wall time, CPU time (user + system, which a loaded
machine inflates less) and peak resident memory (``wait4``'s ``ru_maxrss``), and the
import's own time as ``python -X importtime`` reports it
(the cumulative microseconds of the top-level ``rl_trainers`` entry).

    python benchmarks/startup.py                 # --repeats 5
    python benchmarks/startup.py --against /path/to/other/checkout   # the two alternating

With ``--against``, each repeat runs every command on this checkout and then on the other
(its ``train.py``, with ``PYTHONPATH`` set to it), and a table is printed for each.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands(root: Path, out: str, i: int) -> dict[str, list[str]]:
    train = str(root / "sota-implementations" / "ppo_trainer" / "train.py")
    return {
        "import rl_trainers": [sys.executable, "-X", "importtime", "-c", "import rl_trainers"],
        "train.py --help": [sys.executable, train, "--help"],
        "PPO run, 2048 frames": [
            sys.executable,
            train,
            "trainer.total_frames=2048",
            "eval.episodes=1",
            "trainer.progress_bar=false",
            "logger=csv",
            f"hydra.run.dir={out}/{i}",
        ],
    }


def run_once(root: Path, cmd: list[str]) -> tuple[float, float, float | None, float]:
    """Wall seconds, peak RSS in MiB, ``-X importtime``'s cumulative rl_trainers time, and
    CPU seconds (user + system, which a loaded machine inflates less than the wall time)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| rl_trainers$", stderr, re.MULTILINE)
    imported = int(match.group(1)) / 1e6 if match else None
    return wall, usage.ru_maxrss / 1024, imported, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, run alternately")
    args = parser.parse_args()
    roots = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict[Path, dict[str, list]] = {root: {} for root in roots}
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.repeats):
            for j, root in enumerate(roots):
                for name, cmd in commands(root, f"{out}/{j}", i).items():
                    results[root].setdefault(name, []).append(run_once(root, cmd))
    for root in roots:
        print(f"\n{root}\n")
        table(results[root])


def table(results: dict[str, list]) -> None:
    print("| command | wall time | CPU time | peak RSS | import time (-X importtime) |")
    print("| --- | --- | --- | --- | --- |")
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        rss = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[3] for r in runs)
        imports = [r[2] for r in runs if r[2] is not None]
        imp = f"{statistics.median(imports):.3f} s" if imports else ""
        print(f"| `{name}` | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {imp} |")


if __name__ == "__main__":
    main()
