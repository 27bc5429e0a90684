"""Builders (``torchrl.trainers.helpers`` names): each makes one component from its settings."""

from rl_trainers.trainers.helpers.builders import (
    correct_for_frame_skip,
    get_stats_random_rollout,
    make_collector_offpolicy,
    make_collector_onpolicy,
    make_dqn_loss,
    make_replay_buffer,  # both the Hydra form and torchrl's (device, cfg) form
    make_target_updater,
    make_trainer,
    parallel_env_constructor,
    sync_async_collector,
    sync_sync_collector,
    transformed_env_constructor,
)
from rl_trainers.trainers.helpers.components import (
    activation_class,
    make_a2c_loss,
    make_ddpg_loss,
    make_dqn_loss_module,
    make_env,
    make_lr_scheduler,
    make_ppo_loss,
    make_reinforce_loss,
    make_sac_loss,
    make_td3_loss,
    seed_everything,
)
from rl_trainers.trainers.helpers.malloc import keep_freed_memory

__all__ = [
    "activation_class",
    "correct_for_frame_skip",
    "get_stats_random_rollout",
    "make_collector_offpolicy",
    "make_collector_onpolicy",
    "make_dqn_loss",
    "make_target_updater",
    "make_trainer",
    "parallel_env_constructor",
    "sync_async_collector",
    "sync_sync_collector",
    "transformed_env_constructor",
    "keep_freed_memory",
    "make_ddpg_loss",
    "make_a2c_loss",
    "make_dqn_loss_module",
    "make_td3_loss",
    "make_env",
    "make_lr_scheduler",
    "make_ppo_loss",
    "make_reinforce_loss",
    "make_replay_buffer",
    "make_sac_loss",
    "seed_everything",
]
