"""A2CTrainer: synchronous advantage actor-critic, one gradient step per collected batch.

The loop of :class:`~.on_policy.OnPolicyTrainer` with one epoch of one minibatch: the
whole ``[num_envs, T]`` batch (SB3's ``n_envs * n_steps``) gives GAE advantages and value
targets (``lmbda=1`` by default: the discounted return of the rest of the batch,
bootstrapped with the critic), then one step of ``A2CLoss``
(``-mean(log_prob * A) + critic_coef * value loss - entropy_coef * entropy``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rl_trainers.algorithms.base import build_actor_critic, finish_build, prepare_run
from rl_trainers.algorithms.build import build
from rl_trainers.algorithms.on_policy import OnPolicyTrainer, reject_minibatch_arguments

__all__ = ["A2CTrainer"]


class A2CTrainer(OnPolicyTrainer):
    """A2C on the shared :class:`~rl_trainers.core.Trainer` loop: one optimisation step
    on each whole collected batch.

    Args:
        **kwargs: the :class:`OnPolicyTrainer` arguments (collector, loss_module, optimizer,
            frames_per_batch...); ``num_epochs`` and ``minibatch_size`` are fixed to one step
            on the whole batch.
    """

    def __init__(self, **kwargs: Any) -> None:
        reject_minibatch_arguments(type(self).__name__, kwargs)
        super().__init__(**kwargs)

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its actor and critic) built for ``env``'s specs."""
        actor, critic = build_actor_critic(cfg, env)
        return build(cfg, "loss", actor_network=actor, critic_network=critic)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> A2CTrainer:
        """Build every component from a composed ``A2CTrainerConfig``, seeding first."""
        envs = prepare_run(cfg, output_dir)
        return finish_build(cls, cfg, output_dir, envs, cls.build_loss(cfg, envs.env))
