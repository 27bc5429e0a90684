"""Transforms that add or remove a dimension of size one: ``UnsqueezeTransform`` and
``SqueezeTransform`` (torchrl's), e.g. to give images a time dim before ``CatFrames``.

Dimensions are negative, counted from the end of each entry, so they mean the same with
or without batch dims; the inverse transform (``in_keys_inv``) undoes the change on step
inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_trainers.envs.specs import Bounded, Composite, TensorSpec, Unbounded
from rl_trainers.envs.transforms.transforms import Key, Transform, _keys

__all__ = ["SqueezeTransform", "UnsqueezeTransform"]


def _reshaped(spec: TensorSpec, shape: torch.Size, change: callable) -> TensorSpec:
    """``spec`` with a new shape; bounds are reshaped by ``change``, other kinds become
    Unbounded of the same dtype."""
    if isinstance(spec, Bounded):
        return Bounded(change(spec.low), change(spec.high), shape, spec.device, spec.dtype)
    return Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)


def _dim_alias(dim: int | None, alias: int | None, name: str) -> int | None:
    """``dim``, or its former torchrl name ``name`` (giving both is an error)."""
    if alias is None:
        return dim
    if dim is not None:
        raise TypeError(f"pass either dim or {name}, not both.")
    return alias


class UnsqueezeTransform(Transform):
    """Insert a dimension of size one at ``dim`` (negative) in the ``in_keys`` entries.

    Args:
        dim: where the new dim goes, counted from the end (``-1``: a new last dim).
        allow_positive_dim: not supported (only negative dims).
        in_keys: entries to unsqueeze (observations).
        out_keys: output keys (default: in place).
        in_keys_inv: step inputs squeezed back at ``dim`` before the base env sees them.
        out_keys_inv: their keys for the base env (default: ``in_keys_inv``).
        unsqueeze_dim: torchrl's former name of ``dim`` (the Pendulum tutorial uses it).
    """

    def __init__(
        self,
        dim: int | None = None,
        *,
        allow_positive_dim: bool = False,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
        unsqueeze_dim: int | None = None,
    ) -> None:
        dim = _dim_alias(dim, unsqueeze_dim, "unsqueeze_dim")
        if dim is None or allow_positive_dim or dim >= 0:
            raise ValueError(f"{type(self).__name__}: dim must be a negative int, got {dim}.")
        super().__init__(in_keys, out_keys, _keys(in_keys_inv), out_keys_inv)
        self.dim = int(dim)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.unsqueeze(self.dim)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.squeeze(self.dim)

    def _new_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = torch.zeros(spec.shape, device="meta").unsqueeze(self.dim).shape
        return _reshaped(spec, shape, lambda t: t.unsqueeze(self.dim))

    def _old_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = torch.zeros(spec.shape, device="meta").squeeze(self.dim).shape
        return _reshaped(spec, shape, lambda t: t.squeeze(self.dim))

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            observation_spec[ok] = self._new_spec(observation_spec[ik])
        return observation_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        # the outside sees the unsqueezed input; the base env gets it squeezed
        for ik, ok in zip(self.in_keys_inv, self.out_keys_inv):
            if ok in action_spec:
                action_spec[ik] = self._new_spec(action_spec[ok])
        return action_spec


class SqueezeTransform(UnsqueezeTransform):
    """Remove the dimension of size one at ``dim`` (negative) of the ``in_keys`` entries.

    Args: as :class:`UnsqueezeTransform`; ``squeeze_dim`` is torchrl's former name of ``dim``.
    """

    def __init__(self, dim: int | None = None, *, squeeze_dim: int | None = None, **kwargs: Any):
        super().__init__(_dim_alias(dim, squeeze_dim, "squeeze_dim"), **kwargs)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.squeeze(self.dim)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.unsqueeze(self.dim)

    def _new_spec(self, spec: TensorSpec) -> TensorSpec:
        return UnsqueezeTransform._old_spec(self, spec)
