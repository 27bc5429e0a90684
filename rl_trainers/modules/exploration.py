"""Exploration modules: epsilon-greedy and additive Gaussian noise, with linear annealing.

They act only while the interaction type is RANDOM (or unset), so evaluation under
``set_interaction_type(InteractionType.DETERMINISTIC)`` sees the greedy policy. Call
``.step(frames)`` (e.g. from a trainer hook) to anneal.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type

from rl_trainers.modules.actors import spec_kind

__all__ = [
    "EGreedyModule",
    "EGreedyWrapper",
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
]


def _exploring() -> bool:
    itype = interaction_type()
    return itype is None or itype == InteractionType.RANDOM


def _check_device(device) -> None:
    if device is not None and torch.device(device).type != "cpu":
        raise NotImplementedError(f"device={device!r}: the exploration modules run on CPU")


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
        spec: the action spec (OneHot, Categorical, or any spec with ``rand``).
        eps_init: initial epsilon.
        eps_end: final epsilon.
        annealing_num_steps: frames over which epsilon decays linearly.
        action_key: key of the action.
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
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__("eps", eps_init, eps_end, annealing_num_steps)
        _check_device(device)
        if spec is None:
            raise ValueError("EGreedyModule needs the action spec to draw random actions")
        self.spec = spec
        self.kind = spec_kind(spec)
        self.action_key = action_key
        self.in_keys = [action_key]
        self.out_keys = [action_key]

    def _random(self, like: torch.Tensor, batch: torch.Size) -> torch.Tensor:
        if self.kind in ("one_hot", "categorical"):
            n = int(self.spec.n)
            index = torch.randint(n, batch, device=like.device)
            out = F.one_hot(index, n) if self.kind == "one_hot" else index
            return out.to(like.dtype)
        return self.spec.rand(batch).to(like.device, like.dtype)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        batch = tensordict.batch_size
        mask = torch.rand(batch, device=action.device) < self.eps
        if mask.any():
            random = self._random(action, batch)
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
        self.spec = spec
        self.mean = mean
        self.std = std
        self.action_key = action_key
        self.in_keys = [action_key]
        self.out_keys = [action_key]
        low = getattr(spec, "low", None) if spec is not None else None
        high = getattr(spec, "high", None) if spec is not None else None
        self._bounded = safe and low is not None and high is not None
        if self._bounded:
            self.register_buffer("low", torch.as_tensor(low).float().clone(), persistent=False)
            self.register_buffer("high", torch.as_tensor(high).float().clone(), persistent=False)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        noise = torch.randn_like(action) * self.std + self.mean
        action = action + self.sigma * noise
        if self._bounded:
            action = torch.maximum(torch.minimum(action, self.high), self.low)
        tensordict.set(self.action_key, action)
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
