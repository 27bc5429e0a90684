"""DQNTrainer: deep Q-learning from a replay buffer, with epsilon-greedy exploration.

The loop of :class:`~.off_policy.OffPolicyTrainer` (every frame to the buffer; after
``learning_starts`` transitions, ``utd_ratio * frames_per_batch`` updates per batch, each on
a fresh sample), plus:

* target network: every ``target_update_interval`` updates,
  ``target <- tau * online + (1 - tau) * target`` (:class:`~rl_trainers.objectives.IntervalTargetUpdate`;
  ``tau = 1``, the default, is Mnih et al.'s hard copy);
* exploration: the collector acts with an :class:`~rl_trainers.modules.EGreedyModule`
  after the greedy Q-value actor; its epsilon falls linearly from ``eps_init`` to
  ``eps_end`` over the first ``exploration_fraction * total_frames`` frames, stepped once
  per batch (``post_steps``) and checkpointed (module ``exploration``);
* evaluation acts greedily: the epsilon-greedy module does nothing under the
  deterministic exploration type evaluations run with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tensordict import TensorDictBase

from rl_trainers.algorithms.base import build_model, finish_build, prepare_run
from rl_trainers.algorithms.build import build
from rl_trainers.algorithms.off_policy import (
    OffPolicyTrainer,
    build_replay_buffer,
    check_buffer_fits_memory,
)
from rl_trainers.errors import ConfigError

__all__ = ["DQNTrainer"]


class DQNTrainer(OffPolicyTrainer):
    """DQN on the shared :class:`~rl_trainers.core.Trainer` loop.

    Keyword Args:
        exploration: the collector policy's :class:`~rl_trainers.modules.EGreedyModule`;
            stepped by ``frames_per_batch`` after every batch and checkpointed (None: none
            to anneal).
        **kwargs: the :class:`OffPolicyTrainer` arguments (collector, loss_module, optimizer,
            replay_buffer, target_updater, utd_ratio, learning_starts...).
    """

    def __init__(self, *, exploration=None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exploration = exploration
        if exploration is None:
            return
        self.register_module("exploration", exploration)
        # epsilon anneals over frames of all ranks (data-parallel: world_size batches each)
        frames = self.frames_per_batch * self.world_size
        self.register_op("post_steps", exploration.step, frames=frames)
        if self.train_logs:
            self.register_op("pre_steps_log", self._log_epsilon)

    def _log_epsilon(self, batch: TensorDictBase) -> dict[str, Any]:
        return {"train/epsilon": self.exploration.eps}

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its Q-value actor) built for ``env``'s specs."""
        return build(cfg, "loss", value_network=build_model(cfg, "qvalue", env))

    @classmethod
    def exploration_policy(cls, cfg: DictConfig, loss, env):
        """The loss's Q-value actor followed by the annealed epsilon-greedy module (the
        collector's policy, and the evaluations': greedy when they act deterministically)."""
        from rl_trainers.modules import EGreedyWrapper

        loop = cfg.trainer
        return EGreedyWrapper(
            loss.value_network,
            eps_init=loop.eps_init,
            eps_end=loop.eps_end,
            annealing_num_steps=exploration_frames(cfg),
            spec=env.action_spec,
        )

    @classmethod
    def eval_policy_of(cls, cfg: DictConfig, loss, env):
        """The policy evaluations act with: :meth:`exploration_policy` (greedy when
        deterministic)."""
        return cls.exploration_policy(cfg, loss, env)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> DQNTrainer:
        """Build every component from a composed ``DQNTrainerConfig``, seeding first."""
        from rl_trainers.modules import spec_kind
        from rl_trainers.objectives import IntervalTargetUpdate

        envs = prepare_run(cfg, output_dir)
        if spec_kind(envs.env.action_spec) not in ("one_hot", "categorical"):
            raise ConfigError(
                "env.env_name",
                cfg.env.env_name,
                "DQN needs an environment with discrete actions; train continuous ones with "
                "sac, td3, ddpg, ppo, a2c or pg (rl-trainers sac ..., or "
                "sota-implementations/sac_trainer/train.py)",
            )
        check_buffer_fits_memory(cfg, envs.env)
        loss = cls.build_loss(cfg, envs.env)
        policy = cls.exploration_policy(cfg, loss, envs.env)
        loop = cfg.trainer
        return finish_build(
            cls,
            cfg,
            output_dir,
            envs,
            loss,
            policy=policy,  # the collector explores with epsilon-greedy actions
            # evaluations too: greedy under their deterministic interaction type (the
            # module does nothing then), epsilon-greedy with eval.deterministic=false
            eval_policy=policy,
            replay_buffer=build_replay_buffer(cfg),
            target_updater=IntervalTargetUpdate(
                loss, interval=loop.target_update_interval, tau=loop.tau
            ),
            utd_ratio=loop.utd_ratio,
            learning_starts=loop.learning_starts,
            exploration=policy.explorer,
        )


def exploration_frames(cfg: DictConfig) -> int:
    """Frames over which epsilon decays: ``exploration_fraction * total_frames`` (at least 1)."""
    return max(1, round(cfg.trainer.exploration_fraction * cfg.trainer.total_frames))
