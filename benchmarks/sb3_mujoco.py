"""Stable-Baselines3's SAC or TD3 on a MuJoCo env with rl-zoo's MuJoCo settings, logged as a run.

    python benchmarks/sb3_mujoco.py sac HalfCheetah-v5 --seed 0 --frames 300000 --out DIR

The settings are those the presets ``experiment=sac_halfcheetah`` / ``td3_halfcheetah`` use:

* SAC: lr 3e-4, buffer 1M, batch 256, 10k random warm-up frames, tau 0.005, gamma 0.99, one
  update per frame, automatic entropy, 256x256 ReLU nets (SB3's defaults, rl-zoo's
  ``learning_starts: 10000``).
* TD3: lr 1e-3, buffer 1M, batch 256, 10k random warm-up frames, Gaussian action noise 0.1,
  policy delay 2, target noise 0.2 clipped at 0.5, one update per frame, 400x300 ReLU nets.

``DIR`` receives what ``benchmarks/results.py`` reads from every run: the training episode
returns as the CSV logger writes them (``logs/scalars/train/episode_return.csv``, rows
``frames,return``), a ``.hydra/config.yaml`` naming the algorithm, seed and env (the plot's
curve labels) and ``summary.json`` (``wall_time_s`` around ``learn()``, ``fps``, and
the deterministic evaluation's ``eval_return_mean``/``eval_return_std``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def make_model(algo: str, env, seed: int, library: str = "sb3"):
    """SB3's (or SBX's, ``library="sbx"``) SAC or TD3 on ``env`` with the presets' settings
    (see the module docstring); every setting is given, so both libraries run the same."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise

    if library == "sbx":
        from sbx import SAC, TD3
    else:
        from stable_baselines3 import SAC, TD3
    common = {
        "buffer_size": 1_000_000,
        "learning_starts": 10_000,
        "batch_size": 256,
        "tau": 0.005,
        "gamma": 0.99,
        "train_freq": 1,
        "gradient_steps": 1,
        "seed": seed,
        "device": "cpu",
    }
    if algo == "sac":
        return SAC(
            "MlpPolicy",
            env,
            learning_rate=3e-4,
            ent_coef="auto",
            policy_kwargs={"net_arch": [256, 256]},
            **common,
        )
    n_actions = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(n_actions), 0.1 * np.ones(n_actions))
    return TD3(
        "MlpPolicy",
        env,
        learning_rate=1e-3,
        action_noise=noise,
        policy_delay=2,
        target_policy_noise=0.2,
        target_noise_clip=0.5,
        policy_kwargs={"net_arch": [400, 300]},
        **common,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algo", choices=["sac", "td3"])
    parser.add_argument("env")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=300_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(args.threads)
    csv_path = args.out / "logs" / "scalars" / "train" / "episode_return.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)

    class EpisodeReturns(BaseCallback):
        """Append every finished training episode's return to the CSV, at its frame."""

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    with open(csv_path, "a") as f:
                        f.write(f"{self.num_timesteps},{info['episode']['r']}\n")
            return True

    env = gym.make(args.env)
    model = make_model(args.algo, env, args.seed)
    start = time.perf_counter()
    model.learn(total_timesteps=args.frames, callback=EpisodeReturns())
    wall = time.perf_counter() - start
    eval_env = gym.make(args.env)
    eval_env.reset(seed=args.seed + 10_000)
    returns, _ = evaluate_policy(
        model,
        eval_env,
        n_eval_episodes=args.eval_episodes,
        deterministic=True,
        return_episode_rewards=True,
    )
    summary = {
        "algorithm": f"sb3_{args.algo}",
        "env": args.env,
        "seed": args.seed,
        "frames": args.frames,
        "wall_time_s": round(wall, 3),
        "fps": round(args.frames / wall, 1),
        "num_threads": torch.get_num_threads(),
        "eval_return_mean": float(np.mean(returns)),
        "eval_return_std": float(np.std(returns)),
        "eval_episodes": args.eval_episodes,
        "eval_returns": [round(float(r), 3) for r in returns],
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    # what rl_trainers.plot reads to name a run's curve (algorithm=sb3_sac beside ours)
    hydra = args.out / ".hydra"
    hydra.mkdir(exist_ok=True)
    (hydra / "config.yaml").write_text(
        f"algorithm: sb3_{args.algo}\nseed: {args.seed}\nenv:\n  env_name: {args.env}\n"
    )


if __name__ == "__main__":
    main()
