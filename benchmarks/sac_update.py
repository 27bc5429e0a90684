"""Wall milliseconds per SAC update, rl_trainers against SB3, in one process.

Run: ``python benchmarks/sac_update.py [--threads 1]``

Both sides fill their replay buffer with 1000 Pendulum frames, then run alternating blocks of
100 updates (batch 256, 256x256 nets, the default recipes); prints the medians and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from mlp_fast_path import sac_update_fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    update, _ = sac_update_fn([f"trainer.num_threads={args.threads}"])

    from stable_baselines3 import SAC

    torch.set_num_threads(args.threads)
    model = SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, seed=0, device="cpu")
    model.learn(1000)

    def ours(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            update()
        return (time.perf_counter() - start) / n * 1e3

    def sb3(n: int) -> float:
        start = time.perf_counter()
        model.train(gradient_steps=n, batch_size=256)
        return (time.perf_counter() - start) / n * 1e3

    ours(20), sb3(20)
    a, b = [], []
    for _ in range(args.blocks):
        a.append(ours(100))
        b.append(sb3(100))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"threads={args.threads} rl_trainers {ma:.2f} ms  SB3 {mb:.2f} ms  ratio {ma / mb:.2f}")


if __name__ == "__main__":
    main()
