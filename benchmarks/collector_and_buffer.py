"""Collector and replay-buffer speed (run by hand: ``python benchmarks/collector_and_buffer.py``).

1. Frames per second of :class:`SyncDataCollector` with random actions on CartPole-v1 with 8
   envs, against gymnasium's raw ``SyncVectorEnv`` stepping random actions, measured in
   alternating repeats in one run; prints the medians and their ratio (target >= 0.8).
2. Frames per second of :class:`SyncDataCollector` acting with a PPO-sized categorical actor
   (64x64 tanh MLP, one-hot actions, log-probabilities), through the lean acting path
   (:mod:`rl_trainers.fast.acting`) and through the actor's own forward, alternating.
3. Microseconds per ``sample()`` of 256 items from a full 1M-capacity LazyTensorStorage buffer,
   uniform (target < 200 us) and prioritized (target < 1 ms), plus a priority update.
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import torch
from tensordict import TensorDict

from rl_trainers import fast
from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import (
    LazyTensorStorage,
    PrioritizedSampler,
    RandomSampler,
    TensorDictReplayBuffer,
)
from rl_trainers.envs import GymEnv

NUM_ENVS = 8


def raw_gym_fps(frames: int) -> float:
    venv = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * NUM_ENVS,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    venv.reset(seed=0)
    steps = frames // NUM_ENVS
    start = time.perf_counter()
    for _ in range(steps):
        venv.step(venv.action_space.sample())
    elapsed = time.perf_counter() - start
    venv.close()
    return steps * NUM_ENVS / elapsed


def collector_fps(frames: int, frames_per_batch: int) -> float:
    collector = SyncDataCollector(
        GymEnv("CartPole-v1", num_envs=NUM_ENVS),
        frames_per_batch=frames_per_batch,
        total_frames=frames + frames_per_batch,
    )
    it = iter(collector)
    next(it)  # warm-up batch (env creation, first reset)
    start = time.perf_counter()
    n = 0
    for batch in it:
        n += batch.numel()
    elapsed = time.perf_counter() - start
    collector.shutdown()
    return n / elapsed


def actor_collector_fps(frames: int, frames_per_batch: int, lean: bool) -> float:
    from tensordict.nn import TensorDictModule

    from rl_trainers.modules import MLP, ProbabilisticActor
    from rl_trainers.modules.distributions import OneHotCategorical

    env = GymEnv("CartPole-v1", num_envs=NUM_ENVS)
    net = MLP(in_features=4, out_features=2, num_cells=[64, 64])
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["logits"]),
        in_keys=["logits"],
        spec=env.action_spec,
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )
    fast.LEAN_ACTING = lean
    try:
        collector = SyncDataCollector(
            env, actor, frames_per_batch=frames_per_batch, total_frames=frames + frames_per_batch
        )
        it = iter(collector)
        next(it)
        start = time.perf_counter()
        n = sum(batch.numel() for batch in it)
        elapsed = time.perf_counter() - start
        collector.shutdown()
    finally:
        fast.LEAN_ACTING = True
    return n / elapsed


def transitions(n: int) -> TensorDict:
    flag = torch.zeros(n, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.zeros(n, 2, dtype=torch.bool),
            "done": flag,
            "terminated": flag.clone(),
            "truncated": flag.clone(),
            "collector": {"traj_ids": torch.arange(n)},
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": flag.clone(),
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
        },
        batch_size=[n],
    )


def sample_us(sampler, size: int, iters: int) -> tuple[float, float]:
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(size), sampler=sampler, batch_size=256)
    chunk = 100_000
    for start in range(0, size, chunk):
        rb.extend(transitions(min(chunk, size - start)))
    for _ in range(50):
        batch = rb.sample()
    start = time.perf_counter()
    for _ in range(iters):
        batch = rb.sample()
    per_sample = (time.perf_counter() - start) / iters * 1e6
    priority = torch.rand(256)
    start = time.perf_counter()
    for _ in range(iters):
        rb.update_priority(batch["index"], priority)
    per_update = (time.perf_counter() - start) / iters * 1e6
    return per_sample, per_update


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40_000)
    parser.add_argument("--frames-per-batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--iters", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)

    raw, ours = [], []
    for _ in range(args.repeats):
        raw.append(raw_gym_fps(args.frames))
        ours.append(collector_fps(args.frames, args.frames_per_batch))
    raw_med, ours_med = statistics.median(raw), statistics.median(ours)
    print(f"CartPole-v1 x{NUM_ENVS}, random actions, {args.repeats} alternating repeats")
    print(f"  raw gymnasium SyncVectorEnv : {raw_med:10.0f} frames/s (median)")
    print(f"  SyncDataCollector           : {ours_med:10.0f} frames/s (median)")
    print(f"  ratio collector / raw       : {ours_med / raw_med:10.2f} (target >= 0.8)")

    lean, general = [], []
    for i in range(args.repeats):
        for flag in (True, False) if i % 2 else (False, True):
            fps = actor_collector_fps(args.frames, 256, flag)
            (lean if flag else general).append(fps)
    lean_med, general_med = statistics.median(lean), statistics.median(general)
    print(f"CartPole-v1 x{NUM_ENVS}, 64x64 categorical actor, batches of 256 frames")
    print(f"  actor's forward every step  : {general_med:10.0f} frames/s (median)")
    print(f"  lean acting path            : {lean_med:10.0f} frames/s (median)")
    print(f"  time lean / forward         : {general_med / lean_med:10.2f}")

    for name, sampler, target in (
        ("uniform (RandomSampler)", RandomSampler(), 200),
        ("prioritized", PrioritizedSampler(args.buffer_size, alpha=0.6, beta=0.4), 1000),
    ):
        per_sample, per_update = sample_us(sampler, args.buffer_size, args.iters)
        print(
            f"sample(256) from a full {args.buffer_size:,} buffer, {name}: {per_sample:7.1f} us "
            f"(target < {target} us); update_priority(256): {per_update:7.1f} us"
        )


if __name__ == "__main__":
    main()
