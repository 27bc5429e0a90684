"""``env.normalize_rewards`` in the app: the discount it takes, and returns that stay raw."""

from __future__ import annotations

import pytest
import torch
from resume.conftest import csv_curves  # tests/ is on sys.path

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.app.run import run
from rl_trainers.envs import RewardNorm


def _reward_norms(env) -> list[RewardNorm]:
    return [t for t in env.transform if isinstance(t, RewardNorm)]


@pytest.mark.parametrize(
    ("algorithm", "overrides", "gamma"),
    [
        ("a2c", ["experiment=a2c_pendulum"], 0.9),  # the preset turns it on; its loss.gamma
        ("a2c", ["experiment=a2c_pendulum", "env.reward_norm_gamma=0.5"], 0.5),
        ("ppo", ["env.normalize_rewards=true", "loss.gamma=0.97"], 0.97),
        ("pg", ["env.normalize_rewards=true"], 0.99),
    ],
)
def test_training_env_discounts_with_the_loss_gamma_and_the_eval_env_has_no_normaliser(
    tiny_config, tmp_path, algorithm, overrides, gamma
):
    trainer = build_trainer(tiny_config(algorithm, overrides), tmp_path)
    try:
        (norm,) = _reward_norms(trainer.collector.env)
        assert norm.gamma == pytest.approx(gamma)
        assert not _reward_norms(trainer.eval_env)
    finally:
        close_trainer(trainer)


def test_multi_process_collector_workers_take_the_loss_gamma_too(tiny_config, tmp_path):
    from rl_trainers.algorithms.build import EnvFromConfig, train_env_overrides

    cfg = tiny_config("ppo", ["env.normalize_rewards=true", "loss.gamma=0.9"])
    env = EnvFromConfig(cfg.env, **train_env_overrides(cfg))()
    try:
        assert [t.gamma for t in _reward_norms(env)] == [pytest.approx(0.9)]
    finally:
        env.close()


def test_evaluation_returns_are_the_same_with_and_without_reward_normalisation(
    tiny_config, tmp_path
):
    returns = []
    for flag in ("false", "true"):
        cfg = tiny_config("ppo", ["env=pendulum", f"env.normalize_rewards={flag}"])
        trainer = build_trainer(cfg, tmp_path / flag)
        try:
            returns.append(trainer.evaluate_final())
        finally:
            close_trainer(trainer)
    assert returns[0] == returns[1]
    assert max(returns[0]) < -100  # Pendulum's raw returns, far below a clipped sum


def test_logged_training_returns_are_raw_while_training_sees_normalised_rewards(
    tiny_config, tmp_path
):
    # 10-step episodes: the first batch (before any update) ends episodes in every env
    curves = {}
    for flag in ("false", "true"):
        cfg = tiny_config(
            "ppo", ["env=pendulum", "env.max_episode_steps=10", f"env.normalize_rewards={flag}"]
        )
        run(cfg, tmp_path / flag)
        curves[flag] = {
            k.rsplit("scalars/", 1)[-1]: v for k, v in csv_curves(tmp_path / flag).items()
        }
    plain, normalised = curves["false"], curves["true"]
    returns = next(k for k in plain if k.endswith("episode_return.csv") and "train" in k)
    assert plain[returns][0] == normalised[returns][0]  # first batch: same policy, raw sums
    critic = next(k for k in plain if "loss_critic" in k)
    assert plain[critic] != normalised[critic]  # the value targets were rescaled


def test_resume_across_the_switch_names_it(tiny_config, tmp_path):
    from rl_trainers.core.checkpoint import CheckpointError

    plain = build_trainer(tiny_config("ppo"), tmp_path / "a")
    try:
        plain.train()
    finally:
        close_trainer(plain)
    saved = torch.load(plain.save_trainer_file, weights_only=False)
    assert saved["meta"]["env.normalize_rewards"] is False
    # a checkpoint without the entry differs from either value
    del saved["meta"]["env.normalize_rewards"]
    older = tmp_path / "older.pt"
    torch.save(saved, older)
    for checkpoint, shown in ((plain.save_trainer_file, "False"), (older, "'<absent>'")):
        normalised = build_trainer(
            tiny_config("ppo", ["env.normalize_rewards=true"]), tmp_path / "b"
        )
        try:
            with pytest.raises(CheckpointError) as err:
                normalised.load_from_file(checkpoint)
            assert f"env.normalize_rewards: checkpoint {shown}, this run True" in str(err.value)
        finally:
            close_trainer(normalised)
        again = build_trainer(tiny_config("ppo"), tmp_path / "c")
        try:
            if checkpoint == older:
                with pytest.raises(CheckpointError, match="checkpoint '<absent>', this run False"):
                    again.load_from_file(checkpoint)
            else:
                again.load_from_file(checkpoint)
                assert again.collected_frames == 256
        finally:
            close_trainer(again)


def test_multi_process_collector_evaluates_with_the_workers_shared_statistics(
    tiny_config, tmp_path
):
    """With collector workers, the evaluation env normalises observations with the
    statistics the workers share, not with the never-updated copy of the trainer's process."""
    from rl_trainers.envs import VecNorm

    cfg = tiny_config(
        "ppo",
        [
            "env=pendulum",
            "env.normalize_observations=true",
            "env.normalize_rewards=true",
            "collector=multi_sync",
        ],
    )
    trainer = build_trainer(cfg, tmp_path)
    try:
        trainer.train()
        trainer.evaluate_final()
        shared_vecnorm, shared_reward_norm = trainer.collector.running_statistics
        (eval_vecnorm,) = [t for t in trainer.eval_env.transform if isinstance(t, VecNorm)]
        assert shared_vecnorm.count_0.item() > 0
        for name in ("sum_0", "ssq_0", "count_0"):
            assert torch.equal(getattr(eval_vecnorm, name), getattr(shared_vecnorm, name))
        assert shared_reward_norm.count.item() == trainer.collected_frames
    finally:
        close_trainer(trainer)
