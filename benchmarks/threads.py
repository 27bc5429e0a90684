"""The default thread count (one) against two threads, alone and with a busy process
holding a core: medians of a SAC run's frames per second (``summary.json``'s ``fps``).

    python benchmarks/threads.py [--frames 3000] [--repeats 5] [--algorithm sac] [--passive]

Four cases, run in turn (1 thread, 2 threads; alone, then with ``python -c "while True:
pass"`` running beside). ``--passive`` runs the two-thread cases with
``OMP_WAIT_POLICY=PASSIVE`` (OpenMP's threads sleep rather than spin while they wait).
Other jobs on the machine count as load too: say what else ran when quoting the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """A process spinning on one core while the block runs (when ``on``)."""
    if not on:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)  # running before the measured run starts
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def run_once(algorithm: str, frames: int, threads: int, out: Path, passive: bool) -> dict:
    script = REPO / "sota-implementations" / f"{algorithm}_trainer" / "train.py"
    cmd = [
        sys.executable,
        str(script),
        f"trainer.total_frames={frames}",
        f"trainer.num_threads={threads}",
        "trainer.progress_bar=false",
        "eval.episodes=1",
        f"trainer.log_interval={frames}",
        f"hydra.run.dir={out}",
    ]
    start = time.perf_counter()
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE") if passive and threads > 1 else None
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"fps": summary["fps"], "threads": summary["num_threads"], "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="sac")
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{args.algorithm}, {args.frames} frames, medians of {args.repeats}; "
        f"{os.cpu_count()} cores, load average {load:.2f} at start"
    )
    results: dict[tuple[bool, int], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for busy in (False, True):
            for threads in (1, 2):
                runs = results.setdefault((busy, threads), [])
                with busy_core(busy):
                    for i in range(args.repeats):
                        out = Path(tmp) / f"{int(busy)}_{threads}_{i}"
                        runs.append(
                            run_once(args.algorithm, args.frames, threads, out, args.passive)
                        )
    print(f"{'case':<34} {'threads used':>12} {'fps':>8} {'wall s':>8}")
    for (busy, threads), runs in results.items():
        name = f"{'1 thread (default)' if threads == 1 else '2 threads'}, " + (
            "a core held" if busy else "alone"
        )
        used = sorted({r["threads"] for r in runs})
        fps = statistics.median(r["fps"] for r in runs)
        wall = statistics.median(r["wall"] for r in runs)
        print(f"{name:<34} {','.join(map(str, used)):>12} {fps:8.1f} {wall:8.1f}")
    for busy in (False, True):
        ratio = statistics.median(r["fps"] for r in results[(busy, 2)]) / statistics.median(
            r["fps"] for r in results[(busy, 1)]
        )
        label = "a core held" if busy else "alone"
        print(f"2 threads / 1 thread fps, {label}: {ratio:.2f}x (two threads gain above 1)")


if __name__ == "__main__":
    main()
