"""Collector and replay-buffer speed (run by hand: ``python benchmarks/collector_and_buffer.py``).

1. Frames per second of :class:`SyncDataCollector` with random actions on CartPole-v1 with 8
   envs, against gymnasium's raw ``SyncVectorEnv`` stepping random actions, measured in
   alternating repeats in one run; prints the medians and their ratio (target >= 0.8).
2. Frames per second of :class:`SyncDataCollector` acting with a PPO-sized categorical actor
   (64x64 tanh MLP, one-hot actions, log-probabilities), through the lean acting path
   (:mod:`rl_trainers.fast.acting`) and through the actor's own forward, alternating.
3. Microseconds per ``sample()`` of 256 items from a full 1M-capacity LazyTensorStorage buffer,
   uniform (target < 200 us) and prioritized (target < 1 ms), plus a priority update.
4. An off-policy frame's buffer work on MuJoCo transitions (HalfCheetah's shapes, with every
   entry the SAC preset's collector writes): one frame written through the trainer's replay
   hook, then 256 transitions sampled, from a full 1M-capacity buffer; the packed storage
   (``fast.PACKED_STORAGE``) against one tensor per leaf, and SB3's ``ReplayBuffer``
   (``add`` and ``sample(256)``) when stable-baselines3 is installed; alternating blocks.
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import torch
from mlp_fast_path import compare
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
from rl_trainers.hooks import ReplayBufferTrainer

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


def mujoco_frame(obs_dim: int = 17, act_dim: int = 6) -> TensorDict:
    """One collected frame (batch ``[1, 1]``: one env, one step) with the entries the SAC
    HalfCheetah preset's collector writes."""
    flag = torch.zeros(1, 1, 1, dtype=torch.bool)

    def floats(n: int) -> torch.Tensor:
        return torch.randn(1, 1, n)

    return TensorDict(
        {
            "observation": floats(obs_dim),
            "action": floats(act_dim),
            "loc": floats(act_dim),
            "scale": floats(act_dim),
            "episode_reward": floats(1),
            "done": flag,
            "terminated": flag.clone(),
            "truncated": flag.clone(),
            "collector": {"traj_ids": torch.zeros(1, 1, dtype=torch.long)},
            "next": {
                "observation": floats(obs_dim),
                "reward": floats(1),
                "episode_reward": floats(1),
                "done": flag.clone(),
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
        },
        batch_size=[1, 1],
        device="cpu",
    )


def off_policy_frame_step(size: int, packed: bool):
    """``step()``: write one MuJoCo frame through the replay hook, sample 256."""
    frame = mujoco_frame()
    fast.PACKED_STORAGE = packed
    try:
        rb = TensorDictReplayBuffer(storage=LazyTensorStorage(size), batch_size=256)
        chunk = frame.reshape(-1).expand(100_000).clone()
        for _ in range(0, size, len(chunk)):
            rb.extend(chunk)
    finally:
        fast.PACKED_STORAGE = True
    hook = ReplayBufferTrainer(rb, flatten_tensordicts=True)

    def step() -> None:
        hook.extend(frame)
        hook.sample()

    return step


def sb3_frame_step(size: int):
    """``step()`` for SB3's ``ReplayBuffer`` on the same shapes (None without SB3)."""
    try:
        import numpy as np
        from gymnasium import spaces
        from stable_baselines3.common.buffers import ReplayBuffer as SB3ReplayBuffer
    except ImportError:
        return None
    obs_space = spaces.Box(-np.inf, np.inf, (17,), np.float32)
    rb = SB3ReplayBuffer(size, obs_space, spaces.Box(-1, 1, (6,), np.float32), device="cpu")
    rng = np.random.default_rng(0)
    rb.observations[:] = rng.standard_normal(rb.observations.shape, np.float32)
    rb.next_observations[:] = rng.standard_normal(rb.next_observations.shape, np.float32)
    rb.full = True
    obs = rng.standard_normal((1, 17), np.float32)
    action = rng.standard_normal((1, 6), np.float32)
    reward, done, infos = np.zeros(1, np.float32), np.zeros(1, np.float32), [{}]

    def step() -> None:
        rb.add(obs, obs, action, reward, done, infos)
        rb.sample(256)

    return step


def off_policy_frame_us(size: int, iters: int, repeats: int) -> dict[str, float]:
    """Median microseconds per frame step of each side, in alternating blocks of ``iters``."""
    steps = {
        "packed storage": off_policy_frame_step(size, packed=True),
        "a tensor per leaf": off_policy_frame_step(size, packed=False),
    }
    sb3 = sb3_frame_step(size)
    if sb3 is not None:
        steps["SB3 ReplayBuffer"] = sb3
    seconds = compare(steps, iters, 2 * repeats)
    return {name: s * 1e6 for name, s in seconds.items()}


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


def collector_section(args) -> None:
    raw, ours = [], []
    for _ in range(args.repeats):
        raw.append(raw_gym_fps(args.frames))
        ours.append(collector_fps(args.frames, args.frames_per_batch))
    raw_med, ours_med = statistics.median(raw), statistics.median(ours)
    print(f"CartPole-v1 x{NUM_ENVS}, random actions, {args.repeats} alternating repeats")
    print(f"  raw gymnasium SyncVectorEnv : {raw_med:10.0f} frames/s (median)")
    print(f"  SyncDataCollector           : {ours_med:10.0f} frames/s (median)")
    print(f"  ratio collector / raw       : {ours_med / raw_med:10.2f} (target >= 0.8)")


def acting_section(args) -> None:
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


def sample_section(args) -> None:
    for name, sampler, target in (
        ("uniform (RandomSampler)", RandomSampler(), 200),
        ("prioritized", PrioritizedSampler(args.buffer_size, alpha=0.6, beta=0.4), 1000),
    ):
        per_sample, per_update = sample_us(sampler, args.buffer_size, args.iters)
        print(
            f"sample(256) from a full {args.buffer_size:,} buffer, {name}: {per_sample:7.1f} us "
            f"(target < {target} us); update_priority(256): {per_update:7.1f} us"
        )


def frame_section(args) -> None:
    frame_us = off_policy_frame_us(args.buffer_size, args.iters, args.repeats)
    print(
        f"MuJoCo transitions (17-dim observations, 6-dim actions), write 1 frame + sample 256 "
        f"from a full {args.buffer_size:,} buffer, {2 * args.repeats} alternating blocks"
    )
    for name, us in frame_us.items():
        print(f"  {name:<26}: {us:8.1f} us per frame (median)")
    if "SB3 ReplayBuffer" in frame_us:
        ratio = frame_us["packed storage"] / frame_us["SB3 ReplayBuffer"]
        print(f"  ratio packed / SB3        : {ratio:8.2f}")


SECTIONS = {
    "collector": collector_section,
    "acting": acting_section,
    "sample": sample_section,
    "frame": frame_section,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40_000)
    parser.add_argument("--frames-per-batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated among {', '.join(SECTIONS)}"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.only.split(","):
        SECTIONS[name.strip()](args)


if __name__ == "__main__":
    main()
