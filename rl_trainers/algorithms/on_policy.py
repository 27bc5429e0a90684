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

from rl_trainers.algorithms.base import AlgorithmTrainer
from rl_trainers.core.loop import TrainerHookBase
from rl_trainers.errors import ConfigError

__all__ = ["EpochMinibatches", "OnPolicyTrainer", "reject_minibatch_arguments"]


class EpochMinibatches(TrainerHookBase):
    """Serves shuffled minibatches of the current batch, a new permutation every epoch."""

    def __init__(self, minibatch_size: int) -> None:
        self.minibatch_size = minibatch_size
        self._flat: TensorDictBase | None = None
        self._size = 0  # len(self._flat), read on every sample
        self._order = torch.empty(0, dtype=torch.long)
        self._cursor = 0

    def register(self, trainer, name: str = "epoch_minibatches") -> None:
        trainer.register_op("process_optim_batch", self.sample)

    def extend(self, flat_batch: TensorDictBase) -> None:
        """Use ``flat_batch`` (one batch dimension) for the next epochs."""
        self._flat = flat_batch
        self._size = self._cursor = len(flat_batch)  # forces a new permutation next sample

    @classmethod
    def eval_policy_of(cls, cfg, loss, env):
        """The actor, or with gSDE its ``act_with_fresh_noise`` (as evaluations act)."""
        actor = loss.actor_network
        return getattr(actor, "act_with_fresh_noise", None) or actor

    @property
    def current_batch(self) -> TensorDictBase | None:
        """The flat batch the minibatches are cut from (None before the first ``extend``)."""
        return self._flat

    def sample(self, batch: TensorDictBase | None = None) -> TensorDictBase:
        n = self._size
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

    Keyword Args:
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
        fresh_noise = getattr(loss_module.actor_network, "act_with_fresh_noise", None)
        if fresh_noise is not None and kwargs.get("eval_policy") is None:
            kwargs["eval_policy"] = fresh_noise  # gSDE: evaluations keep off the batch's noise
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
        self.minibatches: EpochMinibatches | None = EpochMinibatches(minibatch_size)
        self.register_op("batch_process", self._advantage)
        self.minibatches.register(self)
        reset_noise = getattr(loss_module.actor_network, "reset_noise", None)
        if callable(reset_noise):  # gSDE: new exploration noise for every collected batch
            self.register_op("post_steps", reset_noise)

    @property
    def current_batch(self) -> TensorDictBase | None:
        """The flat batch of the current pass (None before the first)."""
        return self.minibatches.current_batch

    def compute_advantage(self, batch: TensorDictBase) -> None:
        """Write ``advantage`` (and ``value_target``) into ``batch`` (no gradient): the loss's value estimator (GAE for PPO and A2C)."""
        self.loss_module.value_estimator(batch)

    def _advantage(self, batch: TensorDictBase) -> TensorDictBase:
        with torch.no_grad():
            self.compute_advantage(batch)
        keys = getattr(self.loss_module, "in_keys", None)
        # minibatches carry only what the loss reads (indexing copies every entry)
        flat = batch.select(*keys, strict=False) if keys else batch
        self.minibatches.extend(flat.reshape(-1))
        return batch


def reject_minibatch_arguments(trainer_name: str, kwargs: dict[str, Any]) -> None:
    """A TypeError for ``num_epochs`` or ``minibatch_size`` given to a trainer that takes one
    optimisation step on each whole batch (A2C, the vanilla policy gradient)."""
    if "num_epochs" in kwargs or "minibatch_size" in kwargs:
        raise TypeError(
            f"{trainer_name} takes one optimisation step on each whole batch: drop num_epochs "
            "and minibatch_size (PPOTrainer runs epochs of minibatches)"
        )
