"""async_collection: a background collector that dies, stops or stalls never hangs the run.

Every run happens in a thread joined with a timeout (or under pytest-timeout), so a
regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import torch
from collectors.collector_fake_env import CountingEnv  # tests/ is on sys.path
from tensordict import TensorDict

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.core import Trainer
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer

JOIN_S = 20.0  # far above any healthy run here; reached only by a hang


class FailingEnv(CountingEnv):
    """Raises in ``step_and_maybe_reset`` after ``fail_after`` steps; records when."""

    raised_at: float | None = None

    def step_and_maybe_reset(self, tensordict):
        try:
            return super().step_and_maybe_reset(tensordict)
        except ValueError:
            self.raised_at = time.monotonic()
            raise


def zero_loss(td):
    return TensorDict(loss_x=torch.zeros((), requires_grad=True))


def async_trainer(collector, total_frames, **kwargs):
    return Trainer(
        collector=collector,
        total_frames=total_frames,
        optim_steps_per_batch=1,
        loss_module=zero_loss,
        progress_bar=False,
        async_collection=True,
        **kwargs,
    )


def buffer_collector(env, total_frames=-1):
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1000, ndim=2))
    # a factory: the collector owns the env and closes it on shutdown
    return SyncDataCollector(
        lambda: env, frames_per_batch=8, total_frames=total_frames, replay_buffer=rb
    )


def train_in_thread(trainer):
    """Run ``trainer.train()`` in a thread; returns (error raised or None, seconds taken)."""
    outcome = {}

    def run():
        try:
            trainer.train()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            outcome["error"] = err

    thread = threading.Thread(target=run, name="train")
    start = time.monotonic()
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), f"train() still running after {JOIN_S} s: it hangs"
    return outcome.get("error"), time.monotonic() - start


def collector_threads():
    return [t for t in threading.enumerate() if t.name == "collector" and t.is_alive()]


def test_a_collector_that_dies_ends_the_run_with_its_error():
    env = FailingEnv((3, 5), fail_after=20)  # 2 sub-envs: dies after 40 frames
    collector = buffer_collector(env)
    trainer = async_trainer(collector, total_frames=1_000_000)

    error, _ = train_in_thread(trainer)

    assert isinstance(error, RuntimeError), error
    assert "ValueError: CountingEnv exploded on purpose" in str(error)
    assert isinstance(error.__cause__, ValueError)  # the original, with its traceback
    assert error.__cause__.__traceback__ is not None
    ended = time.monotonic()
    assert ended - env.raised_at < 1.0, "the trainer noticed the dead collector late"
    assert trainer.collected_frames <= 40
    # the usual shutdown: no collector thread left, the env it owned closed
    assert not collector_threads()
    assert env.is_closed


def test_a_collector_that_reaches_its_total_frames_ends_the_run():
    collector = buffer_collector(CountingEnv((3, 5)), total_frames=40)
    trainer = async_trainer(collector, total_frames=1_000)

    error, _ = train_in_thread(trainer)

    assert error is None
    assert trainer.collected_frames == 40 and trainer.interrupted is None
    assert not collector_threads()


class StalledCollector:
    """Starts, stays alive and never writes a frame (e.g. an env blocked in ``step``)."""

    collected_frames = 0
    is_running = True

    def __init__(self):
        self.shutdown_calls = 0

    def start(self):
        pass

    def shutdown(self):
        self.shutdown_calls += 1


def test_request_stop_while_waiting_for_frames_returns():
    collector = StalledCollector()
    trainer = async_trainer(collector, total_frames=100)
    threading.Timer(0.2, trainer.request_stop).start()

    error, seconds = train_in_thread(trainer)

    assert error is None and seconds < 5
    assert trainer.interrupted == "stop requested" and trainer.collected_frames == 0
    assert collector.shutdown_calls == 1


@pytest.mark.timeout(30)
def test_sigint_while_waiting_for_frames_returns(tmp_path):
    collector = StalledCollector()
    trainer = async_trainer(collector, total_frames=100, save_trainer_file=tmp_path / "ckpt.pt")
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    trainer.train()  # in the main thread: the signal handler is installed

    assert trainer.interrupted == "SIGINT" and collector.shutdown_calls == 1
