"""rl_trainers against Stable-Baselines3 at the same hyperparameters (wall time, return, memory).

Run: ``python benchmarks/compare_sb3.py [--pairs 3] [--tasks ppo_cartpole,sac_pendulum]``
(needs ``pip install "rl_trainers[bench]"``).

Tasks (rl-zoo's published hyperparameters; our default configs match them):

* ``ppo_cartpole``: PPO, CartPole-v1, 100k frames, 8 envs, n_steps 32, minibatch 256, 20
  epochs, gamma 0.98, GAE lambda 0.8, lr 1e-3 and clip 0.2 both annealed linearly to 0, no
  entropy bonus, critic coef 0.5, grad-norm clip 0.5, per-minibatch advantage normalisation,
  64x64 tanh nets with orthogonal init.
* ``sac_pendulum``: SAC, Pendulum-v1, 20k frames, lr 1e-3, batch 256, buffer 1M, 100 warm-up
  frames, tau 0.005, gamma 0.99, one update per frame, automatic entropy, 256x256 ReLU nets.
* ``ppo_halfcheetah``: the preset ``experiment=ppo_halfcheetah`` on HalfCheetah-v5, 20,480
  frames: 1 env, 2048-frame batches, 10 epochs of 64-sample minibatches, gamma 0.99, GAE
  lambda 0.95, lr 3e-4 annealed linearly, clip 0.2, no entropy bonus, observation and reward
  normalisation (SB3: ``VecNormalize``), 64x64 tanh nets, SB3's policy parametrisation (a
  diagonal Gaussian with a state-independent log-std, actions clipped to the bounds).
* ``sac_halfcheetah`` / ``td3_halfcheetah``: the presets on HalfCheetah-v5 (rl-zoo's MuJoCo
  settings, ``benchmarks/sb3_mujoco.py`` builds SB3's side), 20k frames: the 10k random
  warm-up frames, then 10k frames with one gradient update each. SAC's actor is SB3's on
  both sides (the preset's ``model.policy.scale_mapping=clamped_exp``:
  ``exp(clamp(x, -20, 2))``).

Each run is its own subprocess, A (rl_trainers) and B (SB3) alternating, ``--pairs`` times per
task, seed ``i`` for pair ``i`` on both sides:

* rl_trainers runs its real entry point ``sota-implementations/<algo>_trainer/train.py`` with the
  default recipe (plus ``seed``, ``eval.episodes=20``, no progress bar) and reports
  ``wall_time_s`` (loading torch, building and training, no evaluation), ``train_time_s``
  (the training alone) and ``eval_return_mean`` from the run's ``summary.json``.
* SB3 is timed around ``model.learn()`` only (building excluded), then evaluated on 20
  deterministic episodes with ``evaluate_policy``.

Threads: SB3 runs with torch's default intra-op thread count (all cores) unless
``--sb3-threads`` is given; rl_trainers runs with its default ``trainer.num_threads=1`` unless
``--threads`` is given. Both are printed.

SBX (Stable-Baselines3 in JAX, ``pip install "rl_trainers[bench-jax]"``) runs as a third side
when it is installed (``--sbx auto``, the default; ``--sbx off`` skips it), A B C alternating,
with the same settings as SB3's side (SBX's PPO asked for SB3's orthogonal initialisation).
At ``--sb3-threads 1`` it runs XLA's CPU backend on one thread (``XLA_FLAGS``); otherwise with
XLA's default.

``--frames N`` runs every side of every task for N frames instead of the task's budget (the
same N everywhere); ``--compile`` has rl_trainers compile its loss (``trainer.compile=true``),
the compilation counted in its wall time: worth it for long runs, not at these budgets.

Peak memory is each subprocess's maximum resident set size (``wait4`` rusage).

The last line is ``ratio ppo_cartpole=<x> sac_pendulum=<y> ppo_halfcheetah=<z> ...`` (median
rl_trainers wall time over median SB3 wall time, for every task run); the line before it,
``ratio_training ...``, is the like-for-like one: rl_trainers' training alone over SB3's
``learn()`` (neither loading torch nor building); with SBX, ``ratio_to_sbx ...`` is the
wall-time ratio against SBX.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = {
    "ppo_cartpole": {"script": "sota-implementations/ppo_trainer/train.py", "frames": 100_000},
    "sac_pendulum": {"script": "sota-implementations/sac_trainer/train.py", "frames": 20_000},
    # the shipped MuJoCo presets at a speed budget: PPO ten 2048-frame batches; SAC and TD3
    # their 10k random warm-up frames, then 10k frames with one update each
    "ppo_halfcheetah": {
        "script": "sota-implementations/ppo_trainer/train.py",
        "frames": 20_480,
        "overrides": ["experiment=ppo_halfcheetah"],
    },
    "sac_halfcheetah": {
        "script": "sota-implementations/sac_trainer/train.py",
        "frames": 20_000,
        "overrides": ["experiment=sac_halfcheetah"],
    },
    "td3_halfcheetah": {
        "script": "sota-implementations/td3_trainer/train.py",
        "frames": 20_000,
        "overrides": ["experiment=td3_halfcheetah"],
    },
}
EVAL_EPISODES = 20


# ------------------------------------------------------------------ subprocess helpers
def _run(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[int, str, float]:
    """Run ``cmd``; returns (exit status, combined output, max RSS in MiB)."""
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read()
    return proc.returncode, out, usage.ru_maxrss / 1024  # Linux reports KiB


def run_rl_trainers(
    task: str, seed: int, threads: int, timeout: float, frames: int, compile_loss: bool = False
) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench_{task}_") as tmp:
        cmd = [
            sys.executable,
            TASKS[task]["script"],
            *TASKS[task].get("overrides", []),
            f"trainer.total_frames={frames}",
            f"trainer.compile={str(compile_loss).lower()}",
            f"seed={seed}",
            f"eval.episodes={EVAL_EPISODES}",
            f"trainer.num_threads={threads}",
            "trainer.progress_bar=false",
            f"hydra.run.dir={tmp}/run",
        ]
        code, out, rss = _run(cmd, timeout)
        summary_file = Path(tmp) / "run" / "summary.json"
        if code != 0 or not summary_file.exists():
            raise RuntimeError(f"rl_trainers {task} failed ({code}):\n{out[-3000:]}")
        summary = json.loads(summary_file.read_text())
    return {
        "wall_time_s": summary["wall_time_s"],
        "train_time_s": summary["train_time_s"],
        "eval_return": summary["eval_return_mean"],
        "max_rss_mb": rss,
    }


def run_sb3(
    task: str, seed: int, threads: int, timeout: float, frames: int, library: str = "sb3"
) -> dict:
    """One SB3 (``library="sb3"``) or SBX (``"sbx"``) run of ``task`` in a subprocess."""
    cmd = [sys.executable, __file__, "--sb3-worker", task, "--seed", str(seed)]
    cmd += ["--frames", str(frames)]
    cmd += ["--sb3-threads", str(threads), "--library", library]
    env = None
    if library == "sbx" and threads == 1:  # XLA's CPU backend on one thread
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env = dict(os.environ, XLA_FLAGS=flags)
    code, out, rss = _run(cmd, timeout, env)
    lines = [ln for ln in out.splitlines() if ln.startswith("SB3_RESULT ")]
    if code != 0 or not lines:
        raise RuntimeError(f"{library} {task} failed ({code}):\n{out[-3000:]}")
    result = json.loads(lines[-1].removeprefix("SB3_RESULT "))
    result["max_rss_mb"] = rss
    return result


# ------------------------------------------------------------------ the SB3 side (worker)
def sb3_worker(task: str, seed: int, threads: int, frames: int, library: str = "sb3") -> None:
    """Train and evaluate ``task`` with SB3 or SBX (same settings), print ``SB3_RESULT {...}``."""
    import gymnasium as gym
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    if threads > 0:
        torch.set_num_threads(threads)
    if library == "sbx":
        from sbx import PPO, SAC
    else:
        from stable_baselines3 import PPO, SAC
    # SB3's PPO initialises its layers orthogonally; SBX's only when asked
    ortho = {"ortho_init": True} if library == "sbx" else {}

    def linear(start: float):
        return lambda progress_remaining: progress_remaining * start

    if task == "ppo_cartpole":
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=32,
            batch_size=256,
            n_epochs=20,
            gamma=0.98,
            gae_lambda=0.8,
            ent_coef=0.0,
            learning_rate=linear(1e-3),
            clip_range=linear(0.2),
            policy_kwargs=ortho or None,
            seed=seed,
            device="cpu",
            verbose=0,
        )
        eval_env = gym.make("CartPole-v1")
    elif task == "sac_pendulum":
        model = SAC(
            "MlpPolicy",
            "Pendulum-v1",
            learning_rate=1e-3,
            buffer_size=1_000_000,
            learning_starts=100,
            batch_size=256,
            tau=0.005,
            gamma=0.99,
            train_freq=1,
            gradient_steps=1,
            ent_coef="auto",
            seed=seed,
            device="cpu",
            verbose=0,
        )
        eval_env = gym.make("Pendulum-v1")
    elif task == "ppo_halfcheetah":
        # SB3's PPO: a diagonal Gaussian with a state-independent log-std, actions clipped
        # to the bounds, as the preset's model/policy=normal
        env = VecNormalize(make_vec_env("HalfCheetah-v5", n_envs=1, seed=seed), gamma=0.99)
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=2048,
            batch_size=64,
            n_epochs=10,
            gamma=0.99,
            gae_lambda=0.95,
            ent_coef=0.0,
            learning_rate=linear(3e-4),
            clip_range=0.2,
            policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}, **ortho},
            seed=seed,
            device="cpu",
            verbose=0,
        )
        eval_env = VecNormalize(make_vec_env("HalfCheetah-v5", n_envs=1), training=False)
        eval_env.norm_reward = False
    elif task in ("sac_halfcheetah", "td3_halfcheetah"):
        sys.path.insert(0, str(Path(__file__).parent))
        from sb3_mujoco import make_model

        model = make_model(task.split("_")[0], gym.make("HalfCheetah-v5"), seed, library)
        eval_env = gym.make("HalfCheetah-v5")
    else:
        raise ValueError(f"unknown task {task!r}; choose from {sorted(TASKS)}")
    start = time.perf_counter()
    model.learn(total_timesteps=frames)
    wall = time.perf_counter() - start
    if isinstance(eval_env, VecNormalize):  # the trained observation statistics, frozen
        eval_env.obs_rms = env.obs_rms
        eval_env.seed(seed + 10_000)
    else:
        eval_env.reset(seed=seed + 10_000)
    returns, _ = evaluate_policy(
        model,
        eval_env,
        n_eval_episodes=EVAL_EPISODES,
        deterministic=True,
        return_episode_rewards=True,
    )
    result = {
        "wall_time_s": wall,
        "eval_return": float(sum(returns) / len(returns)),
        "threads": torch.get_num_threads(),
    }
    print("SB3_RESULT " + json.dumps(result), flush=True)


# ------------------------------------------------------------------ report
def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def sbx_installed() -> bool:
    """Whether SBX (``pip install "rl_trainers[bench-jax]"``) can run here."""
    import importlib.util

    return importlib.util.find_spec("sbx") is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="alternating A/B pairs per task")
    parser.add_argument(
        "--tasks",
        default=",".join(TASKS),
        help=f"comma-separated, from {', '.join(TASKS)}",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="rl_trainers threads (0: its default, 1)"
    )
    parser.add_argument("--sb3-threads", type=int, default=0, help="SB3 threads (0: torch default)")
    parser.add_argument(
        "--sbx",
        choices=("auto", "on", "off"),
        default="auto",
        help="run SBX as a third side on its tasks (auto: when sbx is installed)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument(
        "--frames", type=int, default=0, help="frames per run, every side (0: each task's own)"
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="rl_trainers compiles its loss (trainer.compile=true; compiling counts in its time)",
    )
    parser.add_argument("--sb3-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--library", default="sb3", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_worker:
        sb3_worker(args.sb3_worker, args.seed, args.sb3_threads, args.frames, args.library)
        return

    import torch

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown tasks {unknown}; choose from {sorted(TASKS)}")
    with_sbx = args.sbx == "on" or (args.sbx == "auto" and sbx_installed())
    if args.sbx == "on" and not sbx_installed():
        parser.error('--sbx on needs SBX: pip install "rl_trainers[bench-jax]"')
    rl_threads = args.threads if args.threads > 0 else "1 (the default)"
    sb3_threads = args.sb3_threads if args.sb3_threads > 0 else torch.get_num_threads()
    print(f"machine: {os.cpu_count()} logical CPUs, torch {torch.__version__}")
    print(f"threads: rl_trainers={rl_threads}  SB3={sb3_threads} (torch default when 0 is given)")
    if args.compile:
        print("rl_trainers: trainer.compile=true (torch.compile of the loss, compiling included)")
    if with_sbx:
        sbx_threads = "1 (XLA_FLAGS)" if args.sb3_threads == 1 else "XLA default"
        print(f"SBX: a third side, threads {sbx_threads}")
    sides = [("rl_trainers", None), ("SB3", "sb3")] + ([("SBX", "sbx")] if with_sbx else [])
    # (summary line, reference side, rl_trainers' time, label): rl_trainers' median time over
    # the reference's median wall time; the summary lines print in reverse, "ratio" last
    lines = [
        ("ratio", "SB3", "wall_time_s", "rl_trainers/SB3"),
        ("ratio_training", "SB3", "train_time_s", "rl_trainers training/SB3 learn()"),
    ]
    if with_sbx:
        lines += [
            ("ratio_to_sbx", "SBX", "wall_time_s", "rl_trainers/SBX"),
            ("ratio_training_to_sbx", "SBX", "train_time_s", "rl_trainers training/SBX learn()"),
        ]
    ratios: dict[str, dict[str, float]] = {line[0]: {} for line in lines}
    for task in tasks:
        runs: dict[str, list[dict]] = {name: [] for name, _ in sides}
        frames = args.frames or TASKS[task]["frames"]
        print(f"[{task}] {frames} frames per run", flush=True)
        for i in range(args.pairs):
            for name, library in sides:
                if library is None:
                    result = run_rl_trainers(
                        task, i, args.threads, args.timeout, frames, args.compile
                    )
                else:
                    result = run_sb3(task, i, args.sb3_threads, args.timeout, frames, library)
                runs[name].append(result)
                train = result.get("train_time_s", result["wall_time_s"])
                print(
                    f"[{task} pair {i}] {name:12} {result['wall_time_s']:.1f}s "
                    f"(training {train:.1f}s) return {result['eval_return']:.1f} "
                    f"rss {result['max_rss_mb']:.0f}MiB",
                    flush=True,
                )
        for name, reference, ours, _ in lines:
            ratios[name][task] = _median(runs["rl_trainers"], ours) / _median(
                runs[reference], "wall_time_s"
            )
        print(f"== {task} (medians of {args.pairs} alternating runs per side)")
        print(f"   {'':12} {'wall s':>8} {'eval return':>12} {'max RSS MiB':>12}")
        for name, side_runs in runs.items():
            print(
                f"   {name:12} {_median(side_runs, 'wall_time_s'):8.1f} "
                f"{_median(side_runs, 'eval_return'):12.1f} {_median(side_runs, 'max_rss_mb'):12.0f}"
            )
        for name, _, _, label in lines:
            print(f"   ratio {label} = {ratios[name][task]:.3f}", flush=True)
    for name, *_ in reversed(lines):
        print(f"{name} " + " ".join(f"{t}={r:.3f}" for t, r in ratios[name].items()))


if __name__ == "__main__":
    main()
