"""PPOTrainer: on-policy PPO with GAE, epochs of shuffled minibatches, clipped objective.

Per collected batch (``[num_envs, T]``): GAE advantages and value targets are computed once
with the current critic (``batch_process``), the batch is flattened, and
``num_epochs * (frames_per_batch // minibatch_size)`` optimisation steps each draw the next
minibatch of a fresh permutation per epoch (``process_optim_batch``). The learning-rate
schedule and the clip-range annealing step once per batch (``post_steps``).
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
    orthogonal_init_,
    plain_config,
    register_run_state,
    resolve_logger,
    set_num_threads,
)
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.trainer import Trainer, TrainerHookBase


class EpochMinibatches(TrainerHookBase):
    """Serves shuffled minibatches of the current batch, a new permutation every epoch."""

    def __init__(self, minibatch_size: int) -> None:
        self.minibatch_size = minibatch_size
        self._flat: TensorDictBase | None = None
        self._order = torch.empty(0, dtype=torch.long)
        self._cursor = 0

    def register(self, trainer, name: str = "epoch_minibatches") -> None:
        trainer.register_op("process_optim_batch", self.sample)

    def extend(self, flat_batch: TensorDictBase) -> None:
        """Use ``flat_batch`` (one batch dimension) for the next epochs."""
        self._flat = flat_batch
        self._cursor = len(flat_batch)  # forces a new permutation on the next sample

    def sample(self, batch: TensorDictBase | None = None) -> TensorDictBase:
        n = len(self._flat)
        if self.minibatch_size == n:
            # one minibatch per epoch: every permutation holds the same transitions and the
            # loss is a mean over them, so skip the shuffle and the copy
            return self._flat
        if self._cursor + self.minibatch_size > n:
            self._order = torch.randperm(n)
            self._cursor = 0
        idx = self._order[self._cursor : self._cursor + self.minibatch_size]
        self._cursor += self.minibatch_size
        return self._flat[idx]


class PPOTrainer(Trainer):
    """PPO on the shared :class:`~rl_trainers.trainers.Trainer` loop.

    Args:
        collector: yields ``[num_envs, T]`` batches with ``sample_log_prob``.
        total_frames: frames to train for.
        loss_module: a ``ClipPPOLoss`` (or any PPO loss) with a value estimator set.
        optimizer: optimizer over ``loss_module.parameters()``.
        frames_per_batch: frames in each collected batch.
        num_epochs: passes over each batch.
        minibatch_size: transitions per optimisation step.
        lr_scheduler: stepped once per batch (checkpointed).
        anneal_clip_epsilon: anneal the clip range linearly to 0 over training.
        eval_env: env for evaluations (also used by :meth:`evaluate_final`).
        eval_episodes: episodes per evaluation.
        eval_interval: evaluate every this many frames during training (0: never).
        **trainer_kwargs: the remaining :class:`Trainer` arguments (logger, clip_norm...).
    """

    def __init__(
        self,
        *,
        collector,
        total_frames: int,
        loss_module,
        optimizer: torch.optim.Optimizer,
        frames_per_batch: int,
        num_epochs: int = 10,
        minibatch_size: int = 64,
        lr_scheduler=None,
        anneal_clip_epsilon: bool = False,
        eval_env=None,
        eval_episodes: int = 10,
        eval_interval: int = 0,
        **trainer_kwargs: Any,
    ) -> None:
        if minibatch_size > frames_per_batch:
            raise ConfigError(
                "trainer.minibatch_size",
                minibatch_size,
                f"at most collector.frames_per_batch ({frames_per_batch})",
            )
        steps = num_epochs * (frames_per_batch // minibatch_size)
        super().__init__(
            collector=collector,
            total_frames=total_frames,
            loss_module=loss_module,
            optimizer=optimizer,
            optim_steps_per_batch=steps,
            **trainer_kwargs,
        )
        self.eval_env = eval_env
        self.eval_episodes = eval_episodes
        self.minibatches = EpochMinibatches(minibatch_size)
        self.register_op("batch_process", self._advantage)
        self.minibatches.register(self)
        LogEpisodeReturn().register(self)
        if lr_scheduler is not None:
            self.register_module("lr_scheduler", lr_scheduler)
            self.register_op("post_steps", lr_scheduler.step)
        if anneal_clip_epsilon:
            self._clip0 = float(loss_module.clip_epsilon)
            self.register_op("post_steps", self._anneal_clip)
        if eval_env is not None and eval_interval > 0:
            every = max(1, eval_interval // frames_per_batch)
            self.register_op("post_steps_log", self._evaluate, every=every)

    def _advantage(self, batch: TensorDictBase) -> TensorDictBase:
        with torch.no_grad():
            self.loss_module.value_estimator(batch)
        keys = getattr(self.loss_module, "in_keys", None)
        # minibatches carry only what the loss reads (indexing copies every entry)
        flat = batch.select(*keys, strict=False) if keys else batch
        self.minibatches.extend(flat.reshape(-1))
        return batch

    def _anneal_clip(self) -> None:
        remaining = max(1.0 - self.collected_frames / self.total_frames, 0.0)
        self.loss_module.clip_epsilon = self._clip0 * remaining

    def _evaluate(self, batch: TensorDictBase) -> dict[str, Any]:
        returns = torch.tensor(self.evaluate_final())
        return {"eval/return_mean": returns.mean(), "eval/return_std": returns.std(correction=0)}

    def evaluate_final(self) -> list[float]:
        """Returns of ``eval_episodes`` deterministic episodes on the evaluation env."""
        return evaluate_episodes(self.eval_env, self.loss_module.actor_network, self.eval_episodes)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> PPOTrainer:
        """Build every component from a composed ``PPOTrainerConfig``, seeding first."""
        from rl_trainers.modules import make_actor, make_value
        from rl_trainers.trainers.helpers import activation_class, seed_everything

        check_output_dir(output_dir, cfg)
        seed_everything(cfg.seed)
        net = cfg.network
        set_num_threads(cfg.trainer.num_threads, max([*net.policy.num_cells, *net.value.num_cells]))
        env = build(cfg, "env")
        env.set_seed(cfg.seed)
        eval_env = build(cfg, "env", num_envs=cfg.eval.episodes, reward_scale=1.0)
        eval_env.set_seed(cfg.seed + 10_000)
        actor = make_actor(
            env.observation_spec,
            env.action_spec,
            num_cells=list(net.policy.num_cells),
            activation=activation_class(net.policy.activation),
        )
        critic = make_value(
            env.observation_spec,
            num_cells=list(net.value.num_cells),
            activation=activation_class(net.value.activation),
        )
        if net.orthogonal_init:
            orthogonal_init_(actor, output_gain=0.01)
            orthogonal_init_(critic, output_gain=1.0)
        loss = build(cfg, "loss", actor_network=actor, critic_network=critic)
        optimizer = build(cfg, "optimizer", params=list(loss.parameters()))
        frames_per_batch = cfg.collector.frames_per_batch
        num_batches = -(-cfg.trainer.total_frames // frames_per_batch)
        scheduler = build(cfg, "lr_scheduler", optimizer=optimizer, total_steps=num_batches)
        collector = build_collector(cfg, env, actor)
        logger = resolve_logger(cfg, output_dir)
        logger.log_hparams(plain_config(cfg))
        loop = cfg.trainer
        trainer = cls(
            collector=collector,
            total_frames=loop.total_frames,
            loss_module=loss,
            optimizer=optimizer,
            frames_per_batch=frames_per_batch,
            num_epochs=loop.num_epochs,
            minibatch_size=loop.minibatch_size,
            lr_scheduler=scheduler,
            anneal_clip_epsilon=loop.anneal_clip_epsilon,
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
