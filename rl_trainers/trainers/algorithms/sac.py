"""SACTrainer: off-policy soft actor-critic from a replay buffer.

Every collected frame, warm-up frames included, is written to the replay buffer
(``batch_process``). Once the buffer holds ``learning_starts`` transitions, each batch is
followed by ``utd_ratio * frames_per_batch`` updates, each on a fresh sample
(``process_optim_batch``), and the target critics move toward the online ones after every
update (``post_optim``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from tensordict import TensorDictBase

from rl_trainers.trainers.algorithms.common import (
    LogEpisodeReturn,
    build,
    build_collector,
    check_output_dir,
    evaluate_episodes,
    plain_config,
    register_run_state,
    resolve_logger,
    set_num_threads,
)
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.hooks import ReplayBufferTrainer, TargetNetUpdaterHook
from rl_trainers.trainers.trainer import Trainer


class SACTrainer(Trainer):
    """SAC on the shared :class:`~rl_trainers.trainers.Trainer` loop.

    Args:
        collector: yields batches of transitions (random actions for its warm-up frames).
        total_frames: frames to train for.
        loss_module: a ``SACLoss``.
        optimizer: optimizer over ``loss_module.parameters()`` (actor, critics, alpha).
        replay_buffer: the buffer every collected frame is written to.
        target_updater: moves target critics toward the online ones (e.g. ``SoftUpdate``).
        frames_per_batch: frames in each collected batch.
        utd_ratio: updates per collected frame.
        learning_starts: transitions in the buffer before the first update.
        eval_env: env for evaluations (also used by :meth:`evaluate_final`).
        eval_episodes: episodes per evaluation.
        eval_interval: evaluate every this many frames during training (0: never).
        **trainer_kwargs: the remaining :class:`Trainer` arguments.
    """

    def __init__(
        self,
        *,
        collector,
        total_frames: int,
        loss_module,
        optimizer: torch.optim.Optimizer,
        replay_buffer,
        target_updater,
        frames_per_batch: int = 1,
        utd_ratio: float = 1.0,
        learning_starts: int = 100,
        lr_scheduler=None,
        eval_env=None,
        eval_episodes: int = 10,
        eval_interval: int = 0,
        **trainer_kwargs: Any,
    ) -> None:
        if utd_ratio <= 0:
            raise ConfigError(
                "trainer.utd_ratio", utd_ratio, "a positive number of updates per frame"
            )
        self.updates_per_batch = max(1, round(utd_ratio * frames_per_batch))
        super().__init__(
            collector=collector,
            total_frames=total_frames,
            loss_module=loss_module,
            optimizer=optimizer,
            optim_steps_per_batch=0,
            **trainer_kwargs,
        )
        self.learning_starts = learning_starts
        self.replay_buffer = replay_buffer
        self.eval_env = eval_env
        self.eval_episodes = eval_episodes
        ReplayBufferTrainer(replay_buffer, flatten_tensordicts=True).register(self)
        self.register_op("pre_optim_steps", self._start_learning)
        TargetNetUpdaterHook(target_updater).register(self)
        LogEpisodeReturn().register(self)
        if lr_scheduler is not None:
            self.register_module("lr_scheduler", lr_scheduler)
            self.register_op("post_steps", lr_scheduler.step)
        if eval_env is not None and eval_interval > 0:
            every = max(1, eval_interval // frames_per_batch)
            self.register_op("post_steps_log", self._evaluate, every=every)

    def _start_learning(self) -> None:
        """No updates until the buffer holds ``learning_starts`` transitions."""
        ready = len(self.replay_buffer) >= self.learning_starts
        self.optim_steps_per_batch = self.updates_per_batch if ready else 0

    def _evaluate(self, batch: TensorDictBase) -> dict[str, Any]:
        returns = torch.tensor(self.evaluate_final())
        return {"eval/return_mean": returns.mean(), "eval/return_std": returns.std(correction=0)}

    def evaluate_final(self) -> list[float]:
        """Returns of ``eval_episodes`` deterministic episodes on the evaluation env."""
        return evaluate_episodes(self.eval_env, self.loss_module.actor_network, self.eval_episodes)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> SACTrainer:
        """Build every component from a composed ``SACTrainerConfig``, seeding first."""
        from rl_trainers.modules import make_actor, make_qvalue, spec_kind
        from rl_trainers.objectives import SoftUpdate
        from rl_trainers.trainers.helpers import activation_class, seed_everything

        check_output_dir(output_dir, cfg)
        seed_everything(cfg.seed)
        net = cfg.network
        set_num_threads(cfg.trainer.num_threads, max([*net.policy.num_cells, *net.value.num_cells]))
        env = build(cfg, "env")
        if spec_kind(env.action_spec) in ("one_hot", "categorical"):
            raise ConfigError(
                "env.env_name",
                cfg.env.env_name,
                "SAC needs an environment with continuous (Box) actions; use PPO for discrete ones",
            )
        env.set_seed(cfg.seed)
        eval_env = build(cfg, "env", num_envs=cfg.eval.episodes, reward_scale=1.0)
        eval_env.set_seed(cfg.seed + 10_000)
        actor = make_actor(
            env.observation_spec,
            env.action_spec,
            num_cells=list(net.policy.num_cells),
            activation=activation_class(net.policy.activation),
        )
        qvalue = make_qvalue(
            env.observation_spec,
            env.action_spec,
            num_cells=list(net.value.num_cells),
            activation=activation_class(net.value.activation),
        )
        loss = build(cfg, "loss", actor_network=actor, qvalue_network=qvalue)
        optimizer = build(cfg, "optimizer", params=list(loss.parameters()))
        frames_per_batch = cfg.collector.frames_per_batch
        num_batches = -(-cfg.trainer.total_frames // frames_per_batch)
        scheduler = build(cfg, "lr_scheduler", optimizer=optimizer, total_steps=num_batches)
        collector = build_collector(cfg, env, actor)
        replay_buffer = build(cfg, "replay_buffer")
        logger = resolve_logger(cfg, output_dir)
        logger.log_hparams(plain_config(cfg))
        loop = cfg.trainer
        trainer = cls(
            collector=collector,
            total_frames=loop.total_frames,
            loss_module=loss,
            optimizer=optimizer,
            replay_buffer=replay_buffer,
            target_updater=SoftUpdate(loss, tau=loop.tau),
            frames_per_batch=frames_per_batch,
            utd_ratio=loop.utd_ratio,
            learning_starts=loop.learning_starts,
            lr_scheduler=scheduler if cfg.lr_scheduler.kind != "constant" else None,
            eval_env=eval_env,
            eval_episodes=cfg.eval.episodes,
            eval_interval=cfg.eval.interval,
            logger=logger,
            clip_grad_norm=loop.clip_grad_norm,
            clip_norm=loop.clip_norm,
            progress_bar=loop.progress_bar,
            log_interval=loop.log_interval,
            save_trainer_interval=loop.save_trainer_interval or loop.total_frames,
            save_trainer_file=output_dir / "checkpoints" / "trainer.pt",
            keep_checkpoints=loop.keep_checkpoints,
        )
        register_run_state(trainer, cfg, logger, eval_env)
        return trainer
