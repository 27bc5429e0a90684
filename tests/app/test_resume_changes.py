"""Resuming a run with changed settings: fewer evaluation episodes and another optimizer."""

from __future__ import annotations

import warnings

import pytest

from rl_trainers.algorithms import build_trainer


def test_resume_with_fewer_eval_episodes_does_not_warn(tiny_config, tmp_path):
    first = build_trainer(tiny_config("ppo"), tmp_path / "a")
    first.train()
    resumed = build_trainer(tiny_config("ppo", ["eval.episodes=1"]), tmp_path / "b")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        resumed.load_from_file(first.save_trainer_file)
    assert resumed.collected_frames == 256


def test_resume_with_another_optimizer_names_it_instead_of_a_key_error(tiny_config, tmp_path):
    """Resuming with another optimizer than the checkpoint's names both instead of failing at
    the first step."""
    from rl_trainers.core.checkpoint import CheckpointError

    first = build_trainer(tiny_config("ppo"), tmp_path / "a")
    first.train()
    resumed = build_trainer(tiny_config("ppo", ["optimizer=sgd"]), tmp_path / "b")
    with pytest.raises(CheckpointError) as err:
        resumed.load_from_file(first.save_trainer_file)
    assert "optimizer._target_: checkpoint 'torch.optim.Adam', this run 'torch.optim.SGD'" in str(
        err.value
    )
    same = build_trainer(tiny_config("ppo", ["optimizer.lr=3e-4"]), tmp_path / "c")
    same.load_from_file(first.save_trainer_file)  # another lr is not another optimizer
