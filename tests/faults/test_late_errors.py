"""An error raised after the last frame was counted reaches the user."""

from __future__ import annotations

import pytest
from collectors.collector_fake_env import CountingEnv
from core.test_async_collection import async_trainer, train_in_thread  # tests/ on sys.path

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer

pytestmark = pytest.mark.timeout(60)


class FillingBuffer(TensorDictReplayBuffer):
    """Refuses the batch that brings it to ``limit`` frames (as a full memmap disk would)."""

    def __init__(self, limit: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.limit, self.frames = limit, 0

    def extend(self, data):
        self.frames += data.numel()
        if self.frames >= self.limit:
            raise OSError(28, "No space left on device")
        return super().extend(data)


def test_background_collector_error_on_the_last_batch_is_raised():
    """The collector counts a batch's frames before writing it to the buffer: the trainer
    can reach ``total_frames`` while the write of that last batch fails."""
    rb = FillingBuffer(64, storage=LazyTensorStorage(1000, ndim=2))
    env = CountingEnv((3, 5))
    collector = SyncDataCollector(
        lambda: env, frames_per_batch=8, total_frames=64, replay_buffer=rb
    )
    trainer = async_trainer(collector, total_frames=64)
    error, _ = train_in_thread(trainer)
    assert isinstance(error, RuntimeError), error
    assert "No space left on device" in str(error)
