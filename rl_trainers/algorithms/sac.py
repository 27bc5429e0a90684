"""SACTrainer: off-policy soft actor-critic from a replay buffer.

Every collected frame, warm-up frames included, is written to the replay buffer
(``batch_process``). Once the buffer holds ``learning_starts`` transitions, each batch is
followed by ``utd_ratio * frames_per_batch`` updates, each on a fresh sample
(``process_optim_batch``), and the target critics move toward the online ones after every
update (``post_optim``): the loop of :class:`~.off_policy.OffPolicyTrainer`.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.algorithms.base import (
    build_actor_critic,
    finish_build,
    prepare_run,
    require_continuous_actions,
)
from rl_trainers.algorithms.build import build
from rl_trainers.algorithms.off_policy import (
    OffPolicyTrainer,
    build_replay_buffer,
    check_buffer_fits_memory,
)

__all__ = ["SACTrainer", "check_buffer_fits_memory"]


class SACTrainer(OffPolicyTrainer):
    """SAC on the shared :class:`~rl_trainers.core.Trainer` loop.

    Keyword Args:
        collector: yields batches of transitions (random actions for its warm-up frames).
        total_frames: frames to train for.
        loss_module: a ``SACLoss``.
        optimizer: optimizer over ``loss_module.parameters()`` (actor, critics, alpha).
        replay_buffer: the buffer every collected frame is written to.
        target_updater: moves target critics toward the online ones (e.g. ``SoftUpdate``).
        frames_per_batch: frames in each collected batch.
        utd_ratio: updates per collected frame.
        learning_starts: transitions in the buffer before the first update.
        **kwargs: the :class:`AlgorithmTrainer` arguments (lr_scheduler, eval_env, logger...).
    """

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its actor and Q-value critics) built for ``env``'s specs."""
        actor, qvalue = build_actor_critic(cfg, env)
        return build(cfg, "loss", actor_network=actor, qvalue_network=qvalue)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> SACTrainer:
        """Build every component from a composed ``SACTrainerConfig``, seeding first."""
        from rl_trainers.objectives import SoftUpdate

        envs = prepare_run(cfg, output_dir)
        require_continuous_actions("SAC", cfg, envs.env)
        check_buffer_fits_memory(cfg, envs.env)
        loss = cls.build_loss(cfg, envs.env)
        return finish_build(
            cls,
            cfg,
            output_dir,
            envs,
            loss,
            replay_buffer=build_replay_buffer(cfg),
            target_updater=SoftUpdate(loss, tau=cfg.trainer.tau),
            utd_ratio=cfg.trainer.utd_ratio,
            learning_starts=cfg.trainer.learning_starts,
        )
