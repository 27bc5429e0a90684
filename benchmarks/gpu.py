"""PPO and SAC HalfCheetah on a CUDA device: frames/s eager, compiled, and with CUDA graphs.

    python benchmarks/gpu.py            # or benchmarks/gpu.sh on a machine with a GPU

Each run is the real entry point with the shipped preset (``experiment=ppo_halfcheetah`` /
``sac_halfcheetah``) and ``device=cuda``, at a short fixed budget, three ways:

* ``eager``: ``trainer.compile=false``;
* ``compile``: ``trainer.compile=true`` (``torch.compile`` of the loss, forward and backward);
* ``cudagraphs``: ``trainer.compile=true trainer.compile_mode=reduce-overhead`` (the compiled
  graphs replayed with CUDA graphs).

For every run it prints the training frames/s (``summary.json``'s ``fps``: building and
compiling included), and checks that it learned something: every logged loss is finite and
the training episode returns moved (the last differs from the first). A failed check or
run is printed as FAIL and makes the exit status 1. The budgets keep the six runs under
8 minutes on one GPU.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Per algorithm: the entry point and the overrides of the short budget.
RUNS = {
    "ppo": (
        "sota-implementations/ppo_trainer/train.py",
        ["experiment=ppo_halfcheetah", "trainer.total_frames=20480"],
    ),
    "sac": (
        "sota-implementations/sac_trainer/train.py",
        [
            "experiment=sac_halfcheetah",
            "trainer.total_frames=8000",
            "collector.init_random_frames=2000",
            "trainer.learning_starts=2000",
        ],
    ),
}
MODES = {
    "eager": ["trainer.compile=false"],
    "compile": ["trainer.compile=true"],
    "cudagraphs": ["trainer.compile=true", "trainer.compile_mode=reduce-overhead"],
}


def _scalars(run_dir: Path) -> dict[str, list[float]]:
    """Every CSV scalar the run logged, by file name (``loss_critic``, ``train/episode_return``)."""
    out: dict[str, list[float]] = {}
    for path in (run_dir / "logs").rglob("scalars/**/*.csv"):
        scalars = path.parent
        while scalars.name != "scalars":
            scalars = scalars.parent
        name = str(path.relative_to(scalars).with_suffix(""))
        with open(path) as f:
            out[name] = [float(row[-1]) for row in csv.reader(f) if row and row[0] != "step"]
    return out


def check(run_dir: Path) -> list[str]:
    """What is wrong with a finished run: non-finite losses, returns that never moved."""
    problems = []
    scalars = _scalars(run_dir)
    losses = {k: v for k, v in scalars.items() if Path(k).name.startswith("loss_")}
    if not losses:
        problems.append("no loss was logged")
    for name, values in losses.items():
        if not all(math.isfinite(v) for v in values):
            problems.append(f"{name} is not finite")
    returns = scalars.get("train/episode_return", [])
    if len(returns) < 2 or returns[0] == returns[-1]:
        problems.append(f"training returns did not move: {returns[:3]}...")
    return problems


def run(algo: str, mode: str, timeout: float, device: str) -> tuple[float | None, list[str]]:
    """(frames/s or None, problems) of one run."""
    script, overrides = RUNS[algo]
    with tempfile.TemporaryDirectory(prefix=f"gpu_{algo}_{mode}_") as tmp:
        cmd = [
            sys.executable,
            script,
            *overrides,
            *MODES[mode],
            f"device={device}",
            "eval.episodes=2",
            "trainer.progress_bar=false",
            "logger=csv",
            f"hydra.run.dir={tmp}",
        ]
        try:
            proc = subprocess.run(
                cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return None, [f"did not finish in {timeout:.0f} s"]
        summary = Path(tmp) / "summary.json"
        if proc.returncode != 0 or not summary.exists():
            tail = (proc.stdout + proc.stderr)[-1500:]
            return None, [f"exit status {proc.returncode}:\n{tail}"]
        fps = json.loads(summary.read_text())["fps"]
        return fps, check(Path(tmp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algos", default="ppo,sac")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per run")
    parser.add_argument("--device", default="cuda", help="cpu checks the script itself")
    args = parser.parse_args()

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py needs a CUDA device (torch.cuda.is_available() is False)")
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"torch {torch.__version__}, {name}", flush=True)
    failed = False
    for algo in args.algos.split(","):
        for mode in args.modes.split(","):
            start = time.perf_counter()
            fps, problems = run(algo, mode, args.timeout, args.device)
            wall = time.perf_counter() - start
            status = "ok" if fps is not None and not problems else "FAIL"
            failed |= status == "FAIL"
            shown = "-" if fps is None else f"{fps:.0f}"
            print(
                f"{algo:4} {mode:11} frames/s {shown:>7}  wall {wall:5.0f} s  {status}", flush=True
            )
            for problem in problems:
                print(f"     {problem}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
