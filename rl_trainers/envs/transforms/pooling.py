"""``TimeMaxPool``: element-wise maximum of an entry over its last ``T`` steps.

Each key keeps a ``[T, *batch, *feature]`` window of its latest values. A reset empties the
window of the (sub-)envs it resets to zeros and pushes the reset observation, so the first
outputs of an episode are ``max(0, obs_0, ..., obs_t)`` as in torchrl; afterwards the
output of a step is the maximum of the last ``T`` observations. Sub-envs not flagged by a
partial reset (``"_reset"``) keep their window and output.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Composite
from rl_trainers.envs.transforms.transforms import Key, Transform, _keys, _missing
from rl_trainers.envs.utils import fast_set

__all__ = ["TimeMaxPool"]


def _batch_mask(
    tensordict: TensorDictBase | None, batch_dims: int, like: torch.Tensor
) -> torch.Tensor | None:
    """The ``"_reset"`` flags (``[*B, 1]``) shaped to broadcast against ``like`` (``[*B, ...]``)."""
    mask = None if tensordict is None else tensordict.get("_reset", None)
    if mask is None:
        return None
    batch = like.shape[:batch_dims]
    return mask.reshape(batch).reshape(*batch, *([1] * (like.ndim - batch_dims)))


class TimeMaxPool(Transform):
    """Take the maximum of each entry over the last ``T`` observations (torchrl's signature).

    Args:
        in_keys: entries pooled (default ``["observation"]``).
        out_keys: where the pooled values go (default: ``in_keys``, in place).
        T: number of steps pooled over (>= 1).
        reset_key: the partial-reset flag; only ``"_reset"`` (the default) exists for the
            single-agent envs here.

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), TimeMaxPool(["observation"], T=10))
        >>> rollout = env.rollout(10)  # each entry: max over the episode's last 10 steps

    Like torchrl's, it only works inside an env (step and reset): calling it on a
    TensorDict raises ``NotImplementedError``.
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        T: int = 1,
        reset_key: Key | None = None,
    ) -> None:
        if int(T) < 1:
            raise ValueError(
                f"TimeMaxPool: T parameter should have a value greater or equal to one, got {T}."
            )
        if reset_key not in (None, "_reset", ("_reset",)):
            raise ValueError(
                f"TimeMaxPool: reset_key={reset_key!r} is not supported; only '_reset' "
                "(single-agent envs)."
            )
        super().__init__(_keys(in_keys, ["observation"]), out_keys)
        self.T = int(T)
        self._windows: dict[Key, torch.Tensor] = {}

    @property
    def buffer_size(self) -> int:
        """torchrl's name for ``T``."""
        return self.T

    @property
    def reset_key(self) -> str:
        """The partial-reset entry read on resets."""
        return "_reset"

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(ik, None)
            if value is None:
                raise _missing(tensordict_reset, ik, "TimeMaxPool")
            fresh = torch.zeros((self.T, *value.shape), dtype=value.dtype, device=value.device)
            fresh[0] = value
            window = self._windows.get(ik)
            mask = _batch_mask(tensordict, tensordict_reset.batch_dims, value)
            if mask is not None and window is not None and window.shape == fresh.shape:
                # only the flagged sub-envs start again; the others keep their window
                fresh = torch.where(mask.unsqueeze(0), fresh, window)
            self._windows[ik] = fresh
            tensordict_reset.set(ok, fresh.amax(0))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(ik, None)
            if value is None:
                raise _missing(next_tensordict, ik, "TimeMaxPool")
            window = self._windows.get(ik)
            if window is None or window.shape[1:] != value.shape:
                raise RuntimeError("TimeMaxPool: reset the env before stepping it.")
            window = torch.cat([value.unsqueeze(0), window[:-1]])
            self._windows[ik] = window
            fast_set(next_tensordict, ok, window.amax(0))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError(
            "TimeMaxPool cannot be called independently, only its step and reset methods "
            "are functional: it needs the sequence of an env's steps, not a batch of data "
            "(use CatFrames on sampled trajectories to see several steps at once)."
        )

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ok != ik and ik in observation_spec.keys(True, True):
                observation_spec[ok] = observation_spec[ik].clone()
        return observation_spec

    def __repr__(self) -> str:
        return f"TimeMaxPool(in_keys={self.in_keys}, out_keys={self.out_keys}, T={self.T})"
