"""PGTrainer: the vanilla policy gradient (REINFORCE), one gradient step per collected batch.

The loop of :class:`~.on_policy.OnPolicyTrainer` with one epoch of one minibatch. The
advantage of each step is its discounted return-to-go ``G_t = sum_k gamma^k r_{t+k}``:

* with a learned baseline (``loss.baseline=true``, the default): ``G_t - V(s_t)``, from GAE
  with ``lmbda=1``; where the batch cuts a trajectory (or a time limit truncates it) the
  rest of the return is ``V`` of the next state; ``V`` is fitted to ``G_t`` in the same step;
* without one: ``G_t`` summed to the end of the trajectory or of the batch, whichever comes
  first (a trajectory cut by the batch end loses the rest of its return; batches much
  longer than an episode keep that bias small).

Then one step of ``ReinforceLoss`` (``-mean(log_prob * A)``, plus the baseline's value loss).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from tensordict import TensorDictBase

from rl_trainers.algorithms.base import (
    build_actor_critic,
    build_model,
    finish_build,
    prepare_run,
)
from rl_trainers.algorithms.build import build, orthogonal_init_
from rl_trainers.algorithms.on_policy import OnPolicyTrainer, reject_minibatch_arguments

__all__ = ["PGTrainer", "returns_to_go"]


class PGTrainer(OnPolicyTrainer):
    """REINFORCE on the shared :class:`~rl_trainers.core.Trainer` loop: one optimisation
    step on each whole collected batch.

    Args:
        **kwargs: the :class:`OnPolicyTrainer` arguments (collector, loss_module, optimizer,
            frames_per_batch...); ``num_epochs`` and ``minibatch_size`` are fixed to one step
            on the whole batch. A loss without a critic network gets the returns-to-go as
            advantages, with its ``gamma``.
    """

    def __init__(self, **kwargs: Any) -> None:
        reject_minibatch_arguments(type(self).__name__, kwargs)
        super().__init__(**kwargs)

    def compute_advantage(self, batch: TensorDictBase) -> None:
        loss = self.loss_module
        if loss.critic_network is not None:
            loss.value_estimator(batch)
            return
        returns_to_go(batch, float(loss.gamma), loss.advantage_key)

    @classmethod
    def build_loss(cls, cfg: DictConfig, env):
        """The loss module (with its actor, and its baseline critic if any) for ``env``."""
        if cfg.loss.baseline:
            actor, critic = build_actor_critic(cfg, env)
        else:  # no critic: nothing built, optimised or saved for it
            actor, critic = build_model(cfg, "policy", env), None
            if cfg.network.orthogonal_init:
                orthogonal_init_(actor, output_gain=0.01)
        return build(cfg, "loss", actor_network=actor, critic_network=critic)

    @classmethod
    def from_config(cls, cfg: DictConfig, output_dir: Path) -> PGTrainer:
        """Build every component from a composed ``PGTrainerConfig``, seeding first."""
        envs = prepare_run(cfg, output_dir)
        return finish_build(cls, cfg, output_dir, envs, cls.build_loss(cfg, envs.env))


def returns_to_go(batch: TensorDictBase, gamma: float, key: str = "advantage") -> torch.Tensor:
    """Write the discounted return-to-go of every step of a ``[*B, T]`` batch at ``key``:
    ``G_t = r_t + gamma * (1 - done_t) * G_{t+1}``, cut where a trajectory ends and at the
    batch's last step; shaped like ``("next", "reward")``."""
    from rl_trainers.objectives.value import reward2go

    reward = batch.get(("next", "reward"))
    done = batch.get(("next", "done")).reshape(reward.shape)
    returns = reward2go(reward, done, gamma, time_dim=batch.batch_dims - 1)
    batch.set(key, returns)
    return returns
