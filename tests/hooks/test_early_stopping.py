"""``EarlyStopping``: stop when a logged metric stops improving (torchrl's signature)."""

from __future__ import annotations

import math

import pytest
from trainer_fakes import make_trainer

from rl_trainers.hooks import EarlyStopping, LogScalar

# every batch holds 2 envs x 4 steps = 8 frames; LogScalar logs its mean reward


def run(rewards, **kwargs):
    save = kwargs.pop("save_trainer_file", None)
    steps = kwargs.pop("optim_steps_per_batch", 2)
    trainer = make_trainer(rewards, save_trainer_file=save, optim_steps_per_batch=steps)
    LogScalar(logname="r_training").register(trainer)
    hook = EarlyStopping(monitor="r_training", **kwargs)
    hook.register(trainer)
    trainer.train()
    return trainer, hook


def test_stops_once_patience_frames_pass_without_improvement():
    trainer, hook = run([1, 2, 3, 3, 3, 3, 3, 3, 3, 3], patience=16, wait_for=0)
    # best 3 at frame 24; 48 - 24 = 24 > 16 stops at the 6th batch
    assert trainer.collected_frames == 48
    assert hook.best == 3.0 and hook.best_frame == 24 and hook.stopped_frame == 48
    assert trainer.interrupted.startswith("early stopping: r_training did not improve on 3")
    assert "for 24 frames (patience 16)" in trainer.interrupted


def test_min_mode_and_min_delta():
    # 5, 4.95 (not better by more than 0.1), 4.8 (better), then flat
    trainer, hook = run(
        [5, 4.95, 4.8, 4.8, 4.8, 4.8, 4.8], mode="min", min_delta=0.1, patience=8, wait_for=0
    )
    assert hook.best == pytest.approx(4.8) and hook.best_frame == 24
    assert trainer.collected_frames == 40


def test_no_stop_before_wait_for_frames():
    trainer, hook = run([1] + [0] * 9, patience=8, wait_for=64)
    assert trainer.collected_frames == 64 and hook.best_frame == 8


def test_runs_to_the_end_while_improving():
    trainer, hook = run(list(range(10)), patience=8, wait_for=0)
    assert trainer.interrupted is None and trainer.collected_frames == 80


def test_non_finite_metric_stops_at_once_unless_disabled():
    # no optimisation: the fake loss regresses the reward, which would be NaN too
    trainer, _ = run(
        [1, 2, math.nan, 3, 4], patience=1000, wait_for=10_000, optim_steps_per_batch=0
    )
    assert trainer.collected_frames == 24
    assert trainer.interrupted == "early stopping: r_training is nan at frame 24"
    trainer, _ = run(
        [1, 2, math.nan, 3, 4], patience=1000, check_finite=False, optim_steps_per_batch=0
    )
    assert trainer.interrupted is None


def test_stopping_saves_a_checkpoint(tmp_path):
    trainer, _ = run(
        [1, 1, 1, 1, 1], patience=8, wait_for=0, save_trainer_file=tmp_path / "ckpt.pt"
    )
    assert trainer.collected_frames == 24
    assert (tmp_path / "ckpt.pt").exists() and trainer.last_checkpoint is not None


def test_a_misnamed_metric_warns_with_the_logged_names():
    trainer = make_trainer([1, 1, 1])
    LogScalar(logname="r_training").register(trainer)
    EarlyStopping(monitor="reward", wait_for=0).register(trainer)
    with pytest.warns(UserWarning, match=r"'reward'.*Logged names: \['r_training', "):
        trainer.train()
    assert trainer.interrupted is None


def test_state_dict_round_trip_and_arguments():
    hook = EarlyStopping(monitor=("loss", "x"), patience=1e4)
    assert hook.monitor == "loss/x" and hook.patience == 10_000
    hook.best, hook.best_frame = 2.5, 80
    other = EarlyStopping()
    other.load_state_dict(hook.state_dict())
    assert (other.best, other.best_frame, other.stopped_frame) == (2.5, 80, None)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        EarlyStopping(mode="avg")
    with pytest.raises(ValueError, match="patience must be an integer >= 0"):
        EarlyStopping(patience=-1)
    with pytest.raises(RuntimeError, match="register it"):
        EarlyStopping()()
