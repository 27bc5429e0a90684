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


def _new_batched(cls: type, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``cls(...)``, or ``TransformedEnv(cls(n, base), transforms)`` when ``create_env_fn``
    returns a TransformedEnv over an unbatched GymEnv (see the module docstring)."""
    from rl_trainers.envs.libs.gym import GymEnv
    from rl_trainers.envs.transforms import TransformedEnv

    names = ("num_workers", "create_env_fn", "create_env_kwargs")
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


class SerialEnv(GymWrapper):
    """``num_workers`` copies of an env stepped in this process (gymnasium SyncVectorEnv).

    Args:
        num_workers: number of sub-envs.
        create_env_fn: callable returning a GymEnv or a gymnasium env.
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        categorical_action_encoding: Discrete actions as indices (gymnasium-env factories).
        device: tensor device.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:  # unpickling
            return object.__new__(cls)
        return _new_batched(cls, args, kwargs)

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., Any],
        create_env_kwargs: dict[str, Any] | None = None,
        categorical_action_encoding: bool | None = None,
        device: Any = "cpu",
    ) -> None:
        n = _check_workers(num_workers)
        factory, cat, pixels_only = _factory_and_options(create_env_fn, create_env_kwargs)
        if categorical_action_encoding is not None:
            cat = categorical_action_encoding
        env = gym.vector.SyncVectorEnv([factory] * n, copy=False, autoreset_mode=_SAME_STEP)
        self.num_workers = n
        self._init_from(env, cat, device, pixels_only)


class ParallelEnv(GymWrapper):
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
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:  # unpickling
            return object.__new__(cls)
        return _new_batched(cls, args, kwargs)

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
    ) -> None:
        n = _check_workers(num_workers)
        factory, cat, pixels_only = _factory_and_options(create_env_fn, create_env_kwargs)
        if categorical_action_encoding is not None:
            cat = categorical_action_encoding
        factory = StateAccessFactory(factory)  # checkpoints read the workers' env state
        self.num_workers = n
        self._vector_args = (factory, n, serial_for_single, shared_memory, mp_start_method)
        self._owner_pid = os.getpid()
        self._init_from(self._make_vector_env(), cat, device, pixels_only)
        # close the workers at interpreter exit before multiprocessing tears the pipes down
        # (otherwise an env nobody closed makes each worker print a BrokenPipe traceback)
        weakref.finalize(self, _close_vector_env, self._env, self._owner_pid)

    def _make_vector_env(self) -> gym.vector.VectorEnv:
        factory, n, serial_for_single, shared_memory, mp_start_method = self._vector_args
        if n == 1 and serial_for_single:
            return gym.vector.SyncVectorEnv([factory], copy=False, autoreset_mode=_SAME_STEP)
        return gym.vector.AsyncVectorEnv(
            [factory] * n,
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

    def _reset(self, tensordict: Any) -> Any:
        forked = self._owner_pid != os.getpid() and self._forked()
        if forked or self.is_closed:  # torchrl restarts a closed ParallelEnv at its next reset
            self._env = self._make_vector_env()
            self._owner_pid = os.getpid()
            self.is_closed = False
            weakref.finalize(self, _close_vector_env, self._env, self._owner_pid)
        return super()._reset(tensordict)

    def close(self) -> None:
        """Close the worker processes (a forked copy that never reset closes nothing)."""
        if self._owner_pid != os.getpid() and self._forked():
            self.is_closed = True
            return
        super().close()


def _close_vector_env(env: gym.vector.VectorEnv, owner_pid: int) -> None:
    if os.getpid() == owner_pid and not env.closed:
        try:
            env.close()
        except Exception:
            pass


def _factory_and_options(
    create_env_fn: Callable[..., Any], create_env_kwargs: dict[str, Any] | None
) -> tuple[Callable[[], gym.Env], bool, bool]:
    """Gym factory plus the GymEnv options (action encoding, pixels-only) it was built with."""
    if not callable(create_env_fn):
        raise TypeError(
            f"create_env_fn must be a callable returning an env, got {type(create_env_fn).__name__}."
        )
    factory = make_gym_factory(create_env_fn, **(create_env_kwargs or {}))
    cat = bool(getattr(factory, "categorical_action_encoding", False))
    pixels_only = bool(getattr(factory, "pixels_only", False))
    return factory, cat, pixels_only
