"""Transforms that reshape entries (torchrl's): ``UnsqueezeTransform`` and
``SqueezeTransform`` add or remove a dimension of size one (e.g. to give images a time dim
before ``CatFrames``), ``PermuteTransform`` reorders the last dims (e.g. ``[H, W, C]`` images
to ``[C, H, W]``) and ``FlattenObservation`` merges adjacent dims.

Dimensions are negative, counted from the end of each entry, so they mean the same with
or without batch dims; the inverse transform (``in_keys_inv``) undoes the change on step
inputs. Bounded specs keep their bounds, moved the same way as the values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Bounded, Composite, TensorSpec, Unbounded
from rl_trainers.envs.transforms.transforms import Key, Transform, _keys, _missing

__all__ = ["SqueezeTransform", "UnsqueezeTransform", "PermuteTransform", "FlattenObservation"]


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


class _SpecChanging(Transform):
    """A transform whose outputs' specs are ``_new_spec`` of its inputs': observations going
    out, and on the inverse path step inputs (the outside sees the changed spec, the inverse
    gives the base env its own layout)."""

    def _new_spec(self, spec: TensorSpec) -> TensorSpec:
        raise NotImplementedError

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            observation_spec[ok] = self._new_spec(observation_spec[ik])
        return observation_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys_inv, self.out_keys_inv):
            if ok in action_spec:
                action_spec[ik] = self._new_spec(action_spec[ok])
        return action_spec


class UnsqueezeTransform(_SpecChanging):
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


class PermuteTransform(_SpecChanging):
    """Reorder the last ``len(dims)`` dims of entries: ``dims`` lists, for each output dim,
    the input dim it takes (a reordering of ``-len(dims) .. -1``).

    Args:
        dims: e.g. ``(-1, -3, -2)`` turns ``[..., H, W, C]`` into ``[..., C, H, W]``.
        in_keys: entries permuted (observations).
        out_keys: output keys (default: in place).
        in_keys_inv: step inputs given back their base-env layout (the inverse permutation)
            before the base env sees them.
        out_keys_inv: their keys for the base env (default: ``in_keys_inv``).

    Example:
        >>> env = TransformedEnv(
        ...     GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        ...     PermuteTransform((-1, -3, -2), in_keys=["pixels"]),
        ... )  # doctest: +SKIP
        >>> env.observation_spec["pixels"].shape  # doctest: +SKIP
        torch.Size([3, 400, 600])
    """

    def __init__(
        self,
        dims: Sequence[int],
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
    ) -> None:
        dims = [int(d) for d in dims]
        if sorted(dims) != list(range(-len(dims), 0)):
            raise ValueError(
                "PermuteTransform: dims must reorder the last dims with negative indices "
                f"(a permutation of {list(range(-len(dims), 0))}), got {dims}."
            )
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.dims = dims
        # output dim i of the inverse takes the forward output dim holding input dim i
        self._inv_dims = [dims.index(d) - len(dims) for d in range(-len(dims), 0)]

    def _permute(self, value: torch.Tensor, dims: list[int]) -> torch.Tensor:
        if value.ndim < len(dims):
            raise ValueError(
                f"PermuteTransform(dims={self.dims}) needs entries with at least {len(dims)} "
                f"dims, got shape {tuple(value.shape)}."
            )
        return value.permute(*range(value.ndim - len(dims)), *dims)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return self._permute(value, self.dims)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return self._permute(value, self._inv_dims)

    def _new_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = (
            torch.zeros(spec.shape, device="meta")
            .permute(*range(len(spec.shape) - len(self.dims)), *self.dims)
            .shape
        )
        return _reshaped(spec, shape, self._apply_transform)

    def __repr__(self) -> str:
        return (
            f"PermuteTransform(dims={self.dims}, in_keys={self.in_keys}, "
            f"out_keys={self.out_keys}, in_keys_inv={self.in_keys_inv}, "
            f"out_keys_inv={self.out_keys_inv})"
        )


class FlattenObservation(Transform):
    """Merge the dims ``first_dim .. last_dim`` of entries into one (``torch.flatten``).

    Args:
        first_dim: first dim merged (negative: counted from the end of the entry).
        last_dim: last dim merged.
        in_keys: entries flattened (default ``["pixels"]``).
        out_keys: output keys (default: in place).
        allow_positive_dim: accept dims >= 0, counted from the first dim after the batch
            dims (of the env, or of the TensorDict given to ``forward``).

    Example:
        >>> env = TransformedEnv(
        ...     GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        ...     FlattenObservation(-3, -1, in_keys=["pixels"]),
        ... )  # doctest: +SKIP
        >>> env.observation_spec["pixels"].shape  # doctest: +SKIP
        torch.Size([720000])
    """

    def __init__(
        self,
        first_dim: int,
        last_dim: int,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        allow_positive_dim: bool = False,
    ) -> None:
        for name, dim in (("first_dim", first_dim), ("last_dim", last_dim)):
            if not allow_positive_dim and dim >= 0:
                raise ValueError(
                    f"FlattenObservation: {name} must be negative (counted from the end, so "
                    f"it holds for any batch size), got {dim}; pass allow_positive_dim=True "
                    "to count from the first feature dim."
                )
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        self.first_dim, self.last_dim = int(first_dim), int(last_dim)
        self.allow_positive_dim = bool(allow_positive_dim)

    def _flatten(self, value: torch.Tensor, batch_dims: int) -> torch.Tensor:
        first = self.first_dim + batch_dims if self.first_dim >= 0 else self.first_dim
        last = self.last_dim + batch_dims if self.last_dim >= 0 else self.last_dim
        return torch.flatten(value, first, last)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = tensordict.get(ik, None)
            if value is None:
                raise _missing(tensordict, ik, "FlattenObservation")
            tensordict.set(ok, self._flatten(value, tensordict.batch_dims))
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        batch_dims = len(observation_spec.shape)
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            shape = self._flatten(torch.zeros(spec.shape, device="meta"), batch_dims).shape
            observation_spec[ok] = _reshaped(
                spec, shape, lambda t, n=batch_dims: self._flatten(t, n)
            )
        return observation_spec

    def __repr__(self) -> str:
        return (
            f"FlattenObservation(first_dim={self.first_dim}, last_dim={self.last_dim}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys})"
        )
