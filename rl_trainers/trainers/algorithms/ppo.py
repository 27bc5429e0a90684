"""PPOTrainer: on-policy PPO with GAE, epochs of shuffled minibatches.

The objective is the loss's: clipped surrogate (``ClipPPOLoss``), adaptive KL penalty
(``KLPENPPOLoss``) or the plain surrogate (``PPOLoss``), chosen by ``loss.loss_type``.

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

from rl_trainers.trainers.algorithms.base import (
    AlgorithmTrainer,
    build_actor_critic,
    finish_build,
    prepare_run,
)
from rl_trainers.trainers.algorithms.common import build
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.trainer import TrainerHookBase


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

    @property
    def current_batch(self) -> TensorDictBase | None:
        """The flat batch the minibatches are cut from (None before the first ``extend``)."""
        return self._flat

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


class PPOTrainer(AlgorithmTrainer):
    """PPO on the shared :class:`~rl_trainers.trainers.Trainer` loop.

    Args:
        collector: yields ``[num_envs, T]`` batches with ``sample_log_prob``.
        total_frames: frames to train for.
        loss_module: a ``ClipPPOLoss`` (or any PPO loss) with a value estimator set.
        optimizer: optimizer over ``loss_module.parameters()``.
        frames_per_batch: frames in each collected batch.
        num_epochs: passes over each batch.
        minibatch_size: transitions per optimisation step.
        anneal_clip_epsilon: anneal the clip range linearly to 0 over training (losses
            with a ``clip_epsilon``; the KL-penalty and plain losses have no clip range).
        **kwargs: the :class:`AlgorithmTrainer` arguments (lr_scheduler, eval_env, logger...).
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
        anneal_clip_epsilon: bool = False,
        **kwargs: Any,
    ) -> None:
        if minibatch_size > frames_per_batch:
            raise ConfigError(
                "trainer.minibatch_size",
                minibatch_size,
                f"at most collector.frames_per_batch ({frames_per_batch})",
            )
        super().__init__(
            collector=collector,
            total_frames=total_frames,
            loss_module=loss_module,
            optimizer=optimizer,
            frames_per_batch=frames_per_batch,
            optim_steps_per_batch=num_epochs * (frames_per_batch // minibatch_size),
            **kwargs,
        )
        self.minibatches = EpochMinibatches(minibatch_size)
        self.register_op("batch_process", self._advantage)
        self.minibatches.register(self)
        self._clip0: float | None = None
        if anneal_clip_epsilon and hasattr(loss_module, "clip_epsilon"):
            self._clip0 = float(loss_module.clip_epsilon)
            self.register_op("post_steps", self._anneal_clip)
        if hasattr(loss_module, "adapt_beta") and not loss_module.adapt_beta_each_call:
            self.register_op("post_steps", self._adapt_kl_penalty)
        elif hasattr(loss_module, "adapt_beta") and self._data_parallel is not None:
            # beta adapted on each rank's own minibatches: the ranks' mean after every batch
            self.register_op("post_steps", self._data_parallel.average_, tensors=[loss_module.beta])

    def _advantage(self, batch: TensorDictBase) -> TensorDictBase:
        with torch.no_grad():
            self.loss_module.value_estimator(batch)
        keys = getattr(self.loss_module, "in_keys", None)
        # minibatches carry only what the loss reads (indexing copies every entry)
        flat = batch.select(*keys, strict=False) if keys else batch
        self.minibatches.extend(flat.reshape(-1))
        return batch

    def _anneal_clip(self) -> None:
        """Set the clip range for the next batch: ``clip0 * (1 - frames / total_frames)``."""
        remaining = max(1.0 - self.collected_frames / self.total_frames, 0.0)
        current = self.loss_module.clip_epsilon
        if isinstance(current, torch.Tensor):  # ClipPPOLoss keeps it in a buffer, as torchrl
            current.fill_(self._clip0 * remaining)
        else:
            self.loss_module.clip_epsilon = self._clip0 * remaining

    def _adapt_kl_penalty(self) -> None:
        """Adapt the KL penalty once per policy update, on the KL over the whole batch
        (Schulman et al., 2017); ``beta`` is a buffer of the loss, so checkpoints keep it."""
        batch = self.minibatches.current_batch
        # data-parallel: the KL of all ranks' batches, so beta stays equal on every rank
        kl = self.mean_over_ranks(self.loss_module.measure_kl(batch))
        self.loss_module.adapt_beta(kl)

    def load_state_dict(self, state_dict: dict[str, Any], **kwargs: Any) -> None:
        """Load a checkpoint, then set the annealed clip range from the restored frame count.

        The clip range is not saved (a non-persistent buffer of the loss); without this the
        first batch after a resume would use the initial clip range.
        """
        super().load_state_dict(state_dict, **kwargs)
        if self._clip0 is not None:
            self._anneal_clip()

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> PPOTrainer:
        """Build every component from a composed ``PPOTrainerConfig``, seeding first."""
        envs = prepare_run(cfg, output_dir)
        actor, critic = build_actor_critic(cfg, envs.env)
        loss = build(cfg, "loss", actor_network=actor, critic_network=critic)
        return finish_build(
            cls,
            cfg,
            output_dir,
            envs,
            loss,
            num_epochs=cfg.trainer.num_epochs,
            minibatch_size=cfg.trainer.minibatch_size,
            anneal_clip_epsilon=cfg.trainer.anneal_clip_epsilon,
        )
