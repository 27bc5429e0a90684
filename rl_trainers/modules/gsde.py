"""Generalized state-dependent exploration (gSDE; Raffin et al. 2021, "Smooth Exploration
for Robotic Reinforcement Learning"), for the on-policy trainers.

The policy network's last hidden layer gives a latent ``z`` ``[*B, L]`` and the mean
``loc`` ``[*B, A]``. A learned ``log_std`` ``[L, A]`` sets the action's distribution:
``Normal(loc, sqrt((z**2) @ exp(log_std)**2))`` per action dimension, with ``z`` detached
(the noise features are not learned through the scale). That distribution gives the
log-probabilities and the entropy of the update.

Exploration does not draw independent noise at every step: each sub-env ``i`` holds a
noise matrix ``eps_i ~ Normal(0, exp(log_std))`` ``[L, A]`` and acts with
``loc + z @ eps_i``, so the noise is a smooth function of the state until ``eps`` is
resampled: at the start of every collected batch (:meth:`GSDEActor.reset_noise`, which the
on-policy trainers call after each batch) and, with ``sample_freq > 0``, every
``sample_freq`` steps within a batch. The noise matrices are buffers, so a checkpoint holds
them. Deterministic interaction (evaluation) acts with ``loc``.

The action is not squashed: an env with bounded actions clips it to its bounds when it
steps (``GymWrapper``), while the log-probability is that of the unclipped action (as
Stable-Baselines3 does for A2C and PPO).

Example:
    >>> actor = make_gsde_actor(env.observation_spec, env.action_spec)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModule
from torch import nn

from rl_trainers.modules.actors import ProbabilisticActor
from rl_trainers.modules.builders import _head_input, _with_encoder, action_size
from rl_trainers.modules.distributions import IndependentNormal
from rl_trainers.modules.models import MLP

__all__ = ["GSDEActor", "StateDependentNoiseNet", "make_gsde_actor"]

#: Added to the variance, so the scale stays positive where the latent is zero (SB3's 1e-6).
VARIANCE_EPS = 1e-6


class StateDependentNoiseNet(nn.Module):
    """``observation -> (loc, scale, latent)`` for a gSDE policy.

    Args:
        body: maps observations to the latent ``z`` ``[*B, L]`` (the hidden layers).
        latent_size: ``L``.
        action_size: ``A``.
        log_std_init: initial value of every entry of ``log_std`` ``[L, A]``.
    """

    def __init__(
        self, body: nn.Module, latent_size: int, action_size: int, log_std_init: float
    ) -> None:
        super().__init__()
        self.body = body
        # registered after the body: the last Linear, which orthogonal_init_ treats as output
        self.mean = nn.Linear(latent_size, action_size)
        self.log_std = nn.Parameter(torch.full((latent_size, action_size), float(log_std_init)))

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, ...]:
        latent = self.body(observation)
        features = latent.detach()
        variance = (features * features) @ self.log_std.exp().square()
        scale = (variance + VARIANCE_EPS).sqrt()
        return self.mean(latent), scale, features


class GSDEActor(ProbabilisticActor):
    """A Gaussian actor exploring with per-sub-env noise matrices (see the module docstring).

    Args:
        module: a TensorDictModule writing ``loc``, ``scale`` and ``sde_latent`` around a
            :class:`StateDependentNoiseNet`.
        noise_batch_shape: the sub-envs' batch shape (``env.batch_size``): one noise matrix
            each.
        sample_freq: resample the noise every this many steps within a batch (``-1``: only
            at :meth:`reset_noise`, the start of each batch).
        **kwargs: the :class:`ProbabilisticActor` arguments (``spec``, ``return_log_prob``).
    """

    #: data-parallel training: each rank explores with its own noise (not compared)
    rank_local_buffers = ("sde_noise", "sde_steps")

    def __init__(
        self,
        module: TensorDictModule,
        noise_batch_shape: Sequence[int] = (),
        sample_freq: int = -1,
        **kwargs,
    ) -> None:
        super().__init__(
            module, in_keys=["loc", "scale"], distribution_class=IndependentNormal, **kwargs
        )
        self.sample_freq = int(sample_freq)
        net = self.noise_net
        shape = (*noise_batch_shape, *net.log_std.shape)
        self.register_buffer("sde_noise", torch.zeros(shape, dtype=net.log_std.dtype))
        self.register_buffer("sde_steps", torch.zeros((), dtype=torch.long))
        self.reset_noise()

    @property
    def noise_net(self) -> StateDependentNoiseNet:
        """The network holding ``log_std``."""
        return self.module.module

    def _draw_noise(self, batch_shape: Sequence[int]) -> torch.Tensor:
        std = self.noise_net.log_std.detach().exp()
        return std * torch.randn((*batch_shape, *std.shape), dtype=std.dtype, device=std.device)

    @torch.no_grad()
    def reset_noise(self) -> None:
        """Draw new noise matrices ``Normal(0, exp(log_std))`` from the torch RNG and restart
        the step count of ``sample_freq``."""
        self.sde_noise.copy_(self._draw_noise(self.sde_noise.shape[:-2]))
        self.sde_steps.zero_()

    def _noise_for(self, batch_shape: torch.Size, fresh: bool) -> torch.Tensor:
        """The noise matrices of a step of ``batch_shape``: the sub-envs' (redrawn every
        ``sample_freq`` steps), or with ``fresh`` (or another batch shape) new matrices for
        this call only, leaving the sub-envs' untouched."""
        if fresh or batch_shape != self.sde_noise.shape[:-2]:
            return self._draw_noise(batch_shape)
        if self.sample_freq > 0 and self.sde_steps > 0 and self.sde_steps % self.sample_freq == 0:
            self.sde_noise.copy_(self._draw_noise(batch_shape))
        self.sde_steps += 1
        return self.sde_noise

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Act: the mean, or under ``InteractionType.RANDOM`` with the sub-envs' noise."""
        return self._act(tensordict, fresh_noise=False)

    def act_with_fresh_noise(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Act as :meth:`forward`, but sample with noise drawn for this call alone: the
        policy evaluations use (``eval.deterministic=false``), so they leave the collection's
        noise and step count as they were."""
        return self._act(tensordict, fresh_noise=True)

    def _act(self, tensordict: TensorDictBase, fresh_noise: bool) -> TensorDictBase:
        if self._interaction() != InteractionType.RANDOM:
            return super().forward(tensordict)
        dist = self.get_dist(tensordict)
        latent = tensordict.get("sde_latent")
        with torch.no_grad():
            noise = self._noise_for(tensordict.batch_size, fresh_noise)
        action = dist.loc + (latent.unsqueeze(-2) @ noise).squeeze(-2)
        tensordict.set(self.action_key, action)
        if self.return_log_prob:
            tensordict.set(self.log_prob_key, dist.log_prob(action))
        return tensordict


def make_gsde_actor(
    observation_spec,
    action_spec,
    num_cells: Sequence[int] = (64, 64),
    activation: type[nn.Module] = nn.Tanh,
    *,
    in_key: str = "observation",
    return_log_prob: bool = True,
    log_std_init: float = -2.0,
    sample_freq: int = -1,
    encoder: nn.Module | None = None,
) -> GSDEActor:
    """A :class:`GSDEActor` whose sizes come from the specs, with one noise matrix per
    sub-env of the action spec's batch (its shape without the last dim).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's (continuous) action spec.
        num_cells: hidden layer sizes; the last one is the latent ``z`` (none: the
            observation, or the encoder's features).
        activation: activation class, also after the last hidden layer.
        in_key: observation key read by the policy.
        return_log_prob: write ``"sample_log_prob"``.
        log_std_init: initial entries of ``log_std`` ``[L, A]``.
        sample_freq: resample the noise every this many steps (-1: once per batch).
        encoder: a module in front of the hidden layers (e.g. a ConvNet over ``"pixels"``).
    """
    in_features = _head_input(observation_spec, in_key, encoder)
    cells = [int(c) for c in num_cells]
    if cells:
        body: nn.Module = MLP(
            in_features,
            cells[-1],
            num_cells=cells[:-1],
            activation_class=activation,
            activate_last_layer=True,
        )
        latent_size = cells[-1]
    else:
        body, latent_size = nn.Identity(), in_features
    net = StateDependentNoiseNet(
        _with_encoder(encoder, body), latent_size, action_size(action_spec), log_std_init
    )
    module = TensorDictModule(net, in_keys=[in_key], out_keys=["loc", "scale", "sde_latent"])
    return GSDEActor(
        module,
        noise_batch_shape=tuple(action_spec.shape[:-1]),
        sample_freq=sample_freq,
        spec=action_spec,
        return_log_prob=return_log_prob,
    )
