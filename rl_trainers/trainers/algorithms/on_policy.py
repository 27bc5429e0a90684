"""OnPolicyTrainer: what PPO, A2C and vanilla policy gradient share, learning from each batch.

Per collected batch (``[num_envs, T]``): advantages (and value targets, with a critic) are
computed once, with the current networks and no gradient (``batch_process``,
:meth:`OnPolicyTrainer.compute_advantage`); the batch is flattened, keeping only the entries
the loss reads; then ``num_epochs * (frames_per_batch // minibatch_size)`` optimisation
steps each take the next minibatch of a fresh permutation per epoch
(``process_optim_batch``, :class:`EpochMinibatches`). PPO runs several epochs of
minibatches; A2C and the vanilla policy gradient one step on the whole batch
(``num_epochs=1``, ``minibatch_size=frames_per_batch``). Nothing is kept between batches.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_trainers.trainers.algorithms.base import AlgorithmTrainer
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.trainer import TrainerHookBase

__all__ = ["EpochMinibatches", "OnPolicyTrainer"]


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


class OnPolicyTrainer(AlgorithmTrainer):
    """An :class:`AlgorithmTrainer` optimising on each collected batch, then dropping it.

    Args:
        collector: yields ``[num_envs, T]`` batches (with ``sample_log_prob`` where the loss
            reads it).
        total_frames: frames to train for.
        loss_module: an actor-critic (or actor-only) policy-gradient loss; its
            ``value_estimator`` writes ``advantage``/``value_target`` unless
            :meth:`compute_advantage` is overridden.
        optimizer: optimizer over ``loss_module.parameters()``.
        frames_per_batch: frames in each collected batch.
        num_epochs: passes over each batch.
        minibatch_size: transitions per optimisation step (None: the whole batch).
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
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        minibatch_size = frames_per_batch if minibatch_size is None else minibatch_size
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

    def compute_advantage(self, batch: TensorDictBase) -> None:
        """Write ``advantage`` (and ``value_target``) into ``batch`` (no gradient): the loss's
        value estimator (GAE for PPO and A2C)."""
        self.loss_module.value_estimator(batch)

    def _advantage(self, batch: TensorDictBase) -> TensorDictBase:
        with torch.no_grad():
            self.compute_advantage(batch)
        keys = getattr(self.loss_module, "in_keys", None)
        # minibatches carry only what the loss reads (indexing copies every entry)
        flat = batch.select(*keys, strict=False) if keys else batch
        self.minibatches.extend(flat.reshape(-1))
        return batch
