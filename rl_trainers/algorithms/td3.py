"""TD3Trainer: twin delayed DDPG from a replay buffer, exploring with action noise.

The loop of :class:`~.off_policy.OffPolicyTrainer` (every frame to the buffer; after
``learning_starts`` transitions, ``utd_ratio * frames_per_batch`` updates per batch, each on
a fresh sample), plus:

* two optimizers, one over the twin critics and one over the actor (both built from the
  ``optimizer`` node). :class:`DelayedPolicyUpdate`, the ``optimizer`` op, steps the critics
  at every update and, every ``policy_delay``-th update, then computes the actor's loss
  with the updated critics, steps the actor and moves the target networks (Polyak
  averaging with ``tau``). On the other updates the actor's parameters and
  its optimizer state (Adam moments, step count) are not touched at all, which one optimizer
  over every parameter could not promise (a zero gradient still moves Adam's moments and
  applies weight decay);
* target policy smoothing: the target action is ``clip(mu'(s') + clip(N(0, policy_noise),
  -noise_clip, noise_clip), low, high)`` (in :class:`~rl_trainers.objectives.TD3Loss`);
* exploration: the collector acts with the deterministic actor followed by Gaussian
  (:class:`~rl_trainers.modules.AdditiveGaussianModule`) or Ornstein-Uhlenbeck
  (:class:`~rl_trainers.modules.OrnsteinUhlenbeckProcessModule`) noise, clamped to the
  action bounds; evaluations act with the actor alone. The noise module is checkpointed;
  the OU process state travels with the collector's carried TensorDict (checkpointed with
  the collector) and restarts with every episode (``InitTracker``).

:class:`~.ddpg.DDPGTrainer` is the same loop with one critic, no smoothing noise and
``policy_delay = 1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, open_dict
from tensordict import TensorDict, TensorDictBase

from rl_trainers.algorithms.base import (
    build_model,
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
from rl_trainers.core.loop import OptimizerHook, TrainerHookBase

__all__ = ["DelayedPolicyUpdate", "TD3Trainer", "build_deterministic_trainer"]

INIT_TRACKER = "rl_trainers.envs.InitTracker"


class DelayedPolicyUpdate(TrainerHookBase):
    """The ``optimizer`` op of TD3 and DDPG: a critic step at every update; at every
    ``policy_delay``-th (the 2nd, 4th... for 2, as SB3) then the actor's loss, computed
    with the critics just updated, the actor's step and the target networks' update.

    As in the paper and SB3, the actor loss is computed only on the updates that step the
    actor, after the critic step: the loss module's forward computes the critics' loss
    alone (``loss.actor_in_forward = False``), the sub-batch reaches this op through
    ``post_loss``, and ``loss_actor`` (and ``grad_norm_actor``) join the step's losses
    (logged as their mean over the updates that had them). On the other updates the
    actor, its optimizer state and the targets are not touched. The counter of updates is
    checkpointed (module ``policy_delay``), and so are both optimizers
    (``critic_optimizer``, ``actor_optimizer``) and the target updater.

    Args:
        loss: a ``TD3Loss`` or ``DDPGLoss`` (its ``actor_loss`` is called here).
        critic_optimizer: over the critics' parameters.
        actor_optimizer: over the actor's parameters.
        target_updater: stepped after each actor step (e.g. ``SoftUpdate``).
        policy_delay: critic updates per actor update.
        critic_loss: the loss entry of the critics (``loss_qvalue``; DDPG's ``loss_value``).
    """

    def __init__(
        self,
        loss,
        critic_optimizer: torch.optim.Optimizer,
        actor_optimizer: torch.optim.Optimizer,
        target_updater,
        policy_delay: int = 2,
        *,
        critic_loss: str = "loss_qvalue",
    ) -> None:
        if int(policy_delay) != policy_delay or policy_delay < 1:
            raise ValueError(f"policy_delay must be a positive integer, got {policy_delay!r}")
        self.loss = loss
        self.critic = OptimizerHook(critic_optimizer, [critic_loss])
        self.actor = OptimizerHook(actor_optimizer, ["loss_actor"])
        self.target_updater = target_updater
        self.policy_delay = int(policy_delay)
        self.updates = 0
        self._batch: TensorDictBase | None = None

    def register(self, trainer, name: str = "policy_delay") -> None:
        """Place at ``"post_loss"`` and ``"optimizer"``; checkpoint the counter, both
        optimizers and the target updater."""
        for hook, part in ((self.critic, "critic"), (self.actor, "actor")):
            hook.clip_norm = trainer.clip_norm
            hook.clip_grad_norm = trainer.clip_grad_norm
            hook._trainer = trainer
            hook._bind(trainer)  # data-parallel: average the gradients over the ranks
            hook._grad_norm_key = f"grad_norm_{part}"
            trainer.register_module(f"{part}_optimizer", hook)
        self.loss.actor_in_forward = False
        trainer.register_op("post_loss", self._keep_batch)
        trainer.register_op("optimizer", self)
        trainer.register_module(name, self)
        updater = self.target_updater
        if hasattr(updater, "state_dict") and hasattr(updater, "load_state_dict"):
            trainer.register_module("target_net_updater", updater)

    def _keep_batch(self, sub_batch: TensorDictBase) -> None:
        self._batch = sub_batch

    @property
    def actor_updates_next(self) -> bool:
        """Whether the next update steps the actor and the target networks."""
        return (self.updates + 1) % self.policy_delay == 0

    def __call__(
        self,
        losses: TensorDictBase,
        clip_grad_norm: bool | None = None,
        clip_norm: float | None = None,
        index: int | None = None,
    ) -> TensorDictBase:
        delayed = self.actor_updates_next
        self.updates += 1
        self.critic(losses, clip_grad_norm, clip_norm)
        if delayed:
            if self._batch is None:
                raise RuntimeError("DelayedPolicyUpdate needs its post_loss op (register())")
            loss_actor, _ = self.loss.actor_loss(self._batch)
            actor_losses = TensorDict({"loss_actor": loss_actor}, batch_size=[])
            self.actor(actor_losses, clip_grad_norm, clip_norm)
            self.target_updater.step()
            for key, value in actor_losses.items():
                losses.set(key, value.detach())
        self._batch = None
        return losses

    def state_dict(self) -> dict[str, Any]:
        return {"updates": self.updates, "policy_delay": self.policy_delay}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.updates = int(state_dict["updates"])


class TD3Trainer(OffPolicyTrainer):
    """TD3 on the shared :class:`~rl_trainers.core.Trainer` loop.

    Keyword Args:
        optimizers: ``{"critic": ..., "actor": ...}`` (see :func:`finish_build`'s
            ``param_groups``). None: ``optimizer`` steps on the sum of every loss (the
            actor's and the critics') at every update and ``target_updater`` steps after
            each, with no delay.
        target_updater: moves the target actor and critics toward the online ones; stepped
            after each actor update only.
        policy_delay: critic updates per actor (and target) update (default 2).
        exploration: the collector policy's noise module (annealed by ``frames_per_batch``
            after every batch, checkpointed as ``exploration``).
        critic_loss: the critics' loss entry (``loss_qvalue``; DDPG's ``loss_value``).
        **kwargs: the :class:`OffPolicyTrainer` arguments (collector, loss_module,
            replay_buffer, utd_ratio, learning_starts...; ``optimizer`` is None).
    """

    def __init__(
        self,
        *,
        optimizers: dict[str, torch.optim.Optimizer] | None = None,
        target_updater,
        policy_delay: int | None = None,
        exploration=None,
        critic_loss: str = "loss_qvalue",
        **kwargs: Any,
    ) -> None:
        if optimizers is None:  # one optimizer over every loss
            if policy_delay is not None:
                raise TypeError(
                    f"{type(self).__name__}(policy_delay={policy_delay}) delays the actor's "
                    "optimizer: give optimizers={'critic': ..., 'actor': ...} with it"
                )
            super().__init__(target_updater=target_updater, **kwargs)
            self.policy_update = None
        else:
            super().__init__(target_updater=None, **kwargs)
            self.policy_update = DelayedPolicyUpdate(
                self.loss_module,
                optimizers["critic"],
                optimizers["actor"],
                target_updater,
                2 if policy_delay is None else policy_delay,
                critic_loss=critic_loss,
            )
            self.policy_update.register(self)
        self.exploration = exploration
        if exploration is not None:
            self.register_module("exploration", exploration)
            # the noise anneals over the frames of all ranks (data-parallel), as DQN's epsilon
            frames = self.frames_per_batch * self.world_size
            self.register_op("post_steps", exploration.step, frames=frames)

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its actor and critics) built for ``env``'s specs."""
        add_ou_init_tracker(cfg)
        return build_deterministic_loss(cfg, env, "TD3")

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> TD3Trainer:
        """Build every component from a composed ``TD3TrainerConfig``, seeding first."""
        return build_deterministic_trainer(cls, cfg, output_dir, "TD3")


def add_ou_init_tracker(cfg: DictConfig) -> None:
    """With Ornstein-Uhlenbeck noise, add ``InitTracker`` to ``cfg.env.transforms`` (the OU
    process restarts with each episode: the env flags episode starts)."""
    if cfg.trainer.get("exploration_noise") != "ou":
        return
    targets = [t.get("_target_") for t in cfg.env.transforms if hasattr(t, "get")]
    if INIT_TRACKER not in targets:
        with open_dict(cfg):
            cfg.env.transforms = [*cfg.env.transforms, {"_target_": INIT_TRACKER}]


def build_deterministic_loss(cfg: DictConfig, env, name: str):
    """TD3's or DDPG's loss module, with its deterministic actor and critic(s), for ``env``."""
    actor = build_model(cfg, "actor", env)
    critic = build_model(cfg, "critic", env)
    critic_arg = "qvalue_network" if name == "TD3" else "value_network"
    return build(cfg, "loss", actor_network=actor, **{critic_arg: critic})


def build_deterministic_trainer(cls, cfg: DictConfig, output_dir: Path, name: str):
    """TD3's and DDPG's build: deterministic actor, critic(s), noise, two optimizers."""
    from rl_trainers.objectives import SoftUpdate

    loop = cfg.trainer
    add_ou_init_tracker(cfg)
    envs = prepare_run(cfg, output_dir)
    require_continuous_actions(name, cfg, envs.env)
    check_buffer_fits_memory(cfg, envs.env)
    loss = build_deterministic_loss(cfg, envs.env, name)
    actor = loss.actor_network
    actor_params = list(actor.parameters())
    critic_params = list(loss.qvalue_network_params.parameters())
    if {id(p) for p in loss.parameters()} != {id(p) for p in (*actor_params, *critic_params)}:
        raise RuntimeError(f"{name}'s loss has parameters outside its actor and critics")
    policy = exploration_policy(cfg, actor, envs.env.action_spec)
    return finish_build(
        cls,
        cfg,
        output_dir,
        envs,
        loss,
        policy=policy,  # the collector explores with noise; evaluations use the actor alone
        param_groups={"critic": critic_params, "actor": actor_params},
        replay_buffer=build_replay_buffer(cfg),
        target_updater=SoftUpdate(loss, tau=loop.tau),
        policy_delay=loop.get("policy_delay", 1),
        exploration=policy.explorer,
        critic_loss="loss_qvalue" if name == "TD3" else "loss_value",
        utd_ratio=loop.utd_ratio,
        learning_starts=loop.learning_starts,
    )


def exploration_policy(cfg: DictConfig, actor, action_spec):
    """The actor followed by the ``trainer.exploration_noise`` module (noise clamped to the
    action bounds; a constant scale unless ``trainer.noise_std_end`` anneals it)."""
    from rl_trainers.modules import AdditiveGaussianWrapper, OrnsteinUhlenbeckProcessWrapper

    loop = cfg.trainer
    end = loop.noise_std if loop.noise_std_end is None else loop.noise_std_end
    frames = max(1, round(loop.noise_annealing_fraction * loop.total_frames))
    if loop.exploration_noise == "gaussian":
        # sigma * N(0, 1): sigma (the std) anneals from noise_std to noise_std_end
        return AdditiveGaussianWrapper(
            actor,
            sigma_init=loop.noise_std,
            sigma_end=end,
            annealing_num_steps=frames,
            spec=action_spec,
        )
    # OU: x <- x + theta (mu - x) dt + sigma sqrt(dt) N(0, 1), action + eps * x; SB3's
    # OrnsteinUhlenbeckActionNoise(sigma=noise_std) is eps = 1, sigma = noise_std
    scale = 1.0 if loop.noise_std == 0 else end / loop.noise_std
    return OrnsteinUhlenbeckProcessWrapper(
        actor,
        eps_init=1.0,
        eps_end=scale,
        annealing_num_steps=frames,
        theta=loop.ou_theta,
        sigma=loop.noise_std,
        dt=loop.ou_dt,
        spec=action_spec,
    )
