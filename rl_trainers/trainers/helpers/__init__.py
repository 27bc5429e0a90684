"""Builders (``torchrl.trainers.helpers`` names): each makes one component from its settings."""

from rl_trainers.trainers.helpers.components import (
    activation_class,
    make_env,
    make_lr_scheduler,
    make_ppo_loss,
    make_replay_buffer,
    make_sac_loss,
    seed_everything,
)

__all__ = [
    "activation_class",
    "make_env",
    "make_lr_scheduler",
    "make_ppo_loss",
    "make_replay_buffer",
    "make_sac_loss",
    "seed_everything",
]
