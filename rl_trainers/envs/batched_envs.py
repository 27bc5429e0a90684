"""Batched environments: ``SerialEnv`` (gymnasium SyncVectorEnv, one process) and
``ParallelEnv`` (gymnasium AsyncVectorEnv, one worker process per sub-env).

Both are ``GymWrapper``s of batch size ``(num_workers,)`` with ``AutoresetMode.SAME_STEP``.
``create_env_fn`` returns an unbatched ``GymEnv`` (its id and options are read to build the
workers) or a gymnasium env. A factory returning ``TransformedEnv(GymEnv(...), t)`` (as in
many torchrl scripts) gives ``TransformedEnv(ParallelEnv(n, base), t)``: the sub-envs run in
the workers and the transforms, which handle batches, run once on the batch in this process.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rl_trainers.envs.libs.gym import GymWrapper, make_gym_factory
from rl_trainers.envs.libs.gym_state import StateAccessFactory

__all__ = ["SerialEnv", "ParallelEnv"]

_SAME_STEP = gym.vector.AutoresetMode.SAME_STEP


def _check_workers(num_workers: int) -> int:
    if int(num_workers) < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}.")
    return int(num_workers)


def _collapse_per_worker(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """torchrl's per-worker lists (``ParallelEnv(3, [f, f, f], [kw, kw, kw])``) made into one
    ``create_env_fn`` and one ``create_env_kwargs`` when every worker gets the same ones;
    lists that differ are kept (each worker then gets its own factory)."""
    args, kwargs = list(args), dict(kwargs)
    for pos, name in ((1, "create_env_fn"), (2, "create_env_kwargs")):
        where, key = (kwargs, name) if name in kwargs else (args, pos)
        if isinstance(where, list) and len(where) <= key:
            continue
        value = where[key]
        if isinstance(value, list | tuple) and value and all(v == value[0] for v in value):
            where[key] = value[0]
    return tuple(args), kwargs


def _new_batched(cls: type, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``cls(...)``, or ``TransformedEnv(cls(n, base), transforms)`` when ``create_env_fn``
    returns a TransformedEnv over an unbatched GymEnv (see the module docstring)."""
    from rl_trainers.envs.libs.gym import GymEnv
    from rl_trainers.envs.transforms import TransformedEnv

    names = ("num_workers", "create_env_fn", "create_env_kwargs")
    args, kwargs = _collapse_per_worker(args, kwargs)
    bound = dict(zip(names, args, strict=False))
    fn, fn_kwargs = kwargs.get("create_env_fn", bound.get("create_env_fn")), None
    if len(args) > 2:
        fn_kwargs = args[2]
    fn_kwargs = kwargs.get("create_env_kwargs", fn_kwargs)
    if not callable(fn) or isinstance(fn, GymEnv | gym.Env):
        return object.__new__(cls)
    probe = fn(**(fn_kwargs or {}))
    if not isinstance(probe, TransformedEnv):
        probe.close()
        return object.__new__(cls)
    transforms, base = [], probe
    while isinstance(base, TransformedEnv):
        transforms.insert(0, base.transform)
        base = base.base_env
    if not isinstance(base, GymEnv) or base.batch_size:
        probe.close()
        return object.__new__(cls)  # __init__ explains what create_env_fn must return
    rest = dict(kwargs)
    rest.pop("create_env_fn", None)
    rest.pop("create_env_kwargs", None)
    num_workers = rest.pop("num_workers", args[0] if args else None)
    batched = cls(num_workers, base._factory, None, *args[3:], **rest)
    base.close()
    env = batched
    for transform in transforms:
        env = TransformedEnv(env, transform)
    return env


class _BatchedEnv(GymWrapper):
    """What SerialEnv and ParallelEnv share: construction from torchrl's arguments (a factory
    returning a TransformedEnv gives the transforms on the batch, see the module docstring)
    and the per-worker factories."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:  # unpickling
            return object.__new__(cls)
        return _new_batched(cls, args, kwargs)

    def _worker_factories(
        self,
        num_workers: int,
        create_env_fn: Callable[..., Any],
        create_env_kwargs: dict[str, Any] | None,
        categorical_action_encoding: bool | None,
    ) -> tuple[list[Callable[[], gym.Env]], bool, bool]:
        """Sets ``num_workers``; returns (one gym factory per worker, categorical action
        encoding, pixels only)."""
        self.num_workers = _check_workers(num_workers)
        factory, cat, pixels_only = _factory_and_options(create_env_fn, create_env_kwargs)
        if categorical_action_encoding is not None:
            cat = categorical_action_encoding
        return _per_worker(factory, self.num_workers), cat, pixels_only


class SerialEnv(_BatchedEnv):
    """``num_workers`` copies of an env stepped in this process (gymnasium SyncVectorEnv).

    Args:
        num_workers: number of sub-envs.
        create_env_fn: callable returning a GymEnv or a gymnasium env.
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        categorical_action_encoding: Discrete actions as indices (gymnasium-env factories).
        device: tensor device.
        pin_memory: accepted for torchrl compatibility (CPU tensors are not pinned).
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., Any],
        create_env_kwargs: dict[str, Any] | None = None,
        categorical_action_encoding: bool | None = None,
        device: Any = "cpu",
        pin_memory: bool = False,
    ) -> None:
        factories, cat, pixels_only = self._worker_factories(
            num_workers, create_env_fn, create_env_kwargs, categorical_action_encoding
        )
        env = gym.vector.SyncVectorEnv(factories, copy=False, autoreset_mode=_SAME_STEP)
        self._init_from(env, cat, device, pixels_only)


class ParallelEnv(_BatchedEnv):
    """``num_workers`` copies of an env in worker processes (gymnasium AsyncVectorEnv).

    Errors raised in a worker are re-raised here; ``close()`` shuts the workers down.

    Args:
        num_workers: number of sub-envs (and processes).
        create_env_fn: callable returning a GymEnv or a gymnasium env (picklable by
            cloudpickle, lambdas are fine).
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        categorical_action_encoding: Discrete actions as indices (gymnasium-env factories).
        device: tensor device.
        mp_start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"`` (platform default if None).
        shared_memory: pass observations through shared memory.
        serial_for_single: build a SerialEnv-like sync env when ``num_workers == 1``.
        pin_memory: accepted for torchrl compatibility (CPU tensors are not pinned).
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., Any],
        create_env_kwargs: dict[str, Any] | None = None,
        categorical_action_encoding: bool | None = None,
        device: Any = "cpu",
        mp_start_method: str | None = None,
        shared_memory: bool = True,
        serial_for_single: bool = False,
        pin_memory: bool = False,
    ) -> None:
        factories, cat, pixels_only = self._worker_factories(
            num_workers, create_env_fn, create_env_kwargs, categorical_action_encoding
        )
        factories = [StateAccessFactory(f) for f in factories]  # checkpoints read env state
        n = self.num_workers
        self._vector_args = (factories, n, serial_for_single, shared_memory, mp_start_method)
        self._owner_pid = os.getpid()
        self._init_from(self._make_vector_env(), cat, device, pixels_only)
        # close the workers at interpreter exit before multiprocessing tears the pipes down
        # (otherwise an env nobody closed makes each worker print a BrokenPipe traceback)
        weakref.finalize(self, _close_vector_env, self._env, self._owner_pid, True)

    def _make_vector_env(self) -> gym.vector.VectorEnv:
        factories, n, serial_for_single, shared_memory, mp_start_method = self._vector_args
        if n == 1 and serial_for_single:
            return gym.vector.SyncVectorEnv(factories, copy=False, autoreset_mode=_SAME_STEP)
        return gym.vector.AsyncVectorEnv(
            factories,
            shared_memory=shared_memory,
            copy=False,
            context=mp_start_method,
            autoreset_mode=_SAME_STEP,
        )

    def _forked(self) -> bool:
        """True in a process forked after construction (e.g. a collector worker).

        The inherited workers belong to the parent: a forked copy must neither talk to them
        nor close them, so it drops them and starts its own at its first reset. This lets one
        ParallelEnv instance be handed to several collector workers (``[env] * n``).
        """
        if self._owner_pid == os.getpid():
            return False
        self._env.closed = True  # abandon the parent's handle without closing its workers
        return True

    def start(self) -> None:
        """Start the workers (torchrl's explicit start). They start at construction, so this
        only restarts a closed env or the copy in a forked process."""
        forked = self._owner_pid != os.getpid() and self._forked()
        if forked or self.is_closed:
            self._env = self._make_vector_env()
            self._owner_pid = os.getpid()
            self.is_closed = False
            weakref.finalize(self, _close_vector_env, self._env, self._owner_pid, True)

    def _reset(self, tensordict: Any) -> Any:
        self.start()  # torchrl restarts a closed ParallelEnv at its next reset
        return super()._reset(tensordict)

    def close(self) -> None:
        """Close the worker processes (a forked copy that never reset closes nothing).

        A step cut short by Ctrl-C can leave a worker's reply unread; gymnasium's close would
        then wait for it forever. Pending replies get ``WORKER_CLOSE_TIMEOUT`` seconds, after
        which the workers are terminated.
        """
        if self._owner_pid != os.getpid() and self._forked():
            self.is_closed = True
            return
        if not self.is_closed:
            self.is_closed = True
            _close_vector_env(self._env, self._owner_pid)


def _per_worker(factory: Any, n: int) -> list[Callable[[], gym.Env]]:
    """``n`` factories: the given list (one per worker) or ``n`` times the one factory."""
    if isinstance(factory, list):
        if len(factory) != n:
            raise ValueError(f"got {len(factory)} env factories for {n} workers.")
        return factory
    return [factory] * n


#: Seconds :meth:`ParallelEnv.close` waits for a step or reset still pending in the workers.
WORKER_CLOSE_TIMEOUT = 5.0


def _close_vector_env(env: gym.vector.VectorEnv, owner_pid: int, quiet: bool = False) -> None:
    if os.getpid() != owner_pid or env.closed:
        return
    kwargs = {"timeout": WORKER_CLOSE_TIMEOUT} if isinstance(env, gym.vector.AsyncVectorEnv) else {}
    try:
        env.close(**kwargs)
    except Exception:
        if not quiet:
            raise


def _factory_and_options(
    create_env_fn: Callable[..., Any], create_env_kwargs: dict[str, Any] | None
) -> tuple[Callable[[], gym.Env], bool, bool]:
    """Gym factory plus the GymEnv options (action encoding, pixels-only) it was built with."""
    if isinstance(create_env_fn, list | tuple) or isinstance(create_env_kwargs, list | tuple):
        return _per_worker_factories(create_env_fn, create_env_kwargs)
    if not callable(create_env_fn):
        raise TypeError(
            f"create_env_fn must be a callable returning an env, got {type(create_env_fn).__name__}."
        )
    factory = make_gym_factory(create_env_fn, **(create_env_kwargs or {}))
    cat = bool(getattr(factory, "categorical_action_encoding", False))
    pixels_only = bool(getattr(factory, "pixels_only", False))
    return factory, cat, pixels_only


def _per_worker_factories(
    create_env_fn: Any, create_env_kwargs: Any
) -> tuple[list[Callable[[], gym.Env]], bool, bool]:
    """One gym factory per worker, from lists of functions and/or of keyword dicts."""
    fns = create_env_fn if isinstance(create_env_fn, list | tuple) else None
    kws = create_env_kwargs if isinstance(create_env_kwargs, list | tuple) else None
    n = len(fns if fns is not None else kws)
    if fns is not None and kws is not None and len(kws) != n:
        raise ValueError(f"got {n} create_env_fn but {len(kws)} create_env_kwargs.")
    options = [
        _factory_and_options(
            fns[i] if fns is not None else create_env_fn,
            kws[i] if kws is not None else create_env_kwargs,
        )
        for i in range(n)
    ]
    return [o[0] for o in options], options[0][1], options[0][2]
