"""Element-wise value transforms: ``ClipTransform`` and ``SignTransform``.

Both read their ``in_keys`` in observations and rewards (a reward key such as ``"reward"``
is transformed in the ``"next"`` output of each step; resets carry no reward and are left
alone) and their ``in_keys_inv`` in step inputs (e.g. actions). The specs of the written
entries are narrowed to the range the transform produces, so networks and
``check_env_specs`` see it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Bounded, Composite, TensorSpec
from rl_trainers.envs.transforms.transforms import Key, Transform

__all__ = ["ClipTransform", "SignTransform"]


def _scalar_bound(
    value: float | torch.Tensor | np.ndarray | None, name: str, who: str = "ClipTransform"
) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor | np.ndarray) and np.size(value) != 1:
        raise TypeError(f"{who}: {name} must be a scalar or None, got {value!r}.")
    return float(value.item() if hasattr(value, "item") else value)


class _ValueTransform(Transform):
    """Shared parts: the same map forwards and inverse, missing keys tolerated on reset."""

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return self._apply_transform(value)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        # a reset has observations but no reward: transform what is there
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(ik, None)
            if value is not None:
                tensordict_reset.set(ok, self._apply_transform(value))
        return tensordict_reset

    def _output_bounds(self, spec: TensorSpec) -> tuple[torch.Tensor, torch.Tensor]:
        """``(low, high)`` of the values written for inputs described by ``spec``."""
        raise NotImplementedError

    def _bound(self, composite: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ik not in composite.keys(True, True):
                continue
            spec = composite[ik]
            low, high = self._output_bounds(spec)
            if not spec.dtype.is_floating_point and spec.dtype != torch.bool:
                info = torch.iinfo(spec.dtype)  # no infinities in integer bounds
                low, high = low.clamp(info.min, info.max), high.clamp(info.min, info.max)
            composite[ok] = Bounded(
                low, high, shape=spec.shape, device=spec.device, dtype=spec.dtype
            )
        return composite

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._bound(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._bound(reward_spec)


class ClipTransform(_ValueTransform):
    """Clip entries to ``[low, high]`` (observations, rewards, or step inputs via ``*_inv``).

    Args:
        in_keys: entries clipped in env outputs (observations, ``"reward"``).
        out_keys: where the clipped values go (default: ``in_keys``).
        in_keys_inv: step-input entries (e.g. ``"action"``) clipped before the env sees them.
        out_keys_inv: where those go (default: ``in_keys_inv``).
        low: lower bound (scalar; None for none).
        high: upper bound (scalar; None for none). At least one of them is needed.

    The spec of each written entry becomes ``Bounded``: its old bounds clipped to
    ``[low, high]`` (``-inf``/``inf`` where neither bounds it).

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"),
        ...                      ClipTransform(in_keys=["observation"], low=-1, high=0.1))
        >>> assert (env.rollout(10)["observation"] <= 0.1).all()
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
        *,
        low: float | torch.Tensor | None = None,
        high: float | torch.Tensor | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self._set_bounds(low, high, ("low", "high"))

    def _set_bounds(
        self,
        low: float | torch.Tensor | None,
        high: float | torch.Tensor | None,
        names: tuple[str, str],
    ) -> None:
        """Check and store the bounds (``names``: the constructor's names for them)."""
        who, (lo_name, hi_name) = type(self).__name__, names
        self.low = _scalar_bound(low, lo_name, who)
        self.high = _scalar_bound(high, hi_name, who)
        if self.low is None and self.high is None:
            raise TypeError(f"{who}: give {lo_name}, {hi_name} or both.")
        if self.low is not None and self.high is not None and self.low >= self.high:
            raise ValueError(
                f"{who}: {lo_name} must be lower than {hi_name}, got {lo_name}={low} and "
                f"{hi_name}={high}."
            )

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.clamp(self.low, self.high)

    def _output_bounds(self, spec: TensorSpec) -> tuple[torch.Tensor, torch.Tensor]:
        old_low = getattr(spec, "low", None)
        old_high = getattr(spec, "high", None)
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        if old_low is None or old_high is None:
            full = torch.empty(spec.shape, dtype=torch.float64)
            return full.fill_(low), full.clone().fill_(high)
        old_low, old_high = old_low.double(), old_high.double()
        return old_low.clamp(low, high), old_high.clamp(low, high)

    def __repr__(self) -> str:
        return (
            f"ClipTransform(in_keys={self.in_keys}, out_keys={self.out_keys}, "
            f"low={self.low}, high={self.high})"
        )


class SignTransform(_ValueTransform):
    """Replace entries by their sign (-1, 0 or 1), e.g. Atari reward clipping.

    Args:
        in_keys: entries read in env outputs (observations, ``"reward"``).
        out_keys: where the signs go (default: ``in_keys``).
        in_keys_inv: step-input entries replaced by their sign before the env sees them.
        out_keys_inv: where those go (default: ``in_keys_inv``).

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), SignTransform(in_keys=["reward"]))
    """

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.sign()

    def _output_bounds(self, spec: TensorSpec) -> tuple[torch.Tensor, torch.Tensor]:
        low = torch.full(spec.shape, -1.0, dtype=torch.float64)
        return low, -low
