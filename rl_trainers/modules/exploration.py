"""Exploration modules: epsilon-greedy, additive Gaussian and Ornstein-Uhlenbeck noise, with
linear annealing.

They act only while the interaction type is RANDOM (or unset), so evaluation under
``set_interaction_type(InteractionType.DETERMINISTIC)`` sees the greedy policy. Call
``.step(frames)`` (e.g. from a trainer hook) to anneal.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type

from rl_trainers.modules.actors import spec_kind
from rl_trainers.modules.operators import leaf_spec

__all__ = [
    "EGreedyModule",
    "EGreedyWrapper",
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
    "OrnsteinUhlenbeckProcessModule",
    "OrnsteinUhlenbeckProcessWrapper",
]


def _exploring() -> bool:
    itype = interaction_type()
    return itype is None or itype == InteractionType.RANDOM


def _check_device(device) -> None:
    if device is not None and torch.device(device).type != "cpu":
        raise NotImplementedError(f"device={device!r}: the exploration modules run on CPU")


def _register_action_bounds(module: torch.nn.Module, spec, safe: bool) -> None:
    """Sets ``module._bounded`` and, when ``safe`` and ``spec`` has both bounds, registers
    them as the non-persistent buffers ``low`` and ``high``."""
    low = getattr(spec, "low", None)
    high = getattr(spec, "high", None)
    module._bounded = safe and low is not None and high is not None
    if module._bounded:
        module.register_buffer("low", torch.as_tensor(low).float().clone(), persistent=False)
        module.register_buffer("high", torch.as_tensor(high).float().clone(), persistent=False)


def _clamp_to_bounds(module: torch.nn.Module, action: torch.Tensor) -> torch.Tensor:
    """``action`` clamped to the bounds :func:`_register_action_bounds` registered, if any."""
    if module._bounded:
        return torch.maximum(torch.minimum(action, module.high), module.low)
    return action


class _Annealed(TensorDictModuleBase):
    """Holds a linearly annealed scalar as a buffer (saved in the state dict)."""

    def __init__(self, name: str, init: float, end: float, annealing_num_steps: int) -> None:
        super().__init__()
        if annealing_num_steps <= 0:
            raise ValueError(f"annealing_num_steps must be positive, got {annealing_num_steps}")
        self._name = name
        self.annealing_num_steps = int(annealing_num_steps)
        self.register_buffer(f"{name}_init", torch.tensor(float(init)))
        self.register_buffer(f"{name}_end", torch.tensor(float(end)))
        self.register_buffer(name, torch.tensor(float(init)))

    def step(self, frames: int = 1) -> None:
        """Moves the annealed value ``frames`` steps towards its end value."""
        init = getattr(self, f"{self._name}_init")
        end = getattr(self, f"{self._name}_end")
        current = getattr(self, self._name)
        delta = (init - end) / self.annealing_num_steps * frames
        current.copy_(
            torch.maximum(current - delta, end)
            if init >= end
            else torch.minimum(current - delta, end)
        )


class EGreedyModule(_Annealed):
    """Replaces each action by a random one with probability ``eps``.

    Args:
        spec: the action spec (OneHot, Categorical, or any spec with ``rand``; a composite
            spec is read at ``action_key``).
        eps_init: initial epsilon.
        eps_end: final epsilon.
        annealing_num_steps: frames over which epsilon decays linearly.
        action_key: key of the action.
        action_mask_key: key of a boolean mask ``[*B, n]`` of the allowed actions (random
            actions are drawn among them).
        device: CPU only (torchrl's ``device``).
    """

    def __init__(
        self,
        spec,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        action_key: str = "action",
        *,
        action_mask_key: str | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__("eps", eps_init, eps_end, annealing_num_steps)
        _check_device(device)
        if spec is None:
            raise ValueError("EGreedyModule needs the action spec to draw random actions")
        spec = leaf_spec(spec, action_key, required=True)
        self.spec = spec
        self.kind = spec_kind(spec)
        if action_mask_key is not None and self.kind not in ("one_hot", "categorical"):
            raise ValueError("action_mask_key needs a OneHot or Categorical action spec")
        self.action_key = action_key
        self.action_mask_key = action_mask_key
        self.in_keys = [action_key] + ([action_mask_key] if action_mask_key else [])
        self.out_keys = [action_key]

    def _random(self, like: torch.Tensor, batch: torch.Size, allowed=None) -> torch.Tensor:
        if self.kind in ("one_hot", "categorical"):
            n = int(self.spec.n)
            if allowed is None:
                index = torch.randint(n, batch, device=like.device)
            else:  # uniform over the allowed actions
                weights = allowed.reshape(-1, n).float()
                index = torch.multinomial(weights, 1).reshape(batch)
            out = F.one_hot(index, n) if self.kind == "one_hot" else index
            # e.g. a categorical spec of shape (1,): actions [*B, 1]
            return out.reshape(like.shape).to(like.dtype)
        return self.spec.rand(batch).to(like.device, like.dtype)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        batch = tensordict.batch_size
        mask = torch.rand(batch, device=action.device) < self.eps
        if mask.any():
            allowed = tensordict.get(self.action_mask_key) if self.action_mask_key else None
            random = self._random(action, batch, allowed)
            mask = mask.reshape(*batch, *([1] * (action.dim() - len(batch))))
            tensordict.set(self.action_key, torch.where(mask, random, action))
        return tensordict


class AdditiveGaussianModule(_Annealed):
    """Adds ``sigma * N(mean, std)`` noise to continuous actions, clipped to the spec bounds.

    Args:
        spec: the action spec (Bounded actions are clamped to ``[low, high]``).
        sigma_init: initial noise scale.
        sigma_end: final noise scale.
        annealing_num_steps: frames over which sigma decays linearly.
        mean: mean of the noise.
        std: standard deviation of the noise before scaling.
        action_key: key of the action.
        safe: clamp the noisy action to the spec's bounds (torchrl's ``safe``; the DDPG
            example passes ``False``).
        device: CPU only (torchrl's ``device``).
    """

    def __init__(
        self,
        spec,
        sigma_init: float = 1.0,
        sigma_end: float = 0.1,
        annealing_num_steps: int = 1000,
        mean: float = 0.0,
        std: float = 1.0,
        action_key: str = "action",
        *,
        safe: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__("sigma", sigma_init, sigma_end, annealing_num_steps)
        _check_device(device)
        spec = leaf_spec(spec, action_key, required=True)
        self.spec = spec
        self.mean = mean
        self.std = std
        self.action_key = action_key
        self.in_keys = [action_key]
        self.out_keys = [action_key]
        _register_action_bounds(self, spec, safe)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        noise = torch.randn_like(action) * self.std + self.mean
        action = action + self.sigma * noise
        action = _clamp_to_bounds(self, action)
        tensordict.set(self.action_key, action)
        return tensordict


class OrnsteinUhlenbeckProcessModule(_Annealed):
    """Adds temporally correlated Ornstein-Uhlenbeck noise to continuous actions (DDPG).

    Per step, with ``n`` the steps since the trajectory started:
    ``noise <- noise + theta * (mu - noise) * dt + sigma_n * sqrt(dt) * N(0, 1)`` and
    ``action <- action + eps * noise``, where ``sigma_n = max(sigma_min, sigma - (sigma -
    sigma_min) * n / n_steps_annealing)`` (constant ``sigma`` without ``sigma_min``) and
    ``eps`` decays linearly from ``eps_init`` to ``eps_end`` with :meth:`step`.

    The process state travels with the data, as in torchrl: the module writes
    ``"_ou_prev_noise"`` and ``"_ou_steps"`` into the tensordict, and starts them afresh
    where ``is_init_key`` is True (add ``InitTracker()`` to the env) or where they are absent.

    Args:
        spec: the action spec (bounded actions are clamped to ``[low, high]`` when ``safe``).
        eps_init: initial noise factor.
        eps_end: final noise factor (not above ``eps_init``).
        annealing_num_steps: frames over which ``eps`` decays.
        theta: mean-reversion rate.
        mu: mean of the process.
        sigma: noise scale.
        dt: time step.
        x0: initial value of the process (scalar or tensor), default 0.
        sigma_min: final noise scale of the per-trajectory annealing (None: no annealing).
        n_steps_annealing: steps of that annealing.
        action_key: key of the action.
        is_init_key: key of the trajectory-start flag.
        safe: clamp the noisy action to the spec's bounds.
        device: CPU only (torchrl's ``device``).
    """

    noise_key = "_ou_prev_noise"
    steps_key = "_ou_steps"

    def __init__(
        self,
        spec,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        theta: float = 0.15,
        mu: float = 0.0,
        sigma: float = 0.2,
        dt: float = 1e-2,
        x0: torch.Tensor | float | None = None,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        *,
        action_key: str = "action",
        is_init_key: str = "is_init",
        safe: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        if spec is None:
            raise RuntimeError("spec cannot be None.")
        if eps_end > eps_init:
            raise ValueError(
                "eps should decrease over time or be constant, "
                f"got eps_init={eps_init} and eps_end={eps_end}"
            )
        super().__init__("eps", eps_init, eps_end, annealing_num_steps)
        _check_device(device)
        spec = leaf_spec(spec, action_key, required=True)
        self.spec = spec
        self.theta = float(theta)
        self.mu = float(mu)
        self.sigma = float(sigma)
        self.dt = float(dt)
        self.sigma_min = self.sigma if sigma_min is None else float(sigma_min)
        self._sigma_slope = (
            0.0 if sigma_min is None else -(self.sigma - self.sigma_min) / n_steps_annealing
        )
        self.register_buffer("x0", torch.as_tensor(0.0 if x0 is None else x0).float().clone())
        self.action_key = action_key
        self.is_init_key = is_init_key
        self.in_keys = [action_key]
        self.out_keys = [action_key, self.noise_key, self.steps_key]
        _register_action_bounds(self, spec, safe)

    def current_sigma(self, n_steps: torch.Tensor) -> torch.Tensor:
        """The noise scale after ``n_steps`` steps of a trajectory."""
        return (self._sigma_slope * n_steps + self.sigma).clamp_min(self.sigma_min)

    def _state(self, tensordict: TensorDictBase, action: torch.Tensor):
        batch = tensordict.batch_size
        noise = tensordict.get(self.noise_key, None)
        steps = tensordict.get(self.steps_key, None)
        if noise is None or steps is None or noise.shape != action.shape:
            noise = torch.zeros_like(action)
            steps = torch.zeros(batch, dtype=torch.long, device=action.device)
        is_init = tensordict.get(self.is_init_key, None)
        if is_init is None:
            warnings.warn(
                f"the tensordict has no {self.is_init_key!r} entry: the Ornstein-Uhlenbeck "
                "noise is not reset at the start of trajectories; add InitTracker() to the env",
                stacklevel=3,
            )
            return noise, steps
        is_init = is_init.reshape(*batch, -1).any(-1)
        steps = steps.masked_fill(is_init, 0)
        noise = noise.masked_fill(is_init.reshape(*batch, *([1] * (noise.dim() - len(batch)))), 0)
        return noise, steps

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        prev, steps = self._state(tensordict, action)
        prev = prev + self.x0
        sigma = self.current_sigma(steps.to(action.dtype))
        sigma = sigma.reshape(*sigma.shape, *([1] * (action.dim() - sigma.dim())))
        noise = (
            prev
            + self.theta * (self.mu - prev) * self.dt
            + sigma * math.sqrt(self.dt) * torch.randn_like(action)
        )
        action = action + self.eps * noise
        action = _clamp_to_bounds(self, action)
        tensordict.set(self.action_key, action)
        tensordict.set(self.noise_key, noise - self.x0)
        tensordict.set(self.steps_key, steps + 1)
        return tensordict


class _Wrapper(TensorDictModuleBase):
    def __init__(self, policy: TensorDictModuleBase, explorer: _Annealed) -> None:
        super().__init__()
        self.td_module = policy
        self.explorer = explorer
        self.in_keys = list(getattr(policy, "in_keys", []))
        self.out_keys = list(getattr(policy, "out_keys", []))

    @property
    def spec(self):
        return self.explorer.spec

    def step(self, frames: int = 1) -> None:
        """Anneals the exploration noise by ``frames`` steps."""
        self.explorer.step(frames)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.explorer(self.td_module(tensordict))


def _policy_spec(policy, spec):
    spec = spec if spec is not None else getattr(policy, "spec", None)
    if spec is None:
        raise ValueError("no action spec: pass spec= or wrap a policy that has a .spec")
    return spec


class EGreedyWrapper(_Wrapper):
    """A policy followed by :class:`EGreedyModule`.

    Args:
        policy: the greedy policy (e.g. a :class:`QValueActor`).
        eps_init: initial epsilon.
        eps_end: final epsilon.
        annealing_num_steps: frames over which epsilon decays.
        action_key: key of the action.
        spec: the action spec (defaults to ``policy.spec``).
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        action_key: str = "action",
        spec=None,
    ) -> None:
        explorer = EGreedyModule(
            _policy_spec(policy, spec), eps_init, eps_end, annealing_num_steps, action_key
        )
        super().__init__(policy, explorer)

    @property
    def eps(self) -> torch.Tensor:
        return self.explorer.eps


class AdditiveGaussianWrapper(_Wrapper):
    """A policy followed by :class:`AdditiveGaussianModule`.

    Args:
        policy: the deterministic policy.
        sigma_init: initial noise scale.
        sigma_end: final noise scale.
        annealing_num_steps: frames over which sigma decays.
        mean: mean of the noise.
        std: standard deviation of the noise.
        action_key: key of the action.
        spec: the action spec (defaults to ``policy.spec``).
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        sigma_init: float = 1.0,
        sigma_end: float = 0.1,
        annealing_num_steps: int = 1000,
        mean: float = 0.0,
        std: float = 1.0,
        action_key: str = "action",
        spec=None,
    ) -> None:
        explorer = AdditiveGaussianModule(
            _policy_spec(policy, spec),
            sigma_init,
            sigma_end,
            annealing_num_steps,
            mean,
            std,
            action_key,
        )
        super().__init__(policy, explorer)

    @property
    def sigma(self) -> torch.Tensor:
        return self.explorer.sigma


class OrnsteinUhlenbeckProcessWrapper(_Wrapper):
    """A policy followed by :class:`OrnsteinUhlenbeckProcessModule` (torchrl's wrapper form).

    Args:
        policy: the deterministic policy.
        eps_init, eps_end, annealing_num_steps, theta, mu, sigma, dt, x0, sigma_min,
            n_steps_annealing, action_key, is_init_key, safe: as in
            :class:`OrnsteinUhlenbeckProcessModule`.
        spec: the action spec (defaults to ``policy.spec``).
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        *,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        theta: float = 0.15,
        mu: float = 0.0,
        sigma: float = 0.2,
        dt: float = 1e-2,
        x0: torch.Tensor | float | None = None,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        action_key: str = "action",
        is_init_key: str = "is_init",
        spec=None,
        safe: bool = True,
    ) -> None:
        explorer = OrnsteinUhlenbeckProcessModule(
            _policy_spec(policy, spec),
            eps_init,
            eps_end,
            annealing_num_steps,
            theta,
            mu,
            sigma,
            dt,
            x0,
            sigma_min,
            n_steps_annealing,
            action_key=action_key,
            is_init_key=is_init_key,
            safe=safe,
        )
        super().__init__(policy, explorer)

    @property
    def eps(self) -> torch.Tensor:
        return self.explorer.eps
