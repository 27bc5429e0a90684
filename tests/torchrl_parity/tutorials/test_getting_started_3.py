"""torchrl's "Get started with data collection and storage" (getting-started-3), ported.

A SyncDataCollector with a RandomPolicy on CartPole and a ReplayBuffer over a
LazyMemmapStorage, as the tutorial writes them with ``torchrl`` replaced by ``rl_trainers``.
"""

from __future__ import annotations

import torch


def test_getting_started_3_collector_and_replay_buffer():
    torch.manual_seed(0)

    from rl_trainers.collectors import RandomPolicy, SyncDataCollector
    from rl_trainers.envs import GymEnv

    env = GymEnv("CartPole-v1")
    env.set_seed(0)

    policy = RandomPolicy(env.action_spec)
    collector = SyncDataCollector(env, policy, frames_per_batch=200, total_frames=-1)

    for data in collector:
        print(data)
        break
    assert data.batch_size == (200,)
    assert ("collector", "traj_ids") in data.keys(True)

    print(data["collector", "traj_ids"])
    traj_ids = data["collector", "traj_ids"]
    done = data["next", "done"].squeeze(-1)
    # one id per trajectory: it starts at 0 and grows by one after each end of episode
    assert traj_ids[0] == 0 and done.any()
    assert torch.equal(traj_ids[1:] - traj_ids[:-1], done[:-1].long())

    from rl_trainers.data.replay_buffers import LazyMemmapStorage, ReplayBuffer

    buffer = ReplayBuffer(storage=LazyMemmapStorage(max_size=1000))

    indices = buffer.extend(data)
    assert len(indices) == 200

    assert len(buffer) == collector.frames_per_batch

    sample = buffer.sample(batch_size=30)
    print(sample)
    # our sample looks exactly the same as the data we gathered from the collector
    assert sample.batch_size == (30,)
    assert set(sample.exclude("index", "_weight").keys(True, True)) <= set(data.keys(True, True))
    assert set(data.keys(True, True)) <= set(sample.keys(True, True))
    stored = buffer[:]
    torch.testing.assert_close(stored["observation"], data["observation"])
    collector.shutdown()
