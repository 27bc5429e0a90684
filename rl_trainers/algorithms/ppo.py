"""PPOTrainer: on-policy PPO with GAE, epochs of shuffled minibatches.

The objective is the loss's: clipped surrogate (``ClipPPOLoss``), adaptive KL penalty
(``KLPENPPOLoss``) or the plain surrogate (``PPOLoss``), chosen by ``loss.loss_type``.

The loop of :class:`~.on_policy.OnPolicyTrainer`: per collected batch (``[num_envs, T]``),
GAE advantages and value targets are computed once with the current critic
(``batch_process``), the batch is flattened, and ``num_epochs * (frames_per_batch //
minibatch_size)`` optimisation steps each draw the next minibatch of a fresh permutation per
epoch (``process_optim_batch``). With a ``target_kl`` (:class:`KLEarlyStop`), the steps of a
batch end at the first minibatch on which the policy has moved too far from the collecting
one. PPO adds, once per batch (``post_steps``), the clip-range annealing and the adaptation
of the KL penalty; the learning-rate schedule steps there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from rl_trainers.algorithms.base import build_actor_critic, finish_build, prepare_run
from rl_trainers.algorithms.build import build
from rl_trainers.algorithms.on_policy import EpochMinibatches, OnPolicyTrainer
from rl_trainers.core.loop import TrainerHookBase
from rl_trainers.errors import ConfigError

__all__ = ["EpochMinibatches", "KLEarlyStop", "PPOTrainer"]


class KLEarlyStop(TrainerHookBase):
    """Ends a batch's optimisation steps once the policy has moved too far from the one that
    collected the batch (Stable-Baselines3's ``target_kl``).

    Before each step (a ``process_optim_batch`` hook, after the minibatch is drawn), the
    approximate KL(collecting || current) on the minibatch (``loss_module.measure_kl``,
    averaged over the ranks of data-parallel training) is compared with ``1.5 *
    target_kl``; above it, neither this step nor the rest of the batch's epochs are taken.
    The next batch starts afresh. Logs ``kl_early_stop``: 1 for a batch that stopped early.

    Args:
        target_kl: the KL bound (positive).
    """

    def __init__(self, target_kl: float) -> None:
        if not target_kl > 0:
            raise ConfigError(
                "trainer.target_kl", target_kl, "a positive KL, e.g. 0.01, or null for no bound"
            )
        self.target_kl = float(target_kl)
        self.stopped = False
        self._trainer = None

    def register(self, trainer, name: str = "kl_early_stop") -> None:
        if not callable(getattr(trainer.loss_module, "measure_kl", None)):
            raise ConfigError(
                "trainer.target_kl",
                self.target_kl,
                f"needs a loss with measure_kl (the PPO losses), not "
                f"{type(trainer.loss_module).__name__}",
            )
        self._trainer = trainer
        trainer.register_op("pre_optim_steps", self.reset)
        trainer.register_op("process_optim_batch", self.check)
        trainer.register_op("post_steps_log", self.log)

    def reset(self) -> None:
        self.stopped = False

    def check(self, minibatch):
        """Raise StopIteration (the loop's end of a batch's steps) past the bound."""
        if not self.stopped:
            trainer = self._trainer
            kl = trainer.mean_over_ranks(trainer.loss_module.measure_kl(minibatch))
            self.stopped = bool(kl > 1.5 * self.target_kl)
        if self.stopped:
            raise StopIteration
        return None

    def log(self, batch) -> dict[str, float]:
        return {"kl_early_stop": float(self.stopped)}


class PPOTrainer(OnPolicyTrainer):
    """PPO on the shared :class:`~rl_trainers.core.Trainer` loop.

    Keyword Args:
        collector: yields ``[num_envs, T]`` batches with ``sample_log_prob``.
        total_frames: frames to train for.
        loss_module: a ``ClipPPOLoss`` (or any PPO loss) with a value estimator set.
        optimizer: optimizer over ``loss_module.parameters()``.
        frames_per_batch: frames in each collected batch.
        num_epochs: passes over each batch.
        minibatch_size: transitions per optimisation step (None: the whole batch).
        anneal_clip_epsilon: anneal the clip range linearly to 0 over training (losses
            with a ``clip_epsilon``; the KL-penalty and plain losses have no clip range).
        target_kl: end a batch's steps at the first minibatch whose approximate KL to the
            collecting policy exceeds ``1.5 * target_kl`` (:class:`KLEarlyStop`); None: never.
        **kwargs: the :class:`AlgorithmTrainer` arguments (lr_scheduler, eval_env, logger...).
    """

    def __init__(
        self,
        *,
        num_epochs: int = 10,
        minibatch_size: int | None = 64,
        anneal_clip_epsilon: bool = False,
        target_kl: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(num_epochs=num_epochs, minibatch_size=minibatch_size, **kwargs)
        self.register_ppo_ops(anneal_clip_epsilon)
        self.kl_early_stop: KLEarlyStop | None = None
        if target_kl is not None:
            self.kl_early_stop = KLEarlyStop(target_kl)
            self.kl_early_stop.register(self)

    def register_ppo_ops(self, anneal_clip_epsilon: bool) -> None:
        """Register what PPO does once per batch (``post_steps``): the clip range's
        annealing (``anneal_clip_epsilon``, losses with a ``clip_epsilon``) and the KL
        penalty's adaptation (losses with ``adapt_beta``)."""
        loss_module = self.loss_module
        self._clip0: float | None = None
        if anneal_clip_epsilon and hasattr(loss_module, "clip_epsilon"):
            self._clip0 = float(loss_module.clip_epsilon)
            self.register_op("post_steps", self._anneal_clip)
        if hasattr(loss_module, "adapt_beta") and not loss_module.adapt_beta_each_call:
            self.register_op("post_steps", self._adapt_kl_penalty)
        elif hasattr(loss_module, "adapt_beta") and self._data_parallel is not None:
            # beta adapted on each rank's own minibatches: the ranks' mean after every batch
            self.register_op("post_steps", self._data_parallel.average_, tensors=[loss_module.beta])

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
        batch = self.current_batch
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
    def build_loss(cls, cfg: DictConfig, env) -> torch.nn.Module:
        """The loss module (with its actor and critic) built for ``env``'s specs."""
        actor, critic = build_actor_critic(cfg, env)
        return build(cfg, "loss", actor_network=actor, critic_network=critic)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> PPOTrainer:
        """Build every component from a composed ``PPOTrainerConfig``, seeding first."""
        envs = prepare_run(cfg, output_dir)
        loss = cls.build_loss(cfg, envs.env)
        return finish_build(
            cls,
            cfg,
            output_dir,
            envs,
            loss,
            num_epochs=cfg.trainer.num_epochs,
            minibatch_size=cfg.trainer.minibatch_size,
            anneal_clip_epsilon=cfg.trainer.anneal_clip_epsilon,
            target_kl=cfg.trainer.target_kl,
        )
