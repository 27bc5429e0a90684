"""DDPGTrainer: deep deterministic policy gradient from a replay buffer.

TD3's loop (:class:`~.td3.TD3Trainer`) with one critic, no target policy smoothing and no
delay: at every update the critic steps, then the actor, then the target actor and critic
move toward the online ones (Polyak averaging with ``tau``). The collector explores with
Gaussian or Ornstein-Uhlenbeck noise on the deterministic actor; evaluations act without it.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.algorithms.td3 import (
    TD3Trainer,
    add_ou_init_tracker,
    build_deterministic_loss,
    build_deterministic_trainer,
)

__all__ = ["DDPGTrainer"]


class DDPGTrainer(TD3Trainer):
    """DDPG on the shared :class:`~rl_trainers.core.Trainer` loop (arguments as
    :class:`~.td3.TD3Trainer`'s, with ``policy_delay=1`` and ``critic_loss="loss_value"``)."""

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its actor and critic) built for ``env``'s specs."""
        add_ou_init_tracker(cfg)
        return build_deterministic_loss(cfg, env, "DDPG")

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> DDPGTrainer:
        """Build every component from a composed ``DDPGTrainerConfig``, seeding first."""
        return build_deterministic_trainer(cls, cfg, output_dir, "DDPG")
