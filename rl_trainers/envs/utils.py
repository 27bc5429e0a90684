"""Helpers shared by environments, collectors and trainers.

``step_mdp`` moves the ``"next"`` entries of a transition to the root to make the input of the
next policy call. ``set_exploration_type``/``ExplorationType``/``exploration_type`` are aliases of
tensordict.nn's interaction type helpers (random vs deterministic acting).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, interaction_type, set_interaction_type

if TYPE_CHECKING:
    from rl_trainers.envs.common import EnvBase

__all__ = [
    "EnvCreator",
    "step_mdp",
    "set_exploration_type",
    "ExplorationType",
    "exploration_type",
    "check_env_specs",
    "new_td",
    "stack_steps",
    "flatten_batch",
    "fast_set",
    "DONE_KEYS",
    "RandomPolicy",
]

ExplorationType = InteractionType
set_exploration_type = set_interaction_type
exploration_type = interaction_type

DONE_KEYS = ("done", "terminated", "truncated")

_new_unsafe = getattr(TensorDict, "_new_unsafe", None)


def new_td(source: dict[str, Any], batch_size: torch.Size, device: Any = None) -> TensorDict:
    """Build a TensorDict from trusted tensors without per-entry validation (hot path).

    Args:
        source: mapping of keys to tensors (nested dicts allowed) of leading shape batch_size.
        batch_size: the batch size.
        device: the device, or None.
    """
    if _new_unsafe is not None:
        return _new_unsafe(source, batch_size=batch_size, device=device)
    return TensorDict(source, batch_size=batch_size, device=device)


def fast_set(tensordict: TensorDictBase, key: str, value: Any) -> TensorDictBase:
    """``tensordict.set(key, value)`` without validation for trusted values (hot path)."""
    if type(tensordict) is TensorDict:
        return tensordict._set_str(key, value, inplace=False, validated=True)
    return tensordict.set(key, value)


def stack_steps(steps: list[TensorDictBase], dim: int) -> TensorDictBase:
    """``torch.stack(steps, dim)`` for the per-step TensorDicts of a rollout.

    Plain TensorDicts with the same keys (what envs return) are stacked entry by entry from
    their underlying dicts, about twice as fast as tensordict's generic stack, which checks
    and dispatches per entry; anything else goes through ``torch.stack``.
    """
    first = steps[0]
    if type(first) is not TensorDict or any(type(td) is not TensorDict for td in steps):
        return torch.stack(steps, dim=dim)
    keys = first._tensordict.keys()
    if any(td._tensordict.keys() != keys for td in steps):
        return torch.stack(steps, dim=dim)  # raises with tensordict's own message
    entries: dict[str, Any] = {}
    for key, value in first._tensordict.items():
        column = [td._tensordict[key] for td in steps]
        if type(value) is TensorDict:
            entries[key] = stack_steps(column, dim)
        elif isinstance(value, torch.Tensor):
            entries[key] = torch.stack(column, dim=dim)
        else:
            return torch.stack(steps, dim=dim)
    batch_size = list(first.batch_size)
    batch_size.insert(dim, len(steps))
    return new_td(entries, torch.Size(batch_size), first.device)


def flatten_batch(tensordict: TensorDictBase, dims: int | None = None) -> TensorDictBase:
    """``tensordict.reshape(-1)``: the batch dimensions merged into one; with ``dims``, only
    the first ``dims`` of them (``tensordict.flatten(0, dims - 1)``), the others kept.

    Plain TensorDicts are reshaped entry by entry from their underlying dicts (several times
    faster for the one-step batches of off-policy collection); anything else goes through
    tensordict's ``reshape``.
    """
    batch_dims = tensordict.batch_dims
    dims = batch_dims if dims is None else dims
    batch_size = tensordict.batch_size
    shape = torch.Size([batch_size[:dims].numel(), *batch_size[dims:]])
    if type(tensordict) is not TensorDict:
        return tensordict.reshape(shape)
    entries: dict[str, Any] = {}
    for key, value in tensordict._tensordict.items():
        if type(value) is TensorDict and value.batch_dims == batch_dims:
            entries[key] = flatten_batch(value, dims)
        elif type(value) is torch.Tensor:
            entries[key] = value.reshape(*shape, *value.shape[batch_dims:])
        else:
            return tensordict.reshape(shape)
    return new_td(entries, shape, tensordict.device)


def step_mdp(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None = None,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: str | Sequence[str] = "reward",
    done_keys: str | Sequence[str] = DONE_KEYS,
    action_keys: str | Sequence[str] = "action",
) -> TensorDictBase:
    """Make the next policy input from a transition ``tensordict`` (with a ``"next"`` entry).

    The ``"next"`` entries go to the root (reward excluded by default); other root entries are
    kept (``keep_other``) except the action. The input is not modified.

    Args:
        tensordict: a transition holding ``"next"``.
        next_tensordict: optional output TensorDict to update in place.
        keep_other: keep root entries that are not overwritten by ``"next"`` ones.
        exclude_reward: drop the reward keys.
        exclude_done: drop the done keys.
        exclude_action: drop the action keys.
        reward_keys: reward key(s).
        done_keys: done key(s).
        action_keys: action key(s).

    Returns:
        A new TensorDict (or ``next_tensordict`` updated).
    """
    if isinstance(reward_keys, str):
        reward_keys = (reward_keys,)
    if isinstance(done_keys, str):
        done_keys = (done_keys,)
    if isinstance(action_keys, str):
        action_keys = (action_keys,)
    drop = set()
    if exclude_reward:
        drop.update(reward_keys)
    if exclude_done:
        drop.update(done_keys)
    root_drop = {"next", *drop}
    if exclude_action:
        root_drop.update(action_keys)
    nxt = tensordict.get("next")
    if type(tensordict) is TensorDict and type(nxt) is TensorDict:
        # hot path: read the underlying dicts directly (no per-entry validation needed)
        root_items, next_items = tensordict._tensordict.items(), nxt._tensordict.items()
    else:
        root_items, next_items = tensordict.items(), nxt.items()
    src: dict[str, Any] = {}
    if keep_other:
        for k, v in root_items:
            if k not in root_drop:
                src[k] = v
    for k, v in next_items:
        if k not in drop:
            src[k] = v
    if next_tensordict is not None:
        next_tensordict.update(src)
        return next_tensordict
    return new_td(src, tensordict.batch_size, tensordict.device)


def check_env_specs(
    env: EnvBase, return_contiguous: bool = True, check_dtype: bool = True, seed: int | None = None
) -> None:
    """Run a short random rollout and check every entry against the env's specs.

    Args:
        env: the environment.
        return_contiguous: kept for torchrl compatibility (ignored).
        check_dtype: also compare dtypes.
        seed: optional seed for ``env.set_seed``.

    Raises:
        AssertionError: naming the key whose shape, dtype or presence does not match.
    """
    if seed is not None:
        env.set_seed(seed)
    fake = env.fake_tensordict()
    real = env.rollout(3, break_when_any_done=False)
    real0 = real[..., 0]
    fake_keys = set(fake.keys(True, True))
    real_keys = set(real0.keys(True, True))
    missing = fake_keys - real_keys
    if missing:
        raise AssertionError(
            f"Keys {sorted(map(str, missing))} are in the specs but not in a rollout; "
            f"rollout keys: {sorted(map(str, real_keys))}."
        )
    extra = real_keys - fake_keys
    if extra:
        raise AssertionError(
            f"Keys {sorted(map(str, extra))} are in a rollout but not in the specs; "
            f"spec keys: {sorted(map(str, fake_keys))}."
        )
    for key in fake_keys:
        a, b = fake.get(key), real0.get(key)
        if a.shape != b.shape:
            raise AssertionError(
                f"Shape of {key!r} is {tuple(b.shape)} in a rollout but the specs say "
                f"{tuple(a.shape)}."
            )
        if check_dtype and a.dtype != b.dtype:
            raise AssertionError(
                f"Dtype of {key!r} is {b.dtype} in a rollout but the specs say {a.dtype}."
            )
    obs_spec = env.observation_spec
    for t in range(real.shape[-1]):
        step = real[..., t]
        for key in obs_spec.keys(True, True):
            spec = obs_spec[key]
            for where in (key, ("next", *((key,) if isinstance(key, str) else key))):
                if not spec.is_in(step.get(where)):
                    raise AssertionError(
                        f"Entry {where!r} of a rollout is not in its spec {spec!r}."
                    )


class EnvCreator:
    """An env factory: ``EnvCreator(fn, kwargs)()`` returns ``fn(**kwargs)``.

    Accepted wherever a ``create_env_fn`` is (``ParallelEnv``, collectors) so torchrl scripts
    run unchanged. Unlike torchrl's, it does not share transform statistics between the envs
    it makes: pass them explicitly (e.g. ``ObservationNorm(**state_dict)``).

    Args:
        create_env_fn: callable returning an env.
        create_env_kwargs: keyword arguments for ``create_env_fn``.
    """

    def __init__(self, create_env_fn: Any, create_env_kwargs: dict[str, Any] | None = None) -> None:
        if not callable(create_env_fn):
            raise TypeError(
                f"EnvCreator needs a callable returning an env, got {type(create_env_fn).__name__}."
            )
        self.create_env_fn = create_env_fn
        self.create_env_kwargs = dict(create_env_kwargs or {})

    def __call__(self, **kwargs: Any) -> Any:
        """Build one env (``kwargs`` override ``create_env_kwargs``)."""
        return self.create_env_fn(**{**self.create_env_kwargs, **kwargs})

    def __repr__(self) -> str:
        return f"EnvCreator({self.create_env_fn!r})"


class RandomPolicy:
    """A policy drawing uniform actions from a spec (what ``policy=None`` does in a collector).

    Args:
        action_spec: the env's ``action_spec`` (written under ``action_key``) or a Composite
            such as ``full_action_spec`` (written entry by entry).
        action_key: where a leaf spec's action goes.

    Example:
        >>> collector = SyncDataCollector(env, RandomPolicy(env.action_spec), frames_per_batch=10)
    """

    def __init__(self, action_spec: Any, action_key: str = "action") -> None:
        self.action_spec = action_spec
        self.action_key = action_key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self.action_spec.rand()
        if isinstance(action, TensorDictBase):
            return tensordict.update(action)
        return tensordict.set(self.action_key, action)
