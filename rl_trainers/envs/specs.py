"""Tensor specs: what shape, dtype and range each entry of an environment's TensorDict has.

Names follow torchrl (``Unbounded``, ``Bounded``, ``Categorical``, ``OneHot``,
``MultiCategorical``, ``MultiOneHot``, ``Binary``, ``Composite``) and the old torchrl names are
kept as aliases.
A leaf spec's ``shape`` includes the batch dimensions of the Composite that holds it, e.g. a
batched CartPole with 8 sub-envs has ``observation_spec["observation"].shape == (8, 4)``.

Example:
    >>> spec = Bounded(low=-2.0, high=2.0, shape=(1,))
    >>> a = spec.rand()
    >>> spec.is_in(a)
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

__all__ = [
    "TensorSpec",
    "Unbounded",
    "Bounded",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "MultiOneHot",
    "Binary",
    "Composite",
    "specs_from_gym_space",
    "unbatched",
    "BoundedTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
    "OneHotDiscreteTensorSpec",
    "DiscreteTensorSpec",
    "MultiDiscreteTensorSpec",
    "MultiOneHotDiscreteTensorSpec",
    "BinaryDiscreteTensorSpec",
    "CompositeSpec",
]

ShapeLike = int | Sequence[int] | torch.Size


def _as_shape(shape: ShapeLike | None) -> torch.Size:
    if shape is None:
        return torch.Size([])
    if isinstance(shape, int):
        return torch.Size([shape])
    return torch.Size(shape)


def _as_device(device: Any) -> torch.device:
    return torch.device("cpu") if device is None else torch.device(device)


def _expanded_shape(spec: Any, shape: tuple) -> torch.Size:
    """``shape`` (ints or one sequence) checked to end with ``spec.shape``, for ``expand``."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    new = torch.Size(shape)
    n = len(spec.shape)
    if n and tuple(new[len(new) - n :]) != tuple(spec.shape):
        raise ValueError(
            f"Cannot expand {type(spec).__name__} of shape {tuple(spec.shape)} to "
            f"{tuple(new)}: the new shape must end with the current one."
        )
    return new


class TensorSpec:
    """Base class of leaf specs.

    Args:
        shape: full shape of a value (batch dims included).
        dtype: torch dtype of a value.
        device: device of a value.
    """

    def __init__(self, shape: ShapeLike, dtype: torch.dtype, device: Any = None) -> None:
        self.shape = _as_shape(shape)
        self.dtype = dtype
        self.device = _as_device(device)

    # --- helpers -----------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions of a value."""
        return len(self.shape)

    def _full(self, shape: ShapeLike | None) -> torch.Size:
        return _as_shape(shape) + self.shape

    def _check_shape(self, value: torch.Tensor) -> bool:
        n = len(self.shape)
        return tuple(value.shape[value.ndim - n :]) == tuple(self.shape) if n else True

    def __getitem__(self, index: int | tuple[int, ...]) -> TensorSpec:
        """The spec of one element of the leading (batch) dims, as torchrl's
        ``env.action_spec[(0,) * len(env.batch_size)]``; integer indices only."""
        index = index if isinstance(index, tuple) else (index,)
        if not all(isinstance(i, int) for i in index) or len(index) > len(self.shape):
            raise IndexError(
                f"{type(self).__name__} of shape {tuple(self.shape)} takes integer indices "
                f"of its leading dims, got {index!r}"
            )
        return unbatched(self, len(index), index)

    # --- API ---------------------------------------------------------------------------------
    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        """A random value of shape ``(*shape, *self.shape)``."""
        raise NotImplementedError

    def zero(self, shape: ShapeLike | None = None) -> torch.Tensor:
        """A zero value of shape ``(*shape, *self.shape)``."""
        return torch.zeros(self._full(shape), dtype=self.dtype, device=self.device)

    def is_in(self, value: torch.Tensor) -> bool:
        """Whether ``value`` has this spec's trailing shape, dtype and range."""
        return (
            isinstance(value, torch.Tensor)
            and value.dtype == self.dtype
            and self._check_shape(value)
        )

    def project(self, value: torch.Tensor) -> torch.Tensor:
        """The closest value inside the spec (identity for unbounded specs)."""
        return value.to(self.dtype)

    def assert_is_in(self, value: torch.Tensor) -> None:
        """Raise a ValueError naming this spec if ``value`` is not in it."""
        if not self.is_in(value):
            desc = (
                f"shape={tuple(value.shape)}, dtype={value.dtype}"
                if isinstance(value, torch.Tensor)
                else repr(type(value))
            )
            raise ValueError(f"Value ({desc}) is not in spec {self!r}.")

    def encode(self, value: Any) -> torch.Tensor:
        """Convert a numpy array, list or number to a tensor of this spec's dtype."""
        if isinstance(value, np.ndarray):
            return torch.from_numpy(value).to(device=self.device, dtype=self.dtype)
        return torch.as_tensor(value, dtype=self.dtype, device=self.device)

    def _kwargs(self) -> dict[str, Any]:
        return {}

    def _with(self, shape: torch.Size | None = None, device: Any = None) -> TensorSpec:
        kwargs = self._kwargs()
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.shape = self.shape if shape is None else torch.Size(shape)
        out.device = self.device if device is None else torch.device(device)
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.to(out.device)
                if shape is not None and v.shape == self.shape:
                    v = v.expand(out.shape).clone()
                setattr(out, k, v)
        return out

    def expand(self, *shape: int | Sequence[int]) -> TensorSpec:
        """A spec with leading dims added; ``shape`` must end with the current shape."""
        return self._with(shape=_expanded_shape(self, shape))

    def to(self, device: Any) -> TensorSpec:
        """This spec on another device."""
        return self._with(device=device)

    def clone(self) -> TensorSpec:
        """A copy of this spec."""
        return self._with()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        if (self.shape, self.dtype, self.device) != (other.shape, other.dtype, other.device):
            return False
        for k, v in self._kwargs().items():
            w = getattr(other, k)
            if isinstance(v, torch.Tensor):
                if not torch.equal(v, w):
                    return False
            elif v != w:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = "".join(f", {k}={_short(v)}" for k, v in self._kwargs().items())
        return f"{type(self).__name__}(shape={tuple(self.shape)}, dtype={self.dtype}{extra})"


def _short(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        if v.numel() == 0:
            return "[]"
        flat = v.flatten()
        if bool((flat == flat[0]).all()):
            return f"{flat[0].item():g}"
        return str(v.tolist())
    return repr(v)


class Unbounded(TensorSpec):
    """A value of any real (or integer) value.

    Args:
        shape: value shape.
        device: value device.
        dtype: value dtype (float32 by default).
    """

    def __init__(
        self, shape: ShapeLike | None = None, device: Any = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__(shape, dtype or torch.float32, device)

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        full = self._full(shape)
        if self.dtype.is_floating_point:
            return torch.randn(full, dtype=self.dtype, device=self.device)
        if self.dtype == torch.bool:
            return torch.randint(0, 2, full, device=self.device).bool()
        return torch.randint(-100, 100, full, dtype=self.dtype, device=self.device)


class Bounded(TensorSpec):
    """A value within ``[low, high]`` (element-wise; infinite bounds allowed).

    Args:
        low: lower bound (number or tensor broadcastable to ``shape``).
        high: upper bound.
        shape: value shape (inferred from ``low``/``high`` if omitted).
        device: value device.
        dtype: value dtype (float32 by default).
    """

    def __init__(
        self,
        low: float | torch.Tensor | np.ndarray,
        high: float | torch.Tensor | np.ndarray,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        dtype = dtype or torch.float32
        low_t = torch.as_tensor(np.asarray(low) if isinstance(low, np.ndarray) else low)
        high_t = torch.as_tensor(np.asarray(high) if isinstance(high, np.ndarray) else high)
        if shape is None:
            shape = torch.broadcast_shapes(low_t.shape, high_t.shape)
        super().__init__(shape, dtype, device)
        try:
            self.low = low_t.to(self.device, dtype).expand(self.shape).clone()
            self.high = high_t.to(self.device, dtype).expand(self.shape).clone()
        except RuntimeError as err:
            raise ValueError(
                f"Bounded: low {tuple(low_t.shape)} and high {tuple(high_t.shape)} cannot be "
                f"broadcast to shape {tuple(self.shape)}."
            ) from err
        if bool((self.low > self.high).any()):
            raise ValueError(f"Bounded: low must be <= high, got low={low} and high={high}.")
        self.space = SimpleNamespace(low=self.low, high=self.high)

    def _kwargs(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high}

    def _with(self, shape: torch.Size | None = None, device: Any = None) -> TensorSpec:
        out = super()._with(shape, device)
        out.space = SimpleNamespace(low=out.low, high=out.high)
        return out

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        full = self._full(shape)
        low, high = self.low, self.high
        if self.dtype.is_floating_point:
            finite = torch.isfinite(low) & torch.isfinite(high)
            if bool(finite.all()):
                u = torch.rand(full, dtype=self.dtype, device=self.device)
                return low + u * (high - low)
            x = torch.randn(full, dtype=self.dtype, device=self.device)
            lo = torch.where(torch.isfinite(low), low, torch.full_like(low, -1e30))
            hi = torch.where(torch.isfinite(high), high, torch.full_like(high, 1e30))
            u = torch.rand(full, dtype=self.dtype, device=self.device)
            return torch.where(finite.expand(full), lo + u * (hi - lo), x.clamp(lo, hi))
        lo = low.clamp_min(-(2**31)).long()
        hi = high.clamp_max(2**31 - 1).long()
        r = torch.rand(full, device=self.device)
        return (lo + (r * (hi - lo + 1)).floor().long()).clamp(lo, hi).to(self.dtype)

    def zero(self, shape: ShapeLike | None = None) -> torch.Tensor:
        z = torch.zeros(self._full(shape), dtype=self.dtype, device=self.device)
        return torch.maximum(torch.minimum(z, self.high), self.low)

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        return bool(((value >= self.low) & (value <= self.high)).all())

    def project(self, value: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(value.to(self.dtype), self.high), self.low)


class Categorical(TensorSpec):
    """An integer index in ``[0, n)``.

    Args:
        n: number of categories.
        shape: value shape (``()`` by default).
        device: value device.
        dtype: value dtype (int64 by default; bool for done-like flags with n=2).
    """

    def __init__(
        self,
        n: int,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(shape, dtype or torch.int64, device)
        if int(n) < 1:
            raise ValueError(f"Categorical: n must be >= 1, got {n}.")
        self.n = int(n)
        self.space = SimpleNamespace(n=self.n)

    def _kwargs(self) -> dict[str, Any]:
        return {"n": self.n}

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        out = torch.randint(0, self.n, self._full(shape), device=self.device)
        return out if out.dtype == self.dtype else out.to(self.dtype)

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        if self.dtype == torch.bool:
            return True
        return bool(((value >= 0) & (value < self.n)).all())

    def project(self, value: torch.Tensor) -> torch.Tensor:
        if self.dtype == torch.bool:
            return value.bool()
        return value.round().clamp(0, self.n - 1).to(self.dtype)

    def to_one_hot(self, value: torch.Tensor) -> torch.Tensor:
        """One-hot encoding of an index tensor (shape ``[..., n]``, bool)."""
        return torch.nn.functional.one_hot(value.long(), self.n).bool()

    def to_one_hot_spec(self) -> OneHot:
        """The matching OneHot spec."""
        return OneHot(self.n, shape=(*self.shape, self.n), device=self.device)


class OneHot(TensorSpec):
    """A one-hot vector over ``n`` categories (last dim ``n``).

    Args:
        n: number of categories.
        shape: value shape (``(n,)`` by default; must end with ``n``).
        device: value device.
        dtype: value dtype (bool by default).
    """

    def __init__(
        self,
        n: int,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        shape = _as_shape(shape) if shape is not None else torch.Size([n])
        if not shape or shape[-1] != n:
            raise ValueError(f"OneHot: shape must end with n={n}, got {tuple(shape)}.")
        super().__init__(shape, dtype or torch.bool, device)
        self.n = int(n)
        self.space = SimpleNamespace(n=self.n)

    def _kwargs(self) -> dict[str, Any]:
        return {"n": self.n}

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        full = self._full(shape)
        idx = torch.randint(0, self.n, (*full[:-1], 1), device=self.device)
        out = idx == self._arange
        return out if self.dtype == torch.bool else out.to(self.dtype)

    @property
    def _arange(self) -> torch.Tensor:
        ar = self.__dict__.get("_arange_cache")
        if ar is None or ar.device != self.device:
            ar = torch.arange(self.n, device=self.device)
            self.__dict__["_arange_cache"] = ar
        return ar

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        v = value.long() if value.dtype == torch.bool else value
        return bool(((v == 0) | (v == 1)).all() and (v.sum(-1) == 1).all())

    def project(self, value: torch.Tensor) -> torch.Tensor:
        return self.to_one_hot(value.argmax(-1))

    def to_categorical(self, value: torch.Tensor) -> torch.Tensor:
        """Index of the hot entry (int64, last dim removed)."""
        return value.long().argmax(-1)

    def to_one_hot(self, index: torch.Tensor) -> torch.Tensor:
        """One-hot encoding of an index tensor in this spec's dtype."""
        return torch.nn.functional.one_hot(index.long(), self.n).to(self.dtype)

    def to_categorical_spec(self) -> Categorical:
        """The matching Categorical spec."""
        return Categorical(self.n, shape=self.shape[:-1], device=self.device)


class MultiOneHot(TensorSpec):
    """Several one-hot vectors side by side: entry ``i`` is a one-hot block of ``nvec[i]``
    values, the blocks concatenated along the last dim (``sum(nvec)`` long).

    Args:
        nvec: number of categories of each block.
        shape: value shape (``(sum(nvec),)`` by default; must end with ``sum(nvec)``).
        device: value device.
        dtype: value dtype (bool by default).
        use_register: torchrl's experimental option; only ``False`` is supported.
        mask: torchrl's sampling mask; only ``None`` is supported.

    Example:
        >>> spec = MultiOneHot((3, 2))
        >>> spec.is_in(torch.tensor([0, 1, 0, 1, 0], dtype=torch.bool))
        True
        >>> spec.to_categorical(torch.tensor([0, 1, 0, 1, 0], dtype=torch.bool))
        tensor([1, 0])
    """

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor | np.ndarray,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
    ) -> None:
        if use_register or mask is not None:
            raise NotImplementedError(
                "MultiOneHot: use_register and mask are not supported (leave them out)."
            )
        nvec = tuple(int(n) for n in np.asarray(nvec).reshape(-1))
        if not nvec or min(nvec) < 1:
            raise ValueError(f"MultiOneHot: nvec must hold numbers >= 1, got {nvec}.")
        total = sum(nvec)
        shape = _as_shape(shape) if shape is not None else torch.Size([total])
        if not shape or shape[-1] != total:
            raise ValueError(
                f"MultiOneHot: shape must end with sum(nvec)={total}, got {tuple(shape)}."
            )
        super().__init__(shape, dtype or torch.bool, device)
        self.nvec = nvec

    def _kwargs(self) -> dict[str, Any]:
        return {"nvec": self.nvec}

    def _blocks(self, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.split(value, list(self.nvec), dim=-1)

    def cardinality(self) -> int:
        """Number of distinct values (the product of ``nvec``)."""
        return int(np.prod(self.nvec))

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        batch = self._full(shape)[:-1]
        index = torch.stack(
            [torch.randint(0, n, batch, device=self.device) for n in self.nvec], dim=-1
        )
        return self.to_one_hot(index)

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        v = value.long() if value.dtype == torch.bool else value
        if not bool(((v == 0) | (v == 1)).all()):
            return False
        return all(bool((block.sum(-1) == 1).all()) for block in self._blocks(v))

    def project(self, value: torch.Tensor) -> torch.Tensor:
        """Each block set to the one-hot vector of its largest entry."""
        return self.to_one_hot(self.to_categorical(value))

    def to_categorical(self, value: torch.Tensor) -> torch.Tensor:
        """The hot index (the largest entry) of each block: int64, last dim ``len(nvec)``."""
        if value.dtype == torch.bool:
            value = value.long()
        return torch.stack([block.argmax(-1) for block in self._blocks(value)], dim=-1)

    def to_one_hot(self, index: torch.Tensor) -> torch.Tensor:
        """The value whose blocks are hot at ``index`` (last dim ``len(nvec)``)."""
        blocks = [
            torch.nn.functional.one_hot(index[..., i].long(), n) for i, n in enumerate(self.nvec)
        ]
        return torch.cat(blocks, dim=-1).to(device=self.device, dtype=self.dtype)

    def to_categorical_spec(self) -> MultiCategorical:
        """The matching MultiCategorical spec."""
        return MultiCategorical(
            list(self.nvec), shape=(*self.shape[:-1], len(self.nvec)), device=self.device
        )


class MultiCategorical(TensorSpec):
    """Several integer indices, entry ``i`` in ``[0, nvec[i])``.

    Args:
        nvec: number of categories per entry.
        shape: value shape (``nvec.shape`` by default).
        device: value device.
        dtype: value dtype (int64 by default).
    """

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor | np.ndarray,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        nvec_t = torch.as_tensor(np.asarray(nvec), dtype=torch.int64)
        shape = _as_shape(shape) if shape is not None else nvec_t.shape
        super().__init__(shape, dtype or torch.int64, device)
        self.nvec = nvec_t.to(self.device).expand(self.shape).clone()

    def _kwargs(self) -> dict[str, Any]:
        return {"nvec": self.nvec}

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        r = torch.rand(self._full(shape), device=self.device)
        return (r * self.nvec).floor().long().clamp_max(self.nvec - 1).to(self.dtype)

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        return bool(((value >= 0) & (value < self.nvec)).all())

    def project(self, value: torch.Tensor) -> torch.Tensor:
        return torch.minimum(value.round().clamp_min(0).long(), self.nvec - 1).to(self.dtype)

    def to_one_hot_spec(self) -> MultiOneHot:
        """The matching MultiOneHot spec (the last dim holds the blocks)."""
        nvec = [int(n) for n in self.nvec.reshape(-1, self.nvec.shape[-1])[0]]
        return MultiOneHot(nvec, shape=(*self.shape[:-1], sum(nvec)), device=self.device)

    def to_one_hot(self, value: torch.Tensor) -> torch.Tensor:
        """One-hot blocks of the indices ``value``, concatenated (see MultiOneHot)."""
        return self.to_one_hot_spec().to_one_hot(value)


class Binary(TensorSpec):
    """A vector of ``n`` zeros and ones.

    Args:
        n: number of entries (the last dim).
        shape: value shape (``(n,)`` by default).
        device: value device.
        dtype: value dtype (int8 by default, as gymnasium's MultiBinary).
    """

    def __init__(
        self,
        n: int | None = None,
        shape: ShapeLike | None = None,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        if shape is None:
            if n is None:
                raise ValueError("Binary: give n or shape.")
            shape = (n,)
        shape = _as_shape(shape)
        super().__init__(shape, dtype or torch.int8, device)
        self.n = int(shape[-1]) if n is None else int(n)

    def _kwargs(self) -> dict[str, Any]:
        return {"n": self.n}

    def rand(self, shape: ShapeLike | None = None) -> torch.Tensor:
        return torch.randint(0, 2, self._full(shape), device=self.device).to(self.dtype)

    def is_in(self, value: torch.Tensor) -> bool:
        if not super().is_in(value):
            return False
        return bool(((value == 0) | (value == 1)).all())

    def project(self, value: torch.Tensor) -> torch.Tensor:
        return (value > 0.5).to(self.dtype) if value.is_floating_point() else value.clamp(0, 1)


NestedKey = str | tuple[str, ...]


def _unravel(key: NestedKey) -> tuple[str, ...]:
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple) and all(isinstance(k, str) for k in key):
        return key
    raise TypeError(f"Spec keys are strings or tuples of strings, got {key!r}.")


class Composite:
    """A dictionary of specs (nested Composites allowed); the spec of a TensorDict.

    Args:
        *args: an optional dict of specs.
        shape: batch shape shared by all entries (leaf shapes start with it).
        device: device of the entries.
        **specs: named specs.

    Example:
        >>> spec = Composite(observation=Unbounded((4,)), next=Composite(reward=Unbounded((1,))))
        >>> spec[("next", "reward")].shape
        torch.Size([1])
    """

    def __init__(
        self,
        *args: dict[str, TensorSpec | Composite],
        shape: ShapeLike | None = None,
        device: Any = None,
        batch_size: ShapeLike | None = None,
        **specs: TensorSpec | Composite | None,
    ) -> None:
        self.shape = _as_shape(shape if shape is not None else batch_size)
        self.device = _as_device(device)
        self._specs: dict[str, TensorSpec | Composite] = {}
        for d in args:
            specs = {**d, **specs}
        for k, v in specs.items():
            if v is not None:
                self[k] = v

    # --- mapping -----------------------------------------------------------------------------
    def __getitem__(self, key: NestedKey) -> TensorSpec | Composite:
        parts = _unravel(key)
        node: Any = self
        for i, p in enumerate(parts):
            if not isinstance(node, Composite) or p not in node._specs:
                where = node if isinstance(node, Composite) else None
                present = list(where._specs) if where is not None else []
                raise KeyError(
                    f"Key {key!r} not found in Composite spec (missing {parts[: i + 1]!r}); "
                    f"keys present: {present}."
                )
            node = node._specs[p]
        return node

    def __setitem__(self, key: NestedKey, value: TensorSpec | Composite | dict) -> None:
        parts = _unravel(key)
        if isinstance(value, dict):
            value = Composite(value, shape=self.shape, device=self.device)
        if not isinstance(value, TensorSpec | Composite):
            raise TypeError(f"Composite entries are specs, got {type(value).__name__} for {key!r}.")
        node = self
        for p in parts[:-1]:
            if p not in node._specs:
                node._specs[p] = Composite(shape=node.shape, device=node.device)
            node = node._specs[p]
            if not isinstance(node, Composite):
                raise KeyError(f"Cannot set {key!r}: {p!r} is a leaf spec.")
        n = len(node.shape)
        if tuple(value.shape[:n]) != tuple(node.shape):
            raise ValueError(
                f"Spec for {key!r} has shape {tuple(value.shape)}, which does not start with "
                f"the Composite's batch shape {tuple(node.shape)}."
            )
        node._specs[parts[-1]] = value

    def __delitem__(self, key: NestedKey) -> None:
        parts = _unravel(key)
        parent = self[parts[:-1]] if len(parts) > 1 else self
        del parent._specs[parts[-1]]

    def __contains__(self, key: NestedKey) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def keys(self, include_nested: bool = False, leaves_only: bool = False) -> list[NestedKey]:
        """Entry names; with ``include_nested`` nested keys are tuples."""
        out: list[NestedKey] = []
        for k, v in self._specs.items():
            if isinstance(v, Composite):
                if not leaves_only:
                    out.append(k)
                if include_nested:
                    out.extend((k, *_unravel(sub)) for sub in v.keys(True, leaves_only))
            else:
                out.append(k)
        return out

    def items(
        self, include_nested: bool = False, leaves_only: bool = False
    ) -> list[tuple[NestedKey, TensorSpec | Composite]]:
        """``(key, spec)`` pairs."""
        return [(k, self[k]) for k in self.keys(include_nested, leaves_only)]

    def values(
        self, include_nested: bool = False, leaves_only: bool = False
    ) -> list[TensorSpec | Composite]:
        """The specs."""
        return [self[k] for k in self.keys(include_nested, leaves_only)]

    def get(self, key: NestedKey, default: Any = None) -> Any:
        """Entry or ``default``."""
        return self[key] if key in self else default

    def set(self, key: NestedKey, value: TensorSpec | Composite) -> Composite:
        """Set an entry and return self."""
        self[key] = value
        return self

    def update(self, other: Composite | dict) -> Composite:
        """Copy the entries of ``other`` into this spec."""
        for k, v in other.items():
            self[k] = v
        return self

    def pop(self, key: NestedKey, *default: Any) -> Any:
        """Remove and return an entry."""
        if key not in self and default:
            return default[0]
        v = self[key]
        del self[key]
        return v

    @property
    def ndim(self) -> int:
        """Number of batch dims."""
        return len(self.shape)

    # --- values ------------------------------------------------------------------------------
    def _make(self, fn: str, shape: ShapeLike | None) -> TensorDict:
        shape = _as_shape(shape)
        data = {k: getattr(v, fn)(shape) for k, v in self._specs.items()}
        return TensorDict(data, batch_size=shape + self.shape, device=self.device)

    def rand(self, shape: ShapeLike | None = None) -> TensorDict:
        """A TensorDict of random values, batch size ``(*shape, *self.shape)``."""
        return self._make("rand", shape)

    def zero(self, shape: ShapeLike | None = None) -> TensorDict:
        """A TensorDict of zeros."""
        return self._make("zero", shape)

    def is_in(self, value: TensorDict) -> bool:
        """Whether every entry of the spec is present in ``value`` and in its spec."""
        for k, spec in self._specs.items():
            if k not in value.keys():
                return False
            if not spec.is_in(value.get(k)):
                return False
        return True

    def project(self, value: TensorDict) -> TensorDict:
        """Project each entry into its spec (a new TensorDict)."""
        out = value.clone(False)
        for k, spec in self._specs.items():
            if k in value.keys():
                out.set(k, spec.project(value.get(k)))
        return out

    def expand(self, *shape: int | Sequence[int]) -> Composite:
        """A Composite with leading batch dims added."""
        new = _expanded_shape(self, shape)
        lead = new[: len(new) - len(self.shape)]
        out = Composite(shape=new, device=self.device)
        for k, v in self._specs.items():
            out._specs[k] = v.expand(lead + v.shape)
        return out

    def to(self, device: Any) -> Composite:
        """This spec on another device."""
        out = Composite(shape=self.shape, device=device)
        out._specs = {k: v.to(device) for k, v in self._specs.items()}
        return out

    def clone(self) -> Composite:
        """A deep copy of this spec."""
        out = Composite(shape=self.shape, device=self.device)
        out._specs = {k: v.clone() for k, v in self._specs.items()}
        return out

    def empty(self) -> Composite:
        """A Composite with the same shape and device and no entries."""
        return Composite(shape=self.shape, device=self.device)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Composite)
            and self.shape == other.shape
            and self._specs.keys() == other._specs.keys()
            and all(v == other._specs[k] for k, v in self._specs.items())
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ",\n".join(
            f"    {k}: " + repr(v).replace("\n", "\n    ") for k, v in self._specs.items()
        )
        if not inner:
            return f"Composite(shape={tuple(self.shape)})"
        return f"Composite(\n{inner},\n    shape={tuple(self.shape)})"


# --- torchrl's older names -------------------------------------------------------------------
BoundedTensorSpec = Bounded
UnboundedContinuousTensorSpec = Unbounded
UnboundedDiscreteTensorSpec = Unbounded
OneHotDiscreteTensorSpec = OneHot
DiscreteTensorSpec = Categorical
MultiDiscreteTensorSpec = MultiCategorical
MultiOneHotDiscreteTensorSpec = MultiOneHot
BinaryDiscreteTensorSpec = Binary
CompositeSpec = Composite


# --- from gymnasium spaces -------------------------------------------------------------------
def _torch_dtype(np_dtype: Any, remap_float64: bool = True) -> torch.dtype:
    dt = torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype
    if remap_float64 and dt == torch.float64:
        return torch.float32
    return dt


def unbatched(
    spec: TensorSpec | Composite, batch_dims: int, index: tuple[int, ...] | None = None
) -> TensorSpec | Composite:
    """``spec`` without its ``batch_dims`` leading (env batch) dims: the spec of one sub-env.

    Per-element tensors (``low``/``high``, ``nvec``) keep the values of the sub-env at
    ``index`` (default: the first); e.g.
    ``unbatched(GymEnv("Pendulum-v1", num_envs=4).action_spec, 1).space.low`` is ``[-2.]``.
    """
    if batch_dims == 0:
        return spec.clone()
    if isinstance(spec, Composite):
        out = Composite(shape=spec.shape[batch_dims:], device=spec.device)
        for key, value in spec.items():
            out._specs[key] = unbatched(value, batch_dims, index)
        return out
    out = spec.clone()
    out.shape = spec.shape[batch_dims:]
    first = (0,) * batch_dims if index is None else index
    for name, value in spec._kwargs().items():
        if isinstance(value, torch.Tensor) and value.shape == spec.shape:
            setattr(out, name, value[first].clone())
    if isinstance(out, Bounded):
        out.space = SimpleNamespace(low=out.low, high=out.high)
    return out


def specs_from_gym_space(
    space: Any,
    categorical_action_encoding: bool = False,
    device: Any = None,
    batch_size: ShapeLike | None = None,
    remap_float64: bool = True,
) -> TensorSpec | Composite:
    """Convert a gymnasium space (of one environment) into a spec.

    Args:
        space: a ``gymnasium.spaces`` instance (Box, Discrete, MultiDiscrete, MultiBinary,
            Dict, Tuple).
        categorical_action_encoding: Discrete -> Categorical index if True, else OneHot.
        device: spec device.
        batch_size: leading batch dims added to every spec (e.g. ``(num_envs,)``).
        remap_float64: map float64 Box spaces to float32 specs.

    Returns:
        A leaf spec, or a Composite for Dict and Tuple spaces (nested Dicts give nested keys).
    """
    from gymnasium import spaces

    bs = _as_shape(batch_size)
    if isinstance(space, spaces.Box):
        dtype = _torch_dtype(space.dtype, remap_float64)
        low = torch.as_tensor(np.asarray(space.low, dtype=np.float64))
        high = torch.as_tensor(np.asarray(space.high, dtype=np.float64))
        shape = bs + torch.Size(space.shape)
        if bool(torch.isinf(low).all() and torch.isinf(high).all()):
            return Unbounded(shape=shape, device=device, dtype=dtype)
        if not dtype.is_floating_point:
            info = torch.iinfo(dtype)
            low, high = low.clamp(info.min, info.max), high.clamp(info.min, info.max)
        return Bounded(low, high, shape=shape, device=device, dtype=dtype)
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise ValueError(f"Discrete spaces with start != 0 are not supported, got {space}.")
        n = int(space.n)
        if categorical_action_encoding:
            return Categorical(n, shape=bs, device=device)
        return OneHot(n, shape=bs + torch.Size([n]), device=device)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = torch.as_tensor(np.asarray(space.nvec), dtype=torch.int64)
        return MultiCategorical(nvec, shape=bs + nvec.shape, device=device)
    if isinstance(space, spaces.MultiBinary):
        shape = bs + torch.Size(space.shape)
        return Binary(shape=shape, device=device, dtype=_torch_dtype(space.dtype))
    if isinstance(space, spaces.Dict):
        comp = Composite(shape=bs, device=device)
        for k, sub in space.spaces.items():
            comp[k] = specs_from_gym_space(
                sub, categorical_action_encoding, device, bs, remap_float64
            )
        return comp
    if isinstance(space, spaces.Tuple):
        comp = Composite(shape=bs, device=device)
        for i, sub in enumerate(space.spaces):
            comp[str(i)] = specs_from_gym_space(
                sub, categorical_action_encoding, device, bs, remap_float64
            )
        return comp
    raise TypeError(
        f"Unsupported gymnasium space {type(space).__name__}: supported are Box, Discrete, "
        "MultiDiscrete, MultiBinary, Dict and Tuple."
    )
