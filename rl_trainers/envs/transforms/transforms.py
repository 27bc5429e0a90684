"""``TransformedEnv``, the ``Transform`` base class and the transforms.

A transform sees every output of its env: ``_step(tensordict, next_tensordict)`` processes the
``"next"`` entries of a step and ``_reset(tensordict, tensordict_reset)`` the output of a reset
(so the root observation of the next step, which ``step_mdp`` copies from ``"next"``, is
transformed too). ``transform_observation_spec`` (and the reward/done/action variants) update
the specs so that networks read the transformed sizes from ``env.observation_spec``.

Partial resets: ``tensordict`` may hold a bool ``"_reset"`` entry ``[*B, 1]``; stateful
transforms (StepCounter, RewardSum, CatFrames, InitTracker, TimeMaxPool) only reset the flagged
entries.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers import fast
from rl_trainers.envs.common import EnvBase, complete_done_flags
from rl_trainers.envs.specs import Bounded, Composite, TensorSpec, Unbounded
from rl_trainers.envs.utils import fast_set, step_mdp
from rl_trainers.fast.vecnorm import host_update_and_normalize

__all__ = [
    "Transform",
    "Compose",
    "TransformedEnv",
    "StepCounter",
    "RewardSum",
    "RewardScaling",
    "ObservationNorm",
    "VecNorm",
    "DTypeCastTransform",
    "DoubleToFloat",
    "ToTensorImage",
    "GrayScale",
    "Resize",
    "CatFrames",
    "FrameSkipTransform",
    "NoopResetEnv",
    "InitTracker",
]

Key = str | tuple[str, ...]


def _keys(keys: Key | Sequence[Key] | None, default: Sequence[Key] = ()) -> list[Key]:
    if keys is None:
        return list(default)
    if isinstance(keys, str | tuple):
        return [keys]
    return list(keys)


def _missing(td: TensorDictBase, key: Key, who: str) -> KeyError:
    return KeyError(f"{who}: key {key!r} not found; keys present: {list(td.keys(True, True))}.")


def _reset_mask(tensordict: TensorDictBase | None, like: torch.Tensor) -> torch.Tensor | None:
    """The ``"_reset"`` mask broadcastable to ``like`` (``None`` means reset everything)."""
    if tensordict is None:
        return None
    mask = tensordict.get("_reset", None)
    if mask is None:
        return None
    while mask.ndim < like.ndim:
        mask = mask.unsqueeze(-1)
    return mask


def _apply_to_composite(function: Any) -> Any:
    """Decorator (torchrl's) for a ``transform_observation_spec`` written for one leaf spec:
    the decorated method maps each ``in_keys`` spec to its ``out_keys`` entry.

    Example:
        >>> class Sin(Transform):
        ...     def _apply_transform(self, obs):
        ...         return obs.sin()
        ...     @_apply_to_composite
        ...     def transform_observation_spec(self, spec):
        ...         return Bounded(-1.0, 1.0, shape=spec.shape, device=spec.device)
    """

    @functools.wraps(function)
    def per_key(self: Transform, observation_spec: Any) -> Any:
        if not isinstance(observation_spec, Composite):
            return function(self, observation_spec)
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ik in observation_spec:
                observation_spec[ok] = function(self, observation_spec[ik].clone())
        return observation_spec

    return per_key


class Transform(nn.Module):
    """Base class: map observations (and rewards, done flags, actions) of an env.

    Args:
        in_keys: entries read.
        out_keys: entries written (default: ``in_keys``).
        in_keys_inv: input entries (e.g. actions) read by the inverse transform.
        out_keys_inv: entries written by the inverse transform.
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__()
        self.in_keys = _keys(in_keys)
        self.out_keys = _keys(out_keys, self.in_keys)
        self.in_keys_inv = _keys(in_keys_inv)
        self.out_keys_inv = _keys(out_keys_inv, self.in_keys_inv)
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(
                f"{type(self).__name__}: in_keys {self.in_keys} and out_keys {self.out_keys} "
                "must have the same length."
            )
        self.__dict__["_container"] = None

    # --- whole batches (TransformedEnv.rollout_batch) -----------------------------------------
    #: The transform can be replayed on a whole batch after the base env's array rollout
    #: (:meth:`_batch_carry` then :meth:`_batch_step`), so the env keeps its fast path. Only
    #: for transforms that leave the observation alone and whose outputs the policy does not
    #: read (they are added to the batch afterwards).
    batch_rollout = False

    def _batch_carry(self, tensordict: TensorDictBase) -> Any:
        """What this transform keeps in the policy input before a batch (its state)."""
        raise NotImplementedError

    def _batch_step(self, batch: TensorDictBase, carry: Any, next_input: TensorDictBase) -> None:
        """Write this transform's entries into a ``[*B, T]`` batch and the next input."""
        raise NotImplementedError

    def _rollout_observation_step(self, observation_key: Key, batch_dims: int) -> Any:
        """For a transform that maps the base env's observation (and nothing else) one step
        at a time, e.g. a running normaliser: a function of the observation tensor that the
        base env's array rollout calls wherever this transform's ``_step``/``_reset`` would
        see that observation, in the same order. None (the default): not supported."""
        return None

    # --- per-entry maths ---------------------------------------------------------------------
    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Transform the ``in_keys`` of an output TensorDict (observations)."""
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = tensordict.get(ik, None)
            if value is None:
                raise _missing(tensordict, ik, type(self).__name__)
            tensordict.set(ok, self._apply_transform(value))
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(ik, None)
            if value is not None:
                tensordict.set(ok, self._inv_apply_transform(value))
        return tensordict

    # --- env hooks ---------------------------------------------------------------------------
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Process the ``"next"`` output of a step (``tensordict`` is the step input)."""
        return self._call(next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """Process the output of a reset (``tensordict`` holds the optional ``"_reset"``)."""
        return self._call(tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Apply the transform to a TensorDict directly (e.g. a sampled batch)."""
        return self._call(tensordict)

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Inverse transform of a step input (actions)."""
        return self._inv_call(tensordict)

    # --- specs -------------------------------------------------------------------------------
    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """Update the observation spec (default: unchanged)."""
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        """Update the reward spec (a Composite holding ``"reward"``)."""
        return reward_spec

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        """Update the done spec."""
        return done_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        """Update the action spec (a Composite holding ``"action"``)."""
        return action_spec

    # --- container ---------------------------------------------------------------------------
    def set_container(self, container: TransformedEnv | Compose | None) -> None:
        """Attach to a TransformedEnv or Compose (a transform belongs to one env)."""
        self.__dict__["_container"] = container

    @property
    def container(self) -> TransformedEnv | Compose | None:
        """The TransformedEnv or Compose holding this transform."""
        return self.__dict__["_container"]

    @property
    def parent(self) -> EnvBase | None:
        """The env as seen by this transform: the base env plus the transforms before it."""
        container = self.container
        if container is None:
            return None
        if isinstance(container, TransformedEnv):
            return container.base_env
        previous: list[Transform] = []
        for t in container.transforms:
            if t is self:
                break
            previous.append(t)
        outer = container.parent
        if outer is None:
            return None
        if not previous:
            return outer
        view = TransformedEnv(outer, Compose(*previous, _attach=False), _attach=False)
        view.is_closed = True  # a view: collecting it must not close the shared base env
        return view

    def reset_parent(self) -> None:
        """Recompute the specs of the env this transform belongs to."""
        env = self._env()
        if env is not None:
            env._update_specs()

    def clone(self) -> Transform:
        """A deep copy (own state and statistics) attached to no env, as torchrl's."""
        container = self.__dict__["_container"]
        self.__dict__["_container"] = None
        try:
            return copy.deepcopy(self)
        finally:
            self.__dict__["_container"] = container

    def _env(self) -> TransformedEnv | None:
        c = self.container
        while isinstance(c, Compose):
            c = c.container
        return c

    def __repr__(self) -> str:
        return f"{type(self).__name__}(in_keys={self.in_keys}, out_keys={self.out_keys})"


class Compose(Transform):
    """A sequence of transforms applied in order.

    Args:
        *transforms: the transforms.
    """

    def __init__(self, *transforms: Transform, _attach: bool = True) -> None:
        super().__init__()
        if len(transforms) == 1 and isinstance(transforms[0], list | tuple):
            transforms = tuple(transforms[0])
        for t in transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"Compose takes Transforms, got {type(t).__name__}.")
        self.transforms = nn.ModuleList(transforms)
        if _attach:
            for t in transforms:
                t.set_container(self)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t._call(tensordict)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t(tensordict)
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in reversed(self.transforms):
            tensordict = t.inv(tensordict)
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for t in self.transforms:
            observation_spec = t.transform_observation_spec(observation_spec)
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        for t in self.transforms:
            reward_spec = t.transform_reward_spec(reward_spec)
        return reward_spec

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        for t in self.transforms:
            done_spec = t.transform_done_spec(done_spec)
        return done_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        for t in reversed(self.transforms):
            action_spec = t.transform_action_spec(action_spec)
        return action_spec

    def __getitem__(self, item: int | slice) -> Transform:
        if isinstance(item, slice):
            return Compose(*self.transforms[item], _attach=False)
        return self.transforms[item]

    def __len__(self) -> int:
        return len(self.transforms)

    def __iter__(self):  # noqa: ANN204
        return iter(self.transforms)

    def dump(self, **kwargs: Any) -> None:
        """Call ``dump(**kwargs)`` on the members that have one (recorders), so
        ``env.transform.dump()`` works with several transforms, as in torchrl."""
        for transform in self.transforms:
            dump = getattr(transform, "dump", None)
            if callable(dump):
                dump(**kwargs)

    def append(self, transform: Transform) -> None:
        """Add a transform at the end."""
        transform.set_container(self)
        self.transforms.append(transform)
        self.reset_parent()

    def insert(self, index: int, transform: Transform) -> None:
        """Insert a transform at ``index``."""
        transform.set_container(self)
        self.transforms.insert(index, transform)
        self.reset_parent()

    @property
    def parent(self) -> EnvBase | None:
        container = self.container
        if container is None:
            return None
        if isinstance(container, TransformedEnv):
            return container.base_env
        return Transform.parent.fget(self)

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(t) for t in self.transforms)
        return f"Compose(\n    {inner})"


class TransformedEnv(EnvBase):
    """An env whose outputs go through a transform.

    Args:
        env: the base env.
        transform: a Transform (or Compose); None for an empty Compose.
        device: unused (the base env's device is used).

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(StepCounter(50), RewardSum()))
    """

    def __init__(
        self,
        env: EnvBase,
        transform: Transform | None = None,
        device: Any = None,
        _attach: bool = True,
    ) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv wraps an EnvBase, got {type(env).__name__}.")
        super().__init__(device=env.device, batch_size=env.batch_size)
        self.base_env = env
        self._transform = Compose() if transform is None else transform
        if not isinstance(self._transform, Transform):
            raise TypeError(f"transform must be a Transform, got {type(transform).__name__}.")
        if _attach:
            self._transform.set_container(self)
        self._update_specs()

    @property
    def batch_locked(self) -> bool:
        """The base env's ``batch_locked``."""
        return self.base_env.batch_locked

    @property
    def transform(self) -> Transform:
        """The transform (a Compose when several were given)."""
        return self._transform

    @transform.setter
    def transform(self, transform: Transform) -> None:
        transform.set_container(self)
        self._transform = transform
        self._update_specs()

    def append_transform(self, transform: Transform) -> TransformedEnv:
        """Add a transform after the existing ones."""
        if not isinstance(self._transform, Compose):
            self._transform = Compose(self._transform)
            self._transform.set_container(self)
        self._transform.append(transform)
        return self

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        """Insert a transform at ``index``."""
        if not isinstance(self._transform, Compose):
            self._transform = Compose(self._transform)
            self._transform.set_container(self)
        self._transform.insert(index, transform)
        return self

    def _update_specs(self) -> None:
        base = self.base_env
        t = self._transform
        self.full_observation_spec = t.transform_observation_spec(
            base.full_observation_spec.clone()
        )
        self.full_reward_spec = t.transform_reward_spec(base.full_reward_spec.clone())
        self.full_done_spec = t.transform_done_spec(base.full_done_spec.clone())
        self.full_action_spec = t.transform_action_spec(base.full_action_spec.clone())
        self.full_state_spec = base.full_state_spec.clone()
        self._frame_skip = _find_frame_skip(t)

    # --- env methods -------------------------------------------------------------------------
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        td_in = self._transform.inv(tensordict.copy()) if self._has_inv() else tensordict
        next_td = complete_done_flags(self.base_env._step(td_in))
        for _ in range(self._frame_skip - 1):
            if bool(next_td.get("done").any()):
                break
            more = complete_done_flags(self.base_env._step(td_in))
            more.set("reward", more.get("reward") + next_td.get("reward"))
            next_td = more
        return self._transform._step(tensordict, next_td)

    def rollout_batch(
        self,
        tensordict: TensorDictBase,
        steps: int,
        policy: Any = None,
        acting: Any = None,
    ) -> tuple[TensorDictBase, TensorDictBase] | None:
        """The base env's ``rollout_batch`` with the transforms replayed on the whole batch.

        Only when every transform supports that: replayed on the whole batch afterwards
        (``Transform.batch_rollout``, e.g. :class:`RewardSum`, :class:`RewardNorm`) or
        applied to the observation at every step inside the base env's loop
        (``Transform._rollout_observation_step``, e.g. :class:`VecNorm`); otherwise None, and
        collectors step the env one step at a time. The policy sees the inputs without the
        replayed transforms' entries (the running return).
        """
        base_rollout = getattr(type(self.base_env), "rollout_batch", None)
        if base_rollout is None or type(tensordict) is not TensorDict:
            return None
        obs_key = getattr(self.base_env, "_root_key", "observation")
        replayed, observation_steps = [], []
        for t in self._transform_list():
            step = t._rollout_observation_step(obs_key, len(self.batch_size))
            if t.batch_rollout:
                replayed.append(t)
            elif step is not None:
                observation_steps.append(step)
            else:
                return None
        carries = [t._batch_carry(tensordict) for t in replayed]
        if any(c is None for carry in carries for c in carry):
            return None  # the input lacks a transform's entry: let the step loop report it
        owned = [key for t in replayed for key in t.out_keys]
        out = base_rollout(
            self.base_env, tensordict.exclude(*owned), steps, policy, acting, observation_steps
        )
        if out is None:
            return None
        batch, next_input = out
        for transform, carry in zip(replayed, carries, strict=True):
            transform._batch_step(batch, carry, next_input)
        return batch, next_input

    def _transform_list(self) -> list[Transform]:
        """The transforms, in order (a Compose's members, or the single transform)."""
        if isinstance(self._transform, Compose):
            return list(self._transform.transforms)
        return [self._transform]

    def _has_inv(self) -> bool:
        return any(t.in_keys_inv for t in self._transform_list())

    def _reset(self, tensordict: TensorDictBase | None) -> TensorDictBase:
        out = self.base_env.reset(tensordict)
        if tensordict is None:
            tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        return self._transform._reset(tensordict, out)

    def _set_seed(self, seed: int | None) -> None:
        self.base_env._set_seed(seed)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seed the base env."""
        return self.base_env.set_seed(seed, static_seed)

    def state_dict(self) -> dict[str, Any]:
        """Transform statistics (ObservationNorm, VecNorm, ...) and the base env state."""
        out = {f"transform.{k}": v for k, v in self._transform.state_dict().items()}
        out.update({f"base_env.{k}": v for k, v in self.base_env.state_dict().items()})
        return out

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load what ``state_dict`` returned."""
        tsd = {k[10:]: v for k, v in state_dict.items() if k.startswith("transform.")}
        bsd = {k[9:]: v for k, v in state_dict.items() if k.startswith("base_env.")}
        self._transform.load_state_dict(tsd, strict=strict)
        self.base_env.load_state_dict(bsd, strict=strict)

    def close(self) -> None:
        """Close the base env."""
        self.is_closed = True
        self.base_env.close()

    def apply(self, fn: Any) -> TransformedEnv:
        """Call ``fn`` on every transform, the base env and this env (``nn.Module.apply``)."""
        self._transform.apply(fn)
        self.base_env.apply(fn)
        fn(self)
        return self

    def eval(self) -> TransformedEnv:
        """Put the transforms in eval mode."""
        self._transform.eval()
        return self

    def train(self, mode: bool = True) -> TransformedEnv:
        """Put the transforms in train mode."""
        self._transform.train(mode)
        return self

    def __getattr__(self, name: str) -> Any:
        # reach base-env attributes (e.g. env_name, num_envs) as torchrl does
        base = self.__dict__.get("base_env")
        if name.startswith("_") or base is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}.")
        return getattr(base, name)

    def __repr__(self) -> str:
        return f"TransformedEnv(\n  env={self.base_env!r},\n  transform={self._transform!r})"


def _find_frame_skip(t: Transform) -> int:
    if isinstance(t, FrameSkipTransform):
        return t.frame_skip
    if isinstance(t, Compose):
        k = 1
        for sub in t.transforms:
            k *= _find_frame_skip(sub)
        return k
    return 1


# --- counters and rewards --------------------------------------------------------------------
class StepCounter(Transform):
    """Count steps in ``"step_count"``; with ``max_steps`` set ``truncated`` when reached.

    Args:
        max_steps: episode length limit (None: count only).
        truncated_key: the truncated flag to set.
        step_count_key: the counter key.
        update_done: also set ``"done"`` where ``max_steps`` truncates (torchrl's default).
    """

    def __init__(
        self,
        max_steps: int | None = None,
        truncated_key: str = "truncated",
        step_count_key: str = "step_count",
        update_done: bool = True,
    ) -> None:
        if max_steps is not None and int(max_steps) < 1:
            raise ValueError(f"StepCounter: max_steps must be >= 1 or None, got {max_steps}.")
        super().__init__(in_keys=[], out_keys=[])
        self.max_steps = None if max_steps is None else int(max_steps)
        self.truncated_key = truncated_key
        self.step_count_key = step_count_key
        self.update_done = bool(update_done)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        zeros = torch.zeros(shape, dtype=torch.int64, device=tensordict_reset.device)
        prev = tensordict.get(self.step_count_key, None)
        mask = _reset_mask(tensordict, zeros)
        count = zeros if mask is None or prev is None else torch.where(mask, zeros, prev)
        tensordict_reset.set(self.step_count_key, count)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        prev = tensordict.get(self.step_count_key, None)
        if prev is None:
            raise KeyError(
                f"StepCounter: {self.step_count_key!r} missing from the step input; reset the "
                "env through the TransformedEnv before stepping."
            )
        count = prev + 1
        fast_set(next_tensordict, self.step_count_key, count)
        if self.max_steps is not None:
            hit = count >= self.max_steps
            trunc = next_tensordict.get(self.truncated_key) | hit
            fast_set(next_tensordict, self.truncated_key, trunc)
            if self.update_done:
                fast_set(next_tensordict, "done", next_tensordict.get("done") | trunc)
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        bs = observation_spec.shape
        observation_spec[self.step_count_key] = Bounded(
            0,
            self.max_steps if self.max_steps is not None else torch.iinfo(torch.int64).max,
            shape=(*bs, 1),
            dtype=torch.int64,
            device=observation_spec.device,
        )
        return observation_spec


class RewardSum(Transform):
    """Running episode return in ``"episode_reward"`` (reset to 0 at episode start).

    Args:
        in_keys: reward keys.
        out_keys: return keys.
        reset_keys: torchrl's per-done-level reset keys; only ``"_reset"`` (or ``None``)
            exists for the single-agent envs here.
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        reset_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        if reset_keys is not None and _keys(reset_keys, []) != ["_reset"] * len(
            _keys(reset_keys, [])
        ):
            raise ValueError(
                f"RewardSum: reset_keys={reset_keys!r} is not supported; only '_reset' "
                "(single-agent envs)."
            )
        in_keys = _keys(in_keys, ["reward"])
        super().__init__(in_keys, _keys(out_keys, ["episode_reward"] * len(in_keys)))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        for ok in self.out_keys:
            zeros = torch.zeros(shape, dtype=torch.float32, device=tensordict_reset.device)
            prev = tensordict.get(ok, None)
            mask = _reset_mask(tensordict, zeros)
            value = zeros if mask is None or prev is None else torch.where(mask, zeros, prev)
            tensordict_reset.set(ok, value)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            reward = next_tensordict.get(ik)
            prev = tensordict.get(ok, None)
            total = reward if prev is None else prev + reward
            fast_set(next_tensordict, ok, total)
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        bs = observation_spec.shape
        for ok in self.out_keys:
            observation_spec[ok] = Unbounded(shape=(*bs, 1), device=observation_spec.device)
        return observation_spec

    batch_rollout = True

    def _batch_carry(self, tensordict: TensorDictBase) -> list[torch.Tensor | None]:
        return [tensordict.get(ok, None) for ok in self.out_keys]

    def _batch_step(
        self, batch: TensorDictBase, carry: list[torch.Tensor], next_input: TensorDictBase
    ) -> None:
        nxt = batch.get("next")
        done = nxt.get("done").numpy()
        for ik, ok, start in zip(self.in_keys, self.out_keys, carry, strict=True):
            running, totals, last = _episode_returns(start.numpy(), nxt.get(ik).numpy(), done)
            batch.set(ok, torch.from_numpy(running))
            nxt.set(ok, torch.from_numpy(totals))
            next_input.set(ok, torch.from_numpy(last))


def _episode_returns(start: np.ndarray, reward: np.ndarray, done: np.ndarray) -> tuple:
    """RewardSum over a ``[*B, T, 1]`` batch, step by step as the transform adds them.

    Returns the running return in each step's input, after each step, and after the batch
    (what the next input carries: 0 where the last step ended an episode).
    """
    running, totals = np.empty_like(reward), np.empty_like(reward)
    current = start.copy()
    for t in range(reward.shape[-2]):
        running[..., t, :] = current
        total = current + reward[..., t, :]
        totals[..., t, :] = total
        current = np.where(done[..., t, :], np.zeros_like(total), total)
    return running, totals, current


class RewardScaling(Transform):
    """Affine reward transform: ``r * scale + loc`` (or ``(r - loc) / scale``).

    Args:
        loc: offset.
        scale: scale.
        in_keys: reward keys.
        out_keys: where the scaled rewards go (default: in place).
        standard_normal: use ``(r - loc) / scale``.
    """

    def __init__(
        self,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        standard_normal: bool = False,
    ) -> None:
        super().__init__(_keys(in_keys, ["reward"]), out_keys)
        self.register_buffer("loc", torch.as_tensor(loc, dtype=torch.float32))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))
        if bool((self.scale == 0).any()) and standard_normal:
            raise ValueError("RewardScaling: scale must be non-zero with standard_normal=True.")
        self.standard_normal = standard_normal

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if self.standard_normal:
            return (reward - self.loc) / self.scale
        return reward * self.scale + self.loc

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ok != ik:
                reward_spec[ok] = reward_spec[ik].clone()
        return reward_spec


# --- normalisation ---------------------------------------------------------------------------
class ObservationNorm(Transform):
    """Affine observation normalisation with fixed ``loc``/``scale``.

    ``standard_normal=True``: ``(x - loc) / scale``; otherwise ``x * scale + loc``.
    ``init_stats`` estimates them from random rollouts of the parent env.

    Args:
        loc: location (None until ``init_stats``).
        scale: scale (None until ``init_stats``).
        in_keys: observation keys (default ``["observation"]``).
        out_keys: output keys.
        standard_normal: see above.
        eps: floor of ``scale`` in ``init_stats``.
    """

    def __init__(
        self,
        loc: float | torch.Tensor | None = None,
        scale: float | torch.Tensor | None = None,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        standard_normal: bool | torch.Tensor = False,
        eps: float = 1e-6,
    ) -> None:
        super().__init__(_keys(in_keys, ["observation"]), out_keys)
        self.eps = eps
        # a buffer, so that ``ObservationNorm(**other.state_dict())`` rebuilds the same maths
        self.register_buffer("standard_normal", torch.tensor(bool(standard_normal)))
        self.register_buffer(
            "loc", None if loc is None else torch.as_tensor(loc, dtype=torch.float32)
        )
        self.register_buffer(
            "scale", None if scale is None else torch.as_tensor(scale, dtype=torch.float32)
        )

    @property
    def initialized(self) -> bool:
        """Whether ``loc`` and ``scale`` are set."""
        return self.loc is not None and self.scale is not None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN202
        for name in ("loc", "scale"):
            if prefix + name in state_dict and getattr(self, name) is None:
                setattr(self, name, torch.empty_like(state_dict[prefix + name]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if not self.initialized:
            raise RuntimeError(
                "ObservationNorm has no loc/scale: pass them or call init_stats() first."
            )
        if bool(self.standard_normal):
            return (obs - self.loc) / self.scale
        return obs * self.scale + self.loc

    def init_stats(
        self,
        num_iter: int,
        reduce_dim: int | Sequence[int] = 0,
        cat_dim: int | None = None,
        key: Key | None = None,
        keep_dims: Sequence[int] | None = None,
    ) -> None:
        """Estimate ``loc``/``scale`` from random rollouts of the parent env.

        Args:
            num_iter: number of steps to collect (at least).
            reduce_dim: dims of the collected data to average over.
            cat_dim: dim along which rollouts are concatenated (default ``reduce_dim``).
            key: observation key (default: the first in_key).
            keep_dims: reduced dims kept with size 1 (must be part of ``reduce_dim``).
        """
        if self.initialized:
            raise RuntimeError("ObservationNorm: loc and scale are already set.")
        parent = self.parent
        if parent is None:
            raise RuntimeError("ObservationNorm.init_stats needs the transform inside an env.")
        key = self.in_keys[0] if key is None else key
        if cat_dim is None:
            if not isinstance(reduce_dim, int):
                raise ValueError("init_stats: give cat_dim when reduce_dim is a list.")
            cat_dim = reduce_dim
        reduce = [reduce_dim] if isinstance(reduce_dim, int) else list(reduce_dim)
        keep = list(keep_dims) if keep_dims is not None else []
        if any(k not in reduce for k in keep):
            raise ValueError(f"keep_dims {keep} must be part of reduce_dim {reduce}.")
        data, n = [], 0
        while n < num_iter:
            td = parent.rollout(max_steps=num_iter - n, break_when_any_done=False)
            if key not in td.keys(True, True):
                raise _missing(td, key, "ObservationNorm.init_stats")
            data.append(td.get(key).float())
            n += td.shape[-1]
        x = torch.cat(data, cat_dim)
        loc = x.mean(reduce, keepdim=True)
        scale = x.std(reduce, keepdim=True).clamp_min(self.eps)
        for d in sorted((r % x.ndim for r in reduce if r not in keep), reverse=True):
            loc, scale = loc.squeeze(d), scale.squeeze(d)
        if not bool(self.standard_normal):
            loc, scale = -loc / scale, 1.0 / scale
        self.loc, self.scale = loc, scale

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            observation_spec[ok] = Unbounded(
                shape=spec.shape, dtype=torch.float32, device=observation_spec.device
            )
        return observation_spec

    def __repr__(self) -> str:
        shape = None if self.loc is None else tuple(self.loc.shape)
        return f"ObservationNorm(in_keys={self.in_keys}, loc_shape={shape})"


class RunningStatistics(Transform):
    """A transform whose statistics are learned while the env runs (``VecNorm``,
    ``RewardNorm``): ``frozen`` stops their updates, ``frozen_copy()`` gives an evaluation
    env a copy that no longer moves."""

    frozen: bool = False

    def freeze(self) -> RunningStatistics:
        """Stop updating the statistics (they are still applied)."""
        self.frozen = True
        return self

    def unfreeze(self) -> RunningStatistics:
        """Resume updating the statistics."""
        self.frozen = False
        return self

    def frozen_copy(self) -> RunningStatistics:
        """A frozen copy (statistics copied, not shared), detached from this one's env."""
        container = self.container
        self.set_container(None)
        try:
            out = copy.deepcopy(self)
        finally:
            self.set_container(container)
        return out.freeze()

    # --- one set of statistics over several copies (collector workers) --------------------
    # Each worker process's env holds its own copy. After a batch, every worker sends
    # ``statistics_update()``; one copy in the collector's process (the "hub") folds them in
    # with ``merge_updates_``; every worker then takes the hub's ``statistics()`` with
    # ``load_statistics_``, so all copies normalise the next batch alike.

    def statistics_update(self) -> dict[str, torch.Tensor]:
        """What this copy has to contribute to the shared statistics."""
        raise NotImplementedError

    def merge_updates_(self, updates: dict[int, dict[str, torch.Tensor]]) -> None:
        """Fold the :meth:`statistics_update` results of the workers that sent one (worker
        index -> update) into this copy (the hub)."""
        raise NotImplementedError

    def statistics(self) -> dict[str, torch.Tensor]:
        """The statistics the workers take from the hub (:meth:`load_statistics_`)."""
        raise NotImplementedError

    @torch.no_grad()
    def load_statistics_(self, statistics: dict[str, torch.Tensor]) -> None:
        """Take the hub's statistics (per-sub-env state, if any, is kept)."""
        for name, value in statistics.items():
            if getattr(self, name) is None:  # a lazily shaped buffer not made yet
                setattr(self, name, value.clone())
            else:
                getattr(self, name).copy_(value)


def running_statistics(env: Any) -> list[RunningStatistics]:
    """The :class:`RunningStatistics` transforms (``VecNorm``, ``RewardNorm``) of ``env``'s
    own transform (``[]`` for an env without one, or ``None``)."""
    transform = getattr(env, "transform", None)
    if transform is None:
        return []
    transforms = list(transform) if hasattr(transform, "__iter__") else [transform]
    return [t for t in transforms if isinstance(t, RunningStatistics)]


class VecNorm(RunningStatistics):
    """Running observation normalisation: ``(x - mean) / std`` over the observations seen.

    The statistics are running sums of ``x``, ``x * x`` and the count, in float64, each
    multiplied by ``decay`` before an update: ``decay=1`` keeps the exact mean and variance
    of every observation seen (Stable-Baselines3's ``VecNormalize``, what the app's
    ``env.normalize_observations`` builds); ``decay < 1`` weighs recent observations more
    (about the last ``1 / (1 - decay)`` of them). The normalised observation is float32,
    clipped to ``[-clip, clip]`` when ``clip`` is set.

    Statistics are buffers (in ``state_dict``); ``freeze()`` stops updates and
    ``frozen_copy()`` returns a frozen copy for evaluation envs.

    Args:
        in_keys: observation keys (default ``["observation"]``).
        out_keys: output keys.
        decay: decay of the running sums per update, in ``(0, 1]``.
        eps: floor of the variance.
        clip: normalised observations are clipped to ``[-clip, clip]`` (None: not clipped).
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        decay: float = 0.9999,
        eps: float = 1e-4,
        clip: float | None = None,
    ) -> None:
        super().__init__(_keys(in_keys, ["observation"]), out_keys)
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"VecNorm: decay must be in (0, 1], got {decay}.")
        if clip is not None and not clip > 0.0:
            raise ValueError(f"VecNorm: clip must be positive or None, got {clip}.")
        self.decay = decay
        self.eps = eps
        self.clip = clip
        self.frozen = False
        #: as a collector's hub (``merge_updates_``): each worker's latest decayed sums
        self._worker_sums: dict[int, dict[str, torch.Tensor]] = {}
        for i in range(len(self.in_keys)):
            self.register_buffer(f"sum_{i}", None)
            self.register_buffer(f"ssq_{i}", None)
            self.register_buffer(f"count_{i}", None)

    def _init_stats(self, i: int, shape: torch.Size) -> None:
        setattr(self, f"sum_{i}", torch.zeros(shape, dtype=torch.float64))
        setattr(self, f"ssq_{i}", torch.zeros(shape, dtype=torch.float64))
        setattr(self, f"count_{i}", torch.zeros((), dtype=torch.float64))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN202
        for i in range(len(self.in_keys)):
            k = f"{prefix}sum_{i}"
            if k in state_dict and getattr(self, f"sum_{i}") is None:
                self._init_stats(i, state_dict[k].shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        n = len(observation_spec.shape)
        for i, (ik, ok) in enumerate(zip(self.in_keys, self.out_keys)):
            spec = observation_spec[ik]
            if getattr(self, f"sum_{i}") is None:
                self._init_stats(i, spec.shape[n:])
            observation_spec[ok] = Unbounded(
                shape=spec.shape, dtype=torch.float32, device=observation_spec.device
            )
        return observation_spec

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for i, (ik, ok) in enumerate(zip(self.in_keys, self.out_keys)):
            x = tensordict.get(ik, None)
            if x is None:
                raise _missing(tensordict, ik, "VecNorm")
            tensordict.set(ok, self._update_and_normalize(i, x, tensordict.batch_dims))
        return tensordict

    def _update_and_normalize(self, i: int, x: torch.Tensor, batch_dims: int) -> torch.Tensor:
        """Fold ``x`` (``[*batch, *shape]``) into the statistics of key ``i`` (unless
        frozen) and return it normalised by them (float32)."""
        buffers = self._buffers
        s = buffers[f"sum_{i}"]
        if s is None:
            self._init_stats(i, x.shape[batch_dims:])
            s = buffers[f"sum_{i}"]
        q, c = buffers[f"ssq_{i}"], buffers[f"count_{i}"]
        if x.device.type == "cpu" and s.device.type == "cpu" and fast.VECNORM_ON_HOST:
            # the fast path: the same float64 maths in numpy, on views of the buffers
            out = host_update_and_normalize(
                x.numpy(), (s, q, c), frozen=self.frozen, decay=self.decay, eps=self.eps,
                clip=self.clip,
            )  # fmt: skip
            return torch.from_numpy(out)
        x = x.to(s.dtype)
        if not self.frozen:
            dims = tuple(range(x.ndim - s.ndim))
            d = self.decay
            s.mul_(d).add_(x.sum(dims) if dims else x)
            q.mul_(d).add_((x * x).sum(dims) if dims else x * x)
            c.mul_(d).add_(float(x.shape[: x.ndim - s.ndim].numel()))
        mean = s / c.clamp_min(1e-8)
        var = (q / c.clamp_min(1e-8) - mean * mean).clamp_min(self.eps)
        out = (x - mean) / var.sqrt()
        if self.clip is not None:
            out = out.clamp(-self.clip, self.clip)
        return out.float()

    def _rollout_observation_step(self, observation_key: Key, batch_dims: int) -> Any:
        if list(self.in_keys) != [observation_key] or list(self.out_keys) != [observation_key]:
            return None
        return functools.partial(self._update_and_normalize, 0, batch_dims=batch_dims)

    def statistics(self) -> dict[str, torch.Tensor]:
        """The decayed sums (``sum_i``, ``ssq_i``, ``count_i``), copied."""
        return {n: b.clone() for n, b in self.named_buffers(recurse=False) if b is not None}

    statistics_update = statistics

    def load_statistics_(self, statistics: dict[str, torch.Tensor]) -> None:
        self._worker_sums = {}  # a hub starts over from these
        super().load_statistics_(statistics)

    def merge_updates_(self, updates: dict[int, dict[str, torch.Tensor]]) -> None:
        """The mean of every worker's latest decayed sums, as data-parallel ranks average
        theirs (an async collector's other workers count with the sums they last sent)."""
        self._worker_sums.update(updates)
        latest = list(self._worker_sums.values())
        means = {name: torch.stack([s[name] for s in latest]).mean(0) for name in latest[0]}
        super().load_statistics_(means)  # not this class's: the workers' sums are kept

    def mean_std(self, i: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """The current mean and std of key ``i`` (float64), as the normalisation uses them."""
        s, q, c = (getattr(self, f"{n}_{i}") for n in ("sum", "ssq", "count"))
        mean = s / c.clamp_min(1e-8)
        var = (q / c.clamp_min(1e-8) - mean * mean).clamp_min(self.eps)
        return mean, var.sqrt()

    def to_observation_norm(self) -> ObservationNorm:
        """An ObservationNorm with the current mean/std (first key, float32; ``clip`` is not
        kept)."""
        mean, std = self.mean_std(0)
        return ObservationNorm(
            loc=mean.float(), scale=std.float(), in_keys=self.in_keys[:1], standard_normal=True
        )


class DTypeCastTransform(Transform):
    """Cast entries from ``dtype_in`` to ``dtype_out`` (and step inputs back, the inverse).

    Keys:

    - ``in_keys`` given: those entries are cast (observations, rewards); no inverse unless
      ``in_keys_inv`` is given too.
    - ``in_keys`` None, inside an env: every observation and reward whose spec has
      ``dtype_in``, and (when ``in_keys_inv`` is None too) every action whose spec has
      ``dtype_in`` is cast back from ``dtype_out`` before the base env sees it. The keys are
      read from the specs (``transform.in_keys`` lists them then).
    - ``in_keys`` None, outside an env (e.g. a replay buffer's transform): ``forward`` casts
      every ``dtype_in`` entry it finds.

    Entries already of ``dtype_out`` are left as they are (a gymnasium float64 Box is a
    float32 spec here already); a spec of a third dtype under ``in_keys`` raises
    ``TypeError``.

    Args:
        dtype_in: the dtype of the env (or storage) side.
        dtype_out: the dtype seen outside (policies, losses).
        in_keys: entries cast to ``dtype_out``.
        out_keys: where the cast entries go (default: ``in_keys``).
        in_keys_inv: step inputs (e.g. ``"action"``) cast to ``dtype_in`` for the base env.
        out_keys_inv: their keys for the base env (default: ``in_keys_inv``).

    Example:
        >>> env = TransformedEnv(
        ...     GymEnv("Pendulum-v1"),
        ...     DTypeCastTransform(torch.float32, torch.float64, in_keys=["observation"]),
        ... )
        >>> env.rollout(3)["observation"].dtype
        torch.float64
    """

    def __init__(
        self,
        dtype_in: torch.dtype,
        dtype_out: torch.dtype,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
    ) -> None:
        name = type(self).__name__
        if in_keys is None and out_keys is not None:
            raise ValueError(
                f"{name}: out_keys needs in_keys (without them the entries cast are found at "
                "run time, in no set order)."
            )
        if in_keys_inv is None and out_keys_inv is not None:
            raise ValueError(f"{name}: out_keys_inv needs in_keys_inv.")
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.dtype_in, self.dtype_out = dtype_in, dtype_out
        self._auto = in_keys is None
        self._auto_inv = in_keys is None and in_keys_inv is None
        # keys read from the specs in automatic mode (observations, rewards), once in an env
        self._auto_keys: dict[str, list[Key]] | None = None

    # --- values ------------------------------------------------------------------------------
    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(self.dtype_out) if value.dtype == self.dtype_in else value

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(self.dtype_in)

    def _cast(self, tensordict: TensorDictBase, tolerant: bool) -> TensorDictBase:
        if self._auto and self._auto_keys is None:
            # no env: every dtype_in entry
            for key, value in list(tensordict.items(True, True)):
                if value.dtype == self.dtype_in:
                    tensordict.set(key, value.to(self.dtype_out))
            return tensordict
        for ik, ok in zip(self.in_keys, self.out_keys):
            value = tensordict.get(ik, None)
            if value is None:
                if tolerant or self._auto:
                    continue
                raise _missing(tensordict, ik, type(self).__name__)
            tensordict.set(ok, self._apply_transform(value))
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._cast(tensordict, tolerant=False)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._cast(tensordict_reset, tolerant=True)  # a reset has no reward

    # --- specs -------------------------------------------------------------------------------
    def _cast_spec(self, spec: TensorSpec, key: Key) -> TensorSpec:
        if spec.dtype == self.dtype_out:
            return spec.clone()
        if spec.dtype != self.dtype_in:
            raise TypeError(
                f"{type(self).__name__}: the spec of {key!r} has dtype {spec.dtype}, not "
                f"dtype_in={self.dtype_in}."
            )
        if isinstance(spec, Bounded):
            return Bounded(spec.low, spec.high, spec.shape, spec.device, self.dtype_out)
        new = spec.clone()
        new.dtype = self.dtype_out
        return new

    def _resolve(self, kind: str, composite: Composite) -> None:
        """Automatic mode: the ``kind`` entries of ``dtype_in`` become keys."""
        found = self._auto_keys or {}
        found[kind] = [k for k, s in composite.items(True, True) if s.dtype == self.dtype_in]
        self._auto_keys = found
        self.in_keys = [*found.get("observation", []), *found.get("reward", [])]
        self.out_keys = list(self.in_keys)

    def _cast_specs(self, composite: Composite) -> Composite:
        keys = composite.keys(True, True)
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ik in keys:
                composite[ok] = self._cast_spec(composite[ik], ik)
        return composite

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        if self._auto:
            self._resolve("observation", observation_spec)
        return self._cast_specs(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        if self._auto:
            self._resolve("reward", reward_spec)
        return self._cast_specs(reward_spec)

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        if self._auto_inv:
            self.in_keys_inv = [
                k for k, s in action_spec.items(True, True) if s.dtype == self.dtype_in
            ]
            self.out_keys_inv = list(self.in_keys_inv)
        keys = action_spec.keys(True, True)
        # the outside key gets the cast spec of the base env's key
        for ik, ok in zip(self.in_keys_inv, self.out_keys_inv):
            if ok in keys:
                action_spec[ik] = self._cast_spec(action_spec[ok], ok)
        return action_spec

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dtype_in={self.dtype_in}, dtype_out={self.dtype_out}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys}, "
            f"in_keys_inv={self.in_keys_inv}, out_keys_inv={self.out_keys_inv})"
        )


class DoubleToFloat(DTypeCastTransform):
    """Cast float64 entries to float32 (and float32 step inputs back to float64): a
    :class:`DTypeCastTransform` from ``torch.float64`` to ``torch.float32``.

    Args:
        in_keys: entries cast (default: every float64 observation and reward).
        out_keys: where the cast entries go (default: ``in_keys``).
        in_keys_inv: step inputs cast from float32 to float64 before the base step
            (default: the float64 actions when ``in_keys`` is None too, else none).
        out_keys_inv: their keys for the base env (default: ``in_keys_inv``).
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        in_keys_inv: Key | Sequence[Key] | None = None,
        out_keys_inv: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(torch.float64, torch.float32, in_keys, out_keys, in_keys_inv, out_keys_inv)


# --- images ----------------------------------------------------------------------------------
def _image_spec(spec: TensorSpec, shape: torch.Size, low: float, high: float) -> Bounded:
    return Bounded(low, high, shape=shape, dtype=torch.float32, device=spec.device)


class ToTensorImage(Transform):
    """uint8 ``[..., H, W, C]`` -> float ``[..., C, H, W]`` in ``[0, 1]``.

    Args:
        from_int: divide by 255 (default: when the input is an integer tensor).
        unsqueeze: unused (torchrl compatibility).
        dtype: output dtype.
        in_keys: image keys (default ``["pixels"]``).
        out_keys: output keys.
        shape_tolerant: unused.
    """

    def __init__(
        self,
        from_int: bool | None = None,
        unsqueeze: bool = False,
        dtype: torch.dtype | None = None,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        shape_tolerant: bool = False,
    ) -> None:
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        self.from_int = from_int
        self.dtype = dtype or torch.float32

    def _apply_transform(self, img: torch.Tensor) -> torch.Tensor:
        from_int = self.from_int if self.from_int is not None else not img.is_floating_point()
        out = img.permute(*range(img.ndim - 3), -1, -3, -2).to(self.dtype)
        return out.div(255.0) if from_int else out

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            *lead, h, w, c = spec.shape
            observation_spec[ok] = _image_spec(spec, torch.Size([*lead, c, h, w]), 0.0, 1.0)
        return observation_spec


class GrayScale(Transform):
    """RGB ``[..., 3, H, W]`` -> luminance ``[..., 1, H, W]``.

    Args:
        in_keys: image keys (default ``["pixels"]``).
        out_keys: output keys.
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        self.register_buffer("weights", torch.tensor([0.2989, 0.587, 0.114]).view(3, 1, 1))

    def _apply_transform(self, img: torch.Tensor) -> torch.Tensor:
        if img.shape[-3] != 3:
            raise ValueError(
                f"GrayScale expects 3 channels at dim -3 (use ToTensorImage first), got shape "
                f"{tuple(img.shape)}."
            )
        return (img * self.weights.to(img.dtype)).sum(-3, keepdim=True)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            shape = torch.Size([*spec.shape[:-3], 1, *spec.shape[-2:]])
            observation_spec[ok] = _image_spec(spec, shape, 0.0, 1.0)
        return observation_spec


class Resize(Transform):
    """Resize images ``[..., C, H, W]`` to ``[..., C, w, h]`` (torchrl's argument order).

    Args:
        w: first spatial output size.
        h: second spatial output size (default ``w``).
        interpolation: ``"bilinear"``, ``"nearest"``, ``"bicubic"`` or ``"area"``.
        in_keys: image keys (default ``["pixels"]``).
        out_keys: output keys.
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        self.w, self.h = int(w), int(h if h is not None else w)
        allowed = ("bilinear", "nearest", "bicubic", "area")
        if interpolation not in allowed:
            raise ValueError(
                f"Resize: interpolation must be one of {allowed}, got {interpolation!r}."
            )
        self.interpolation = interpolation

    def _apply_transform(self, img: torch.Tensor) -> torch.Tensor:
        if img.ndim < 3:
            raise ValueError(f"Resize expects [..., C, H, W] images, got shape {tuple(img.shape)}.")
        lead = img.shape[:-3]
        x = img.reshape(-1, *img.shape[-3:])
        dtype = x.dtype
        if not x.is_floating_point():
            x = x.float()
        kw = {"align_corners": False} if self.interpolation in ("bilinear", "bicubic") else {}
        y = torch.nn.functional.interpolate(
            x, size=(self.w, self.h), mode=self.interpolation, antialias=False, **kw
        )
        if not dtype.is_floating_point:
            y = y.round().clamp(0, 255).to(dtype)
        return y.reshape(*lead, *y.shape[-3:])

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            shape = torch.Size([*spec.shape[:-2], self.w, self.h])
            if isinstance(spec, Bounded):
                low = float(spec.low.min())
                high = float(spec.high.max())
                observation_spec[ok] = Bounded(
                    low, high, shape=shape, dtype=spec.dtype, device=spec.device
                )
            else:
                observation_spec[ok] = Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)
        return observation_spec


class CatFrames(Transform):
    """Stack the last ``N`` observations along ``dim`` (first frames padded by repetition).

    Args:
        N: number of frames.
        dim: concatenation dim (negative, e.g. -3 for channels of ``[C, H, W]`` images).
        in_keys: keys (default ``["pixels"]``).
        out_keys: output keys.
        padding: ``"same"`` (repeat the reset frame) or ``"constant"`` (zeros).
    """

    def __init__(
        self,
        N: int,
        dim: int = -3,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        padding: str = "same",
    ) -> None:
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        if int(N) < 1:
            raise ValueError(f"CatFrames: N must be >= 1, got {N}.")
        if dim >= 0:
            raise ValueError(f"CatFrames: dim must be negative, got {dim}.")
        if padding not in ("same", "constant"):
            raise ValueError(f"CatFrames: padding must be 'same' or 'constant', got {padding!r}.")
        self.N, self.dim, self.padding = int(N), int(dim), padding
        self._buffers: dict[Key, torch.Tensor] = {}

    def _fresh(self, frame: torch.Tensor) -> torch.Tensor:
        if self.padding == "same":
            return torch.cat([frame] * self.N, self.dim)
        pad = [torch.zeros_like(frame)] * (self.N - 1)
        return torch.cat([*pad, frame], self.dim)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            frame = tensordict_reset.get(ik, None)
            if frame is None:
                raise _missing(tensordict_reset, ik, "CatFrames")
            fresh = self._fresh(frame)
            mask = _reset_mask(tensordict, fresh)
            buf = self._buffers.get(ik)
            if mask is not None and buf is not None and buf.shape == fresh.shape:
                fresh = torch.where(mask, fresh, buf)
            self._buffers[ik] = fresh
            tensordict_reset.set(ok, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            frame = next_tensordict.get(ik)
            buf = self._buffers.get(ik)
            if buf is None:
                raise RuntimeError("CatFrames: reset the env before stepping.")
            size = frame.shape[self.dim]
            stacked = torch.cat(
                [buf.narrow(self.dim, size, buf.shape[self.dim] - size), frame], self.dim
            )
            self._buffers[ik] = stacked
            fast_set(next_tensordict, ok, stacked)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stack frames of stored trajectories (a replay-buffer transform).

        ``tensordict``'s last batch dim is time; each step gets its ``N`` latest frames
        within its episode (episodes start at the first step and after ``("next", "done")``),
        padded as in an env. A ``("next", key)`` entry continues the frames of ``key``, so a
        sample matches what the env produced with the same transform.
        """
        if tensordict.batch_dims < 1:
            raise ValueError("CatFrames on a TensorDict needs a time dim (its last batch dim)")
        done = tensordict.get(("next", "done"), None)
        steps = tensordict.batch_size[-1]
        first = torch.zeros(tensordict.batch_size, dtype=torch.bool, device=tensordict.device)
        first[..., 0] = True
        if done is not None:
            first[..., 1:] |= done.reshape(tensordict.batch_size)[..., :-1].bool()
        positions = torch.arange(steps, device=tensordict.device).expand(tensordict.batch_size)
        start = torch.cummax(torch.where(first, positions, 0), dim=-1).values
        stacked = {}
        for ik, ok in zip(self.in_keys, self.out_keys):
            root_key = ik[1:] if isinstance(ik, tuple) and ik[0] == "next" else None
            if root_key is not None:
                root_key = root_key[0] if len(root_key) == 1 else root_key
            x = tensordict.get(ik, None)
            if x is None:
                raise _missing(tensordict, ik, "CatFrames")
            if root_key is not None and root_key in tensordict.keys(True, True):
                # the frames before a next frame are those of its step: shift them by one
                window = self._offline(tensordict.get(root_key), start, positions)
                window = torch.cat(
                    [
                        window.narrow(self._new_dim(x, tensordict), 1, self.N - 1),
                        x.unsqueeze(self._new_dim(x, tensordict)),
                    ],
                    self._new_dim(x, tensordict),
                )
            else:
                window = self._offline(x, start, positions)
            stacked[ok] = self._merge(window, x, tensordict)
        for ok, value in stacked.items():
            tensordict.set(ok, value)
        return tensordict

    def _new_dim(self, x: torch.Tensor, tensordict: TensorDictBase) -> int:
        """Where the N frames are stacked: right after the time dim."""
        return tensordict.batch_dims

    def _offline(
        self, x: torch.Tensor, start: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """``[*B, T, N, *F]``: frame ``t - N + 1 + k`` of ``x``, not before the episode start."""
        frames = []
        feat = x.ndim - positions.ndim
        for k in range(self.N):
            src = positions - (self.N - 1 - k)
            before = src < start
            idx = torch.where(before, start, src)
            gathered = torch.gather(
                x, positions.ndim - 1, idx.reshape(*idx.shape, *([1] * feat)).expand_as(x)
            )
            if self.padding == "constant":
                gathered = gathered * ~before.reshape(*before.shape, *([1] * feat))
            frames.append(gathered)
        return torch.stack(frames, positions.ndim)

    def _merge(
        self, window: torch.Tensor, x: torch.Tensor, tensordict: TensorDictBase
    ) -> torch.Tensor:
        """``[*B, T, N, *F]`` -> the env's layout: concatenated along ``dim`` of the frame
        (e.g. channels), or kept as a new dim when ``dim`` is just before the frame's dims."""
        feat = x.ndim - tensordict.batch_dims
        if -self.dim == feat + 1:
            return window
        if -self.dim > feat:
            raise ValueError(
                f"CatFrames: dim={self.dim} is out of range for entries with {feat} dims"
            )
        frames = window.unbind(tensordict.batch_dims)
        return torch.cat(frames, self.dim)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            shape = list(spec.shape)
            shape[self.dim] *= self.N
            if isinstance(spec, Bounded):
                new = Bounded(
                    float(spec.low.min()),
                    float(spec.high.max()),
                    shape=shape,
                    dtype=spec.dtype,
                    device=spec.device,
                )
            else:
                new = Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)
            observation_spec[ok] = new
        return observation_spec


# --- stepping --------------------------------------------------------------------------------
class FrameSkipTransform(Transform):
    """Repeat each action ``frame_skip`` times in the base env, summing rewards.

    Stops early when the (sub-)env is done. Prefer ``GymEnv(..., frame_skip=k)`` for batched
    envs: it skips per sub-env.

    Args:
        frame_skip: number of base steps per step.
    """

    def __init__(self, frame_skip: int = 1) -> None:
        super().__init__()
        if int(frame_skip) < 1:
            raise ValueError(f"frame_skip must be >= 1, got {frame_skip}.")
        self.frame_skip = int(frame_skip)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


class NoopResetEnv(Transform):
    """After each reset, play a random number (1..noops) of no-op actions (action 0).

    For an unbatched env or a batch of one sub-env (torchrl's batched env of one worker).

    Args:
        noops: maximum number of no-ops.
        random: draw the number uniformly; otherwise always ``noops``.
    """

    def __init__(self, noops: int = 30, random: bool = True) -> None:
        super().__init__()
        if int(noops) < 0:
            raise ValueError(f"noops must be >= 0, got {noops}.")
        self.noops, self.random = int(noops), random

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        parent = self.parent
        if parent is None or self.noops == 0:
            return tensordict_reset
        if parent.batch_size.numel() > 1:
            raise RuntimeError(
                "NoopResetEnv supports unbatched envs (or a batch of one) only: put it per "
                "sub-env, e.g. in each worker's env of a ParallelEnv"
            )
        n = int(torch.randint(1, self.noops + 1, ())) if self.random else self.noops
        td = tensordict_reset
        for _ in range(n):
            td.set("action", parent.action_spec.zero())
            td = parent.step(td)
            if bool(td.get(("next", "done")).any()):
                td = parent.reset()
            else:
                td = step_mdp(td)
        return td


class InitTracker(Transform):
    """Write ``"is_init"``: True on the first observation of an episode, else False.

    Args:
        init_key: the flag key.
    """

    def __init__(self, init_key: str = "is_init") -> None:
        super().__init__()
        self.init_key = init_key

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        ones = torch.ones(shape, dtype=torch.bool, device=tensordict_reset.device)
        mask = _reset_mask(tensordict, ones)
        tensordict_reset.set(self.init_key, ones if mask is None else mask.clone())
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        shape = (*next_tensordict.batch_size, 1)
        fast_set(
            next_tensordict,
            self.init_key,
            torch.zeros(shape, dtype=torch.bool, device=next_tensordict.device),
        )
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        from rl_trainers.envs.specs import Categorical

        bs = observation_spec.shape
        observation_spec[self.init_key] = Categorical(
            2, shape=(*bs, 1), dtype=torch.bool, device=observation_spec.device
        )
        return observation_spec


# torchrl defines these in envs/transforms/transforms.py too; here in sibling modules (which
# import this one), so they are reached lazily
_ELSEWHERE = {
    "TensorDictPrimer": "primer",
    "CatTensors": "keys",
    "ExcludeTransform": "keys",
    "SelectTransform": "keys",
    "RenameTransform": "keys",
    "UnsqueezeTransform": "shapes",
    "SqueezeTransform": "shapes",
    "PermuteTransform": "shapes",
    "FlattenObservation": "shapes",
    "ClipTransform": "values",
    "SignTransform": "values",
    "Crop": "crop",
    "CenterCrop": "crop",
    "RandomCropTensorDict": "crop",
    "TimeMaxPool": "pooling",
    "EndOfLifeTransform": "gym_transforms",
    "RewardClipping": "rewards",
    "BinarizeReward": "rewards",
    "TargetReturn": "rewards",
    "Reward2GoTransform": "rewards",
    "TrajCounter": "counters",
}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(f"rl_trainers.envs.transforms.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
