"""Seeded runs are reproducible; asynchronous collection logs the UTD ratio."""

from __future__ import annotations

import threading

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.core import Trainer
from rl_trainers.hooks import BatchSubSampler, LogScalar, ReplayBufferTrainer


class GymRolloutCollector:
    """A minimal collector over a real GymEnv: one rollout of T steps per batch."""

    def __init__(self, env, policy, T, n_batches):
        self.env, self.policy, self.T, self.n_batches = env, policy, T, n_batches

    def set_seed(self, seed):
        return self.env.set_seed(seed)

    def __iter__(self):
        for _ in range(self.n_batches):
            with torch.no_grad():
                batch = self.env.rollout(self.T, self.policy, break_when_any_done=False)
            yield batch.unsqueeze(0)  # yield outside no_grad: grad mode is thread-local

    def shutdown(self):
        self.env.close()


def run(seed):
    envs = pytest.importorskip("rl_trainers.envs")
    data = pytest.importorskip("rl_trainers.data")
    torch.manual_seed(seed)  # seed before building networks, as documented
    net = nn.Linear(4, 2)
    value = nn.Linear(4, 1)

    def policy(td):
        logits = net(td["observation"])
        idx = torch.distributions.Categorical(logits=logits).sample()
        return td.set("action", nn.functional.one_hot(idx, 2).float())

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = value

        def forward(self, td):
            err = self.value(td["observation"]) - td["next", "reward"]
            return TensorDict(loss_value=err.pow(2).mean())

    logger_records = []
    logger = type(
        "L", (), {"log_scalar": lambda s, n, v, step=None: logger_records.append((n, v, step))}
    )()
    loss = Loss()
    trainer = Trainer(
        collector=GymRolloutCollector(envs.GymEnv("CartPole-v1"), policy, T=20, n_batches=10),
        total_frames=100,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-2),
        logger=logger,
        log_interval=20,
        progress_bar=False,
        seed=seed,
    )
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(200), batch_size=16)
    ReplayBufferTrainer(rb, flatten_tensordicts=True).register(trainer)
    LogScalar(key=("next", "done"), logname="done_rate").register(trainer)
    trainer.train()
    return logger_records


def test_same_seed_same_logs():
    a, b = run(3), run(3)
    assert len(a) > 10 and a == b
    assert run(4) != a


class AsyncCollector:
    """Writes frames in a background thread."""

    def __init__(self, frames_per_tick=8):
        self.collected_frames = 0
        self._stop = threading.Event()
        self.frames_per_tick = frames_per_tick
        self.shutdown_calls = 0

    def start(self):
        def work():
            while not self._stop.is_set():
                self.collected_frames += self.frames_per_tick
                self._stop.wait(0.001)

        self._thread = threading.Thread(target=work, daemon=True)
        self._thread.start()

    def shutdown(self):
        self.shutdown_calls += 1
        self._stop.set()
        self._thread.join()


def test_async_collection_logs_utd_ratio(loss_module, logger):
    collector = AsyncCollector()

    def loss(td):
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = Trainer(
        collector=collector,
        total_frames=200,
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        logger=logger,
        log_interval=50,
        progress_bar=False,
        async_collection=True,
    )
    trainer.train()
    assert trainer.collected_frames >= 200 and collector.shutdown_calls == 1
    utd = logger.values("utd_ratio")
    assert utd and all(0 < v <= 1 for _, v in utd)
    step, value = utd[-1]
    assert value == pytest.approx(trainer._optim_count / step, rel=0.5)


def test_async_requires_start(collector, loss_module):
    with pytest.raises(ValueError, match="start"):
        Trainer(
            collector=collector,
            total_frames=10,
            frame_skip=1,
            loss_module=loss_module,
            async_collection=True,
        )


def test_batch_subsampler_in_loop(fakes):
    collector = fakes.Collector(num_envs=2, T=8)
    shapes = []

    def loss(td):
        shapes.append(tuple(td.shape))
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = Trainer(
        collector=collector,
        total_frames=16,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        progress_bar=False,
    )
    BatchSubSampler(batch_size=8, sub_traj_len=4).register(trainer)
    trainer.train()
    assert shapes == [(2, 4), (2, 4)]
