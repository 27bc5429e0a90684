"""Running normalisers in multi-process collector workers share one set of statistics.

Each worker's env has its own ``VecNorm``/``RewardNorm``; after every batch the collector
merges what the workers saw and gives it back to them, and keeps the result
(``collector.running_statistics``) for evaluation envs and checkpoints.
"""

from __future__ import annotations

import pytest
import torch

from rl_trainers.collectors import MultiaSyncDataCollector, MultiSyncDataCollector
from rl_trainers.envs import Compose, GymEnv, RewardNorm, RewardSum, TransformedEnv, VecNorm

DECAY = 0.99


def make_env():
    return TransformedEnv(
        GymEnv("Pendulum-v1"), Compose(RewardSum(), VecNorm(decay=DECAY), RewardNorm(gamma=0.9))
    )


def worker_env_states(collector) -> list[dict]:
    return [w["env"] for w in collector.state_dict()["workers"]]


def _stats(state: dict, kind: type) -> dict[str, torch.Tensor]:
    index = 1 if kind is VecNorm else 2  # the transforms' places in make_env's Compose
    prefix = f"transform.transforms.{index}."
    names = ("sum_0", "ssq_0", "count_0") if kind is VecNorm else ("count", "mean", "var")
    return {n: state[prefix + n] for n in names}


def test_sync_workers_share_statistics_as_one_normaliser_over_their_envs():
    collector = MultiSyncDataCollector([make_env] * 2, None, frames_per_batch=64, total_frames=192)
    try:
        collector.set_seed(0)
        frames = sum(batch.numel() for batch in collector)
        vecnorm, reward_norm = collector.running_statistics
        assert isinstance(vecnorm, VecNorm) and isinstance(reward_norm, RewardNorm)
        # every return of every worker's env, once each
        assert reward_norm.count.item() == frames == 192
        # each worker's VecNorm sees its env's first reset and 96 steps (Pendulum's episodes
        # last 200); the workers' decayed counts are equal, so their mean is one worker's
        expected = sum(DECAY**k for k in range(97))
        assert vecnorm.count_0.item() == pytest.approx(expected, rel=1e-5)
        for state in worker_env_states(collector):
            for kind, hub in ((VecNorm, vecnorm), (RewardNorm, reward_norm)):
                for name, value in _stats(state, kind).items():
                    torch.testing.assert_close(value, getattr(hub, name), rtol=0, atol=0)
    finally:
        collector.shutdown()


def test_shared_statistics_differ_from_one_workers_own():
    # without sharing each worker would count only its own 96 returns
    collector = MultiSyncDataCollector([make_env] * 2, None, frames_per_batch=64, total_frames=64)
    try:
        collector.set_seed(0)
        next(iter(collector))
        reward_norm = collector.running_statistics[1]
        states = worker_env_states(collector)
        assert reward_norm.count.item() == 64
        assert [_stats(s, RewardNorm)["count"].item() for s in states] == [64, 64]
        # the workers saw different returns, and both hold the merged mean
        assert _stats(states[0], RewardNorm)["mean"] == reward_norm.mean
    finally:
        collector.shutdown()


def test_async_workers_merge_every_return_too():
    collector = MultiaSyncDataCollector([make_env] * 2, None, frames_per_batch=32, total_frames=160)
    try:
        collector.set_seed(0)
        frames = sum(batch.numel() for batch in collector)
        assert collector.running_statistics[1].count.item() == frames == 160
        assert collector.running_statistics[0].count_0.item() > 0
    finally:
        collector.shutdown()


def test_resumed_collector_takes_the_saved_shared_statistics():
    collector = MultiSyncDataCollector([make_env] * 2, None, frames_per_batch=64, total_frames=128)
    try:
        collector.set_seed(0)
        for _ in collector:
            pass
        saved = collector.state_dict()
        expected = [hub.statistics() for hub in collector.running_statistics]
    finally:
        collector.shutdown()
    resumed = MultiSyncDataCollector([make_env] * 2, None, frames_per_batch=64, total_frames=256)
    try:
        resumed.load_state_dict(saved)
        for hub, stats in zip(resumed.running_statistics, expected, strict=True):
            for name, value in stats.items():
                torch.testing.assert_close(getattr(hub, name), value, rtol=0, atol=0)
        resumed.frames_collected = 128
        next(iter(resumed))
        assert resumed.running_statistics[1].count.item() == 192
    finally:
        resumed.shutdown()
