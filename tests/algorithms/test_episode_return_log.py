"""A trainer built by hand on an env without ``RewardSum`` trains and warns that the
episode-return log needs that transform."""

from __future__ import annotations

import pytest


def test_ppo_trainer_built_by_hand_on_an_env_without_reward_sum_trains():
    # a porter's env has no RewardSum: the episode-return log is skipped with a warning
    import torch

    from rl_trainers.algorithms import PPOTrainer
    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.envs import GymEnv
    from rl_trainers.modules import make_actor, make_value
    from rl_trainers.objectives import ClipPPOLoss, ValueEstimators

    torch.manual_seed(0)
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    actor = make_actor(env.observation_spec, env.action_spec, num_cells=(16,))
    loss = ClipPPOLoss(actor, make_value(env.observation_spec, num_cells=(16,)))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    trainer = PPOTrainer(
        collector=SyncDataCollector(env, actor, frames_per_batch=64, total_frames=256),
        total_frames=256,
        frames_per_batch=64,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        num_epochs=2,
        minibatch_size=32,
        progress_bar=False,
    )
    with pytest.warns(UserWarning, match="add the RewardSum transform"):
        trainer.train()
    assert trainer.collected_frames == 256 and trainer._optim_count == 4 * 2 * 2
