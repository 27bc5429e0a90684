"""Capture and restore the internal state of gymnasium environments, for exact resume.

A checkpoint taken between two batches must let a new process continue every sub-env
exactly where it was: same physics state, same step count toward the time limit, same
random stream for the next reset. This module reads that state into plain data (numbers,
strings, numpy arrays, tuples; never pickled objects, since checkpoints are loaded with
``torch.load(weights_only=True)``) and writes it back into freshly built envs.

What is captured, per gymnasium sub-env:

- the env's random generator (``unwrapped.np_random``: its bit-generator state);
- every wrapper's plain attributes (e.g. ``TimeLimit._elapsed_steps``,
  ``OrderEnforcing._has_reset``);
- the unwrapped env's plain attributes (classic control's ``state``,
  ``steps_beyond_terminated``, ``last_u``...);
- for MuJoCo envs, every fixed-size numeric array of ``unwrapped.data`` (``qpos``,
  ``qvel``, ``act``, ``ctrl``, ``qacc_warmstart``, and the quantities derived at the last
  step such as ``xpos`` and ``cfrc_ext``, which envs read for their rewards) and ``time``.

Limits: an env whose state lives in other objects (Box2D worlds, emulators, custom
classes) cannot be captured generically; such an env may define ``get_state_dict()``
and ``set_state_dict(state)`` on its unwrapped class, otherwise :func:`get_env_state`
marks it unsupported and a resumed run resets it (with a warning). Sub-envs running in
worker processes (``AsyncVectorEnv``, i.e. ``env.vectorization=async``) are not captured
from the parent; with multi-process collectors the state is captured inside each worker.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import gymnasium as gym
import numpy as np

from rl_trainers.errors import EnvWarning

__all__ = ["get_env_state", "set_env_state", "get_gym_state", "set_gym_state"]

STATE_VERSION = 1
_SKIP_NAMES = frozenset(
    {
        "env",
        "screen",
        "clock",
        "viewer",
        "window",
        "renderer",
        "mujoco_renderer",
        "model",
        "data",
        "spec",
        "_np_random",
        "_previous_data",
        "_cached_spec",
        "render_mode",
    }
)
#: MjData arrays sized by the current contacts/constraints or holding pointers (not state).
_MJ_SKIP = frozenset({"contact", "buffer", "arena", "solver", "timer", "warning"})


class _Unsupported(Exception):
    """An attribute holds an object whose state cannot be captured generically."""


def _plain(value: Any, where: str) -> Any:
    if isinstance(value, np.generic):  # first: np.float64 and np.str_ are a float and a str
        return value.item()  # too, and a checkpoint loads with weights_only=True
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise _Unsupported(where)
        return value.copy()
    if isinstance(value, tuple | list):  # each as itself: a list the env appends to stays one
        items = [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise _Unsupported(where)


def _is_static(value: Any) -> bool:
    """Objects that hold configuration only (restored by building the env again)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "SU"  # text maps (e.g. FrozenLake's desc)
    static = gym.Space | dict | gym.envs.registration.EnvSpec | np.dtype | enum.Enum
    return isinstance(value, static) or callable(value)


def _attrs(obj: Any, owner: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in vars(obj).items():
        if name in _SKIP_NAMES or _is_static(value):
            continue
        try:
            out[name] = _plain(value, f"{owner}.{name}")
        except _Unsupported:
            if isinstance(value, tuple | list):
                continue  # e.g. a tuple of config objects; not dynamic state we know of
            raise
    return out


def _rng_state(rng: np.random.Generator | None) -> dict[str, Any] | None:
    if rng is None:
        return None
    state = rng.bit_generator.state
    return {"bit_generator": state["bit_generator"], "state": _nested_ints(state)}


def _nested_ints(d: Any) -> Any:
    """The bit-generator state with 128-bit integers kept as decimal strings."""
    if isinstance(d, dict):
        return {k: _nested_ints(v) for k, v in d.items()}
    if isinstance(d, bool):
        return d
    if isinstance(d, int | np.integer):
        return str(int(d))
    if isinstance(d, np.ndarray):
        return d.copy()
    return d


def _restore_ints(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _restore_ints(v) for k, v in d.items()}
    if isinstance(d, str) and d.lstrip("-").isdigit():
        return int(d)
    return d


def _make_rng(state: dict[str, Any] | None) -> np.random.Generator | None:
    if state is None:
        return None
    bit_gen = getattr(np.random, state["bit_generator"])()
    full = _restore_ints(state["state"])
    full["bit_generator"] = state["bit_generator"]
    bit_gen.state = full
    return np.random.Generator(bit_gen)


def _wrapper_chain(env: gym.Env) -> list[Any]:
    chain = []
    while isinstance(env, gym.Wrapper):
        chain.append(env)
        env = env.env
    chain.append(env)
    return chain


def _mujoco_arrays(data: Any) -> dict[str, np.ndarray]:
    """Every numeric array of an ``MjData`` whose size does not depend on the contacts.

    Beside the integration state (``qpos``, ``qvel``, ``act``, ``qacc_warmstart``...) this
    keeps the quantities derived at the last step (``xpos``, ``cfrc_ext``...), which envs
    read before stepping again (e.g. a body's position for the forward reward).
    """
    out = {}
    for name in dir(data):
        if name.startswith("_") or name.startswith("efc_") or name in _MJ_SKIP:
            continue
        try:
            value = getattr(data, name)
        except Exception:  # noqa: BLE001 - some properties raise for empty models
            continue
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.flags.writeable:
            out[name] = value.copy()
    return out


def _mujoco_state(data: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"arrays": _mujoco_arrays(data)}
    out["time"] = float(data.time)
    return out


def _set_mujoco_state(data: Any, state: dict[str, Any]) -> None:
    for name, value in state["arrays"].items():
        target = getattr(data, name, None)
        if isinstance(target, np.ndarray) and target.shape == value.shape:
            target[...] = value
    data.time = float(state["time"])


def get_gym_state(env: gym.Env) -> dict[str, Any]:
    """The internal state of one (non-vector) gymnasium env as plain data.

    Returns:
        ``{"supported": True, "classes": [...], "layers": [...], "np_random": ...,
        "mujoco": ... | None, "custom": ... | None}``, or ``{"supported": False,
        "reason": str}`` when some state cannot be captured.
    """
    chain = _wrapper_chain(env)
    unwrapped = chain[-1]
    classes = [type(layer).__qualname__ for layer in chain]
    try:
        custom = None
        getter = getattr(unwrapped, "get_state_dict", None)
        if callable(getter):
            custom = getter()
            layers = [_attrs(layer, type(layer).__name__) for layer in chain[:-1]] + [{}]
        else:
            layers = [_attrs(layer, type(layer).__name__) for layer in chain]
    except _Unsupported as err:
        return {
            "supported": False,
            "reason": f"{classes[-1]} keeps state in {err} (not a number or array)",
        }
    data = vars(unwrapped).get("data")
    mujoco = None
    if data is not None and custom is None:
        if type(data).__name__ != "MjData":
            return {"supported": False, "reason": f"{classes[-1]}.data is a {type(data).__name__}"}
        mujoco = _mujoco_state(data)
    return {
        "supported": True,
        "classes": classes,
        "layers": layers,
        "np_random": _rng_state(getattr(unwrapped, "_np_random", None)),
        "mujoco": mujoco,
        "custom": custom,
    }


def set_gym_state(env: gym.Env, state: dict[str, Any]) -> None:
    """Write a state from :func:`get_gym_state` into ``env`` (built the same way).

    Raises:
        ValueError: if the state is unsupported or the env's wrapper chain differs.
    """
    if not state.get("supported", False):
        raise ValueError(state.get("reason", "unsupported env state"))
    chain = _wrapper_chain(env)
    classes = [type(layer).__qualname__ for layer in chain]
    saved = list(state["classes"])
    if classes != saved:
        raise ValueError(f"the env's wrappers {classes} differ from the saved ones {saved}")
    for layer, attrs in zip(chain, state["layers"], strict=True):
        for name, value in attrs.items():
            if isinstance(value, np.ndarray):
                value = value.copy()
            setattr(layer, name, value)
    unwrapped = chain[-1]
    unwrapped._np_random = _make_rng(state["np_random"])
    if state.get("custom") is not None:
        unwrapped.set_state_dict(state["custom"])
    mj = state.get("mujoco")
    if mj is not None:
        _set_mujoco_state(unwrapped.data, mj)


class StateAccessWrapper(gym.Wrapper):
    """Lets a vector env's worker process report and restore its env's internal state.

    ``ParallelEnv`` wraps every sub-env in it, so ``AsyncVectorEnv.call`` can reach
    :func:`get_gym_state`/:func:`set_gym_state` inside the workers.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.rl_trainers_pending_state: dict[str, Any] | None = None

    def rl_trainers_get_state(self) -> dict[str, Any]:
        return get_gym_state(self.env)

    def rl_trainers_apply_pending_state(self) -> bool:
        set_gym_state(self.env, self.rl_trainers_pending_state)
        self.rl_trainers_pending_state = None
        return True


class StateAccessFactory:
    """A picklable factory that wraps what ``factory`` builds in :class:`StateAccessWrapper`."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory

    def __call__(self) -> gym.Env:
        return StateAccessWrapper(self.factory())


def _worker_states(vector_env: gym.vector.VectorEnv) -> list[dict[str, Any]] | str:
    """Each worker's env state, or the reason it cannot be read."""
    try:
        return list(vector_env.call("rl_trainers_get_state"))
    except Exception as err:  # noqa: BLE001 - a worker env without StateAccessWrapper
        return f"the sub-envs run in worker processes that cannot report their state ({err})"


# --------------------------------------------------------------------------- TensorDict envs
def _gym_wrapper(env: Any) -> Any:
    """The ``GymWrapper`` at the bottom of ``env`` (through ``TransformedEnv.base_env``)."""
    from rl_trainers.envs.libs.gym import GymWrapper

    seen = 0
    while not isinstance(env, GymWrapper) and seen < 32:
        base = getattr(env, "base_env", None)
        if base is None or base is env:
            return None
        env, seen = base, seen + 1
    return env if isinstance(env, GymWrapper) else None


def get_env_state(env: Any) -> dict[str, Any]:
    """The internal state of every gymnasium sub-env under an rl_trainers env.

    Args:
        env: a ``GymWrapper``/``GymEnv``/``SerialEnv`` or a ``TransformedEnv`` of one.

    Returns:
        ``{"version", "supported": True, "envs": [per-sub-env state]}`` or
        ``{"version", "supported": False, "reason": str}``.
    """
    wrapper = _gym_wrapper(env)
    if wrapper is None:
        return _unsupported(f"{type(env).__name__} is not built on a gymnasium env")
    gym_env = wrapper.env
    if isinstance(gym_env, gym.vector.SyncVectorEnv):
        states = [get_gym_state(sub) for sub in gym_env.envs]
    elif isinstance(gym_env, gym.vector.VectorEnv):
        states = _worker_states(gym_env)
        if isinstance(states, str):
            return _unsupported(states)
    else:
        states = [get_gym_state(gym_env)]
    for i, st in enumerate(states):
        if not st["supported"]:
            return _unsupported(f"sub-env {i}: {st['reason']}")
    return {"version": STATE_VERSION, "supported": True, "envs": states}


def _unsupported(reason: str) -> dict[str, Any]:
    return {"version": STATE_VERSION, "supported": False, "reason": reason}


def set_env_state(env: Any, state: dict[str, Any] | None, *, warn: bool = True) -> bool:
    """Restore what :func:`get_env_state` captured; ``False`` (and a warning) if it cannot.

    On ``False`` the caller should reset the env: it continues from a fresh episode.
    """
    reason = None
    if state is None:
        reason = "the checkpoint holds no env state"
    elif not state.get("supported", False):
        reason = state.get("reason", "unsupported")
    wrapper = _gym_wrapper(env) if reason is None else None
    if reason is None and wrapper is None:
        reason = f"{type(env).__name__} is not built on a gymnasium env"
    if reason is None:
        gym_env = wrapper.env
        remote = isinstance(gym_env, gym.vector.VectorEnv) and not isinstance(
            gym_env, gym.vector.SyncVectorEnv
        )
        if remote:
            count = gym_env.num_envs
        else:
            subs = (
                list(gym_env.envs) if isinstance(gym_env, gym.vector.SyncVectorEnv) else [gym_env]
            )
            count = len(subs)
        if count != len(state["envs"]):
            reason = f"the checkpoint has {len(state['envs'])} sub-envs, this env {count}"
        else:
            try:
                if remote:
                    gym_env.set_attr("rl_trainers_pending_state", list(state["envs"]))
                    gym_env.call("rl_trainers_apply_pending_state")
                else:
                    for sub, st in zip(subs, state["envs"], strict=True):
                        set_gym_state(sub, st)
            except (ValueError, AttributeError, KeyError, TypeError) as err:
                reason = str(err)
    if reason is not None:
        if warn:
            warnings.warn(
                f"Cannot restore the environments' internal state ({reason}); they are reset "
                "and continue from new episodes, so the resumed run is not bit-identical.",
                EnvWarning,
                stacklevel=2,
            )
        return False
    # the wrapper's own between-step bookkeeping is empty at a batch boundary
    wrapper._pending_seed = None
    wrapper._autoreset_obs = None
    wrapper._last_done = None
    return True
