"""Transforms that join, drop, keep or rename entries: ``CatTensors``, ``ExcludeTransform``,
``SelectTransform``, ``RenameTransform``.

They act on the outputs of the env (reset and step, so both the root observation and the
``"next"`` one) and update the observation (and reward) specs to match, as torchrl's do.

Example:
    >>> env = TransformedEnv(
    ...     GymEnv("Blackjack-v1"),
    ...     CatTensors(["observation_0", "observation_1", "observation_2"], "observation"),
    ... )  # doctest: +SKIP
    >>> env.observation_spec["observation"].shape  # doctest: +SKIP
    torch.Size([45])
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Composite, Unbounded
from rl_trainers.envs.transforms.transforms import Key, Transform, _keys, _missing
from rl_trainers.envs.utils import DONE_KEYS

__all__ = ["CatTensors", "ExcludeTransform", "SelectTransform", "RenameTransform"]


def _norm(key: Key) -> Key:
    """``("a",)`` and ``"a"`` name the same entry."""
    if isinstance(key, tuple) and len(key) == 1:
        return key[0]
    return key


class CatTensors(Transform):
    """Concatenate several entries into one tensor (e.g. a Dict or Tuple observation).

    Args:
        in_keys: keys to concatenate; None: every observation entry of the parent env,
            read from its spec when the transform joins an env.
        out_key: key of the result.
        dim: concatenation dim (negative: counted from the end of each entry).
        del_keys: remove the input entries (and their specs).
        unsqueeze_if_oor: add a trailing dim to entries that lack ``dim``.
        sort: sort ``in_keys`` (torchrl's default); False keeps the order given.
    """

    def __init__(
        self,
        in_keys: Sequence[Key] | None = None,
        out_key: Key = "observation_vector",
        dim: int = -1,
        *,
        del_keys: bool = True,
        unsqueeze_if_oor: bool = False,
        sort: bool = True,
    ) -> None:
        if not isinstance(out_key, str | tuple):
            raise TypeError(
                f"CatTensors: out_key must be one key, got {out_key!r} (torchrl's "
                "signature is CatTensors(in_keys, out_key, dim))."
            )
        if dim >= 0:
            raise ValueError(f"CatTensors: dim must be negative, got {dim}.")
        self._auto = in_keys is None
        keys = [_norm(k) for k in _keys(in_keys)]
        if sort:
            keys = sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)
        super().__init__(keys)
        self.out_keys = [_norm(out_key)]
        self.dim = int(dim)
        self.del_keys = bool(del_keys)
        self.unsqueeze_if_oor = bool(unsqueeze_if_oor)
        self.sort = bool(sort)

    def _values(self, tensordict: TensorDictBase) -> list[torch.Tensor]:
        out = []
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if value is None:
                raise _missing(tensordict, key, "CatTensors")
            if self.unsqueeze_if_oor and value.ndim - tensordict.batch_dims < -self.dim:
                value = value.unsqueeze(-1)
            out.append(value)
        return out

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.in_keys:
            raise RuntimeError(
                "CatTensors has no in_keys: give them, or put the transform in an env."
            )
        values = self._values(tensordict)
        dtype = functools.reduce(torch.promote_types, [v.dtype for v in values])
        tensordict.set(self.out_keys[0], torch.cat([v.to(dtype) for v in values], self.dim))
        if self.del_keys:
            tensordict.exclude(*[k for k in self.in_keys if k != self.out_keys[0]], inplace=True)
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        if self._auto:
            self.in_keys = sorted(
                (_norm(k) for k in observation_spec.keys(True, True)),
                key=lambda k: (k,) if isinstance(k, str) else k,
            )
        specs = []
        for key in self.in_keys:
            if key not in observation_spec:
                raise KeyError(
                    f"CatTensors: key {key!r} is not an observation of the env; observations: "
                    f"{observation_spec.keys(True, True)}."
                )
            specs.append(observation_spec[key])
        batch_dims = len(observation_spec.shape)
        shapes = []
        for spec in specs:
            shape = list(spec.shape)
            if self.unsqueeze_if_oor and len(shape) - batch_dims < -self.dim:
                shape.append(1)
            shapes.append(shape)
        first = shapes[0]
        for key, shape in zip(self.in_keys, shapes, strict=True):
            if len(shape) != len(first) or len(shape) - batch_dims < -self.dim:
                raise ValueError(
                    f"CatTensors: cannot concatenate {key!r} of shape {tuple(shape)} along dim "
                    f"{self.dim} with shape {tuple(first)} (use unsqueeze_if_oor=True for "
                    "entries without that dim)."
                )
        out_shape = list(first)
        out_shape[self.dim] = sum(s[self.dim] for s in shapes)
        dtype = functools.reduce(torch.promote_types, [s.dtype for s in specs])
        if self.del_keys:
            for key in self.in_keys:
                del observation_spec[key]
        observation_spec[self.out_keys[0]] = Unbounded(
            shape=out_shape, dtype=dtype, device=observation_spec.device
        )
        return observation_spec

    def __repr__(self) -> str:
        return f"CatTensors(in_keys={self.in_keys}, out_key={self.out_keys[0]!r}, dim={self.dim})"


class ExcludeTransform(Transform):
    """Remove entries from the env's outputs (and specs).

    Args:
        *excluded_keys: keys to remove (one list also accepted).
        inverse: unused (torchrl compatibility; only False).
    """

    def __init__(self, *excluded_keys: Key, inverse: bool = False) -> None:
        if len(excluded_keys) == 1 and isinstance(excluded_keys[0], list):
            excluded_keys = tuple(excluded_keys[0])
        if inverse:
            raise NotImplementedError("ExcludeTransform(inverse=True) is not supported.")
        keys = [_norm(k) for k in excluded_keys]
        protected = [k for k in keys if k in DONE_KEYS]
        if protected:
            raise ValueError(
                f"ExcludeTransform: the done flags {protected} cannot be removed (collectors "
                "and step_mdp need them)."
            )
        super().__init__([], [])
        self.excluded_keys = keys

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.exclude(*self.excluded_keys, inplace=True)

    def _drop(self, spec: Composite) -> Composite:
        for key in self.excluded_keys:
            if key in spec:
                del spec[key]
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._drop(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._drop(reward_spec)

    def __repr__(self) -> str:
        return f"ExcludeTransform(keys={self.excluded_keys})"


class SelectTransform(Transform):
    """Keep only the selected observations (plus rewards and done flags) in the outputs.

    Entries that are not observations of the env (e.g. a collector's ``("collector",
    "traj_ids")`` carried through a reset) are left alone.

    Args:
        *selected_keys: observation keys to keep (one list also accepted).
        keep_rewards: keep the reward entries.
        keep_dones: keep the done flags (only True: collectors need them).
    """

    def __init__(
        self, *selected_keys: Key, keep_rewards: bool = True, keep_dones: bool = True
    ) -> None:
        if len(selected_keys) == 1 and isinstance(selected_keys[0], list):
            selected_keys = tuple(selected_keys[0])
        if not keep_dones:
            raise ValueError("SelectTransform(keep_dones=False) is not supported.")
        super().__init__([], [])
        self.selected_keys = [_norm(k) for k in selected_keys]
        self.keep_rewards = bool(keep_rewards)
        self._dropped: list[Key] = []

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.exclude(*self._dropped, inplace=True)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        keep = set(self.selected_keys)
        dropped = [_norm(k) for k in observation_spec.keys(True, True) if _norm(k) not in keep]
        for key in dropped:
            del observation_spec[key]
        self._dropped = [*dropped, *[k for k in self._dropped if k not in dropped]]
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        if self.keep_rewards:
            return reward_spec
        dropped = [_norm(k) for k in reward_spec.keys(True, True)]
        for key in dropped:
            del reward_spec[key]
        self._dropped = [*self._dropped, *[k for k in dropped if k not in self._dropped]]
        return reward_spec

    def __repr__(self) -> str:
        return f"SelectTransform(keys={self.selected_keys})"


class RenameTransform(Transform):
    """Rename output entries (observations or rewards) of the env.

    Args:
        in_keys: current names.
        out_keys: new names.
        in_keys_inv: not supported (renaming step inputs, e.g. the action).
        out_keys_inv: not supported.
        create_copy: keep the old entries too.
    """

    def __init__(
        self,
        in_keys: Sequence[Key],
        out_keys: Sequence[Key],
        in_keys_inv: Sequence[Key] | None = None,
        out_keys_inv: Sequence[Key] | None = None,
        create_copy: bool = False,
    ) -> None:
        if in_keys_inv or out_keys_inv:
            raise NotImplementedError(
                "RenameTransform: renaming step inputs (in_keys_inv/out_keys_inv) is not "
                "supported; rename the policy's output key instead."
            )
        super().__init__([_norm(k) for k in _keys(in_keys)], [_norm(k) for k in _keys(out_keys)])
        for key in self.in_keys:
            if key in DONE_KEYS:
                raise ValueError(f"RenameTransform: the done flag {key!r} cannot be renamed.")
        self.create_copy = bool(create_copy)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys, strict=True):
            value = tensordict.get(ik, None)
            if value is None:
                continue  # e.g. a reward key in a reset output
            tensordict.set(ok, value)
            if not self.create_copy:
                tensordict.exclude(ik, inplace=True)
        return tensordict

    def _rename(self, spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys, strict=True):
            if ik in spec:
                spec[ok] = spec[ik].clone()
                if not self.create_copy:
                    del spec[ik]
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._rename(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._rename(reward_spec)
