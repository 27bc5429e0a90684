"""Gymnasium environments behind the TensorDict interface: ``GymWrapper`` and ``GymEnv``.

One class serves a single env (``batch_size == ()``) and a gymnasium vector env
(``batch_size == (num_envs,)``, built with ``AutoresetMode.SAME_STEP`` so that
``("next", "observation")`` is the true final observation and the reset observation only
appears in the next policy input, see ``EnvBase.step_and_maybe_reset``).

Observation keys: a Box (or other non-Dict) observation is ``"observation"``; a Dict
observation gives one key per entry (nested Dicts give nested keys); a Tuple observation
(e.g. Blackjack's) gives ``"observation_0"``, ``"observation_1"``, ... (join them into one
vector with ``CatTensors``); rendered frames are ``"pixels"`` (uint8 ``[H, W, C]``) with
``from_pixels=True``.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from tensordict import TensorDict, TensorDictBase

from rl_trainers.envs.common import EnvBase
from rl_trainers.envs.specs import (
    Categorical,
    Composite,
    OneHot,
    TensorSpec,
    specs_from_gym_space,
)
from rl_trainers.envs.utils import DONE_KEYS, fast_set, new_td, stack_steps, step_mdp

__all__ = [
    "UnsupportedActionSpaceError",
    "GymWrapper",
    "GymEnv",
    "make_gym_factory",
    "resolve_env_id",
    "GymFactory",
    "set_gym_backend",
    "gym_backend",
]

_SAME_STEP = gym.vector.AutoresetMode.SAME_STEP

#: torchrl's ``GymEnv``/``GymWrapper`` keywords rl_trainers has no use for: each with the
#: values accepted (torchrl's default first) and what rl_trainers does instead.
TORCHRL_GYM_KEYWORDS: dict[str, tuple[tuple[Any, ...], str]] = {
    "batch_size": ((None,), "the batch is set by num_envs: [N] for num_envs=N, [] for one env"),
    # torchrl raises on a done flag a reset gives unless True; rl_trainers never checks it
    "allow_done_after_reset": ((False, True), "a reset's done flags are not checked"),
    "convert_actions_to_numpy": ((True,), "actions always reach gymnasium as numpy arrays"),
    "missing_obs_value": (
        (None,),
        "vector envs reset in the step that ends an episode, so no observation is missing",
    ),
}


def torchrl_keyword_refusal(name: str, value: Any) -> str | None:
    """None when torchrl's keyword ``name`` (of :data:`TORCHRL_GYM_KEYWORDS`) has a value
    rl_trainers behaves as (for ``batch_size``, an empty size too); else why it is refused."""
    accepted, instead = TORCHRL_GYM_KEYWORDS[name]
    empty_batch = name == "batch_size" and value is not None and len(value) == 0
    if empty_batch or any(value is v or value == v for v in accepted):
        return None
    return f"only torchrl's default {accepted[0]!r} is accepted ({instead})"


def _drop_torchrl_keywords(owner: str, kwargs: dict[str, Any]) -> None:
    """Removes torchrl's keywords at their defaults from ``kwargs``; one at another value
    raises a ``ValueError`` naming it."""
    for name in TORCHRL_GYM_KEYWORDS.keys() & kwargs.keys():
        value = kwargs.pop(name)
        refusal = torchrl_keyword_refusal(name, value)
        if refusal is not None:
            raise ValueError(f"{owner}({name}={value!r}): {refusal}; leave {name} out.")


# --- building gymnasium envs -----------------------------------------------------------------
#: Namespaces of gymnasium ids registered by other packages when imported: namespace ->
#: (the module to import, the package to install).
_NAMESPACE_MODULES = {
    "ALE": ("ale_py", "ale-py"),
    "MiniGrid": ("minigrid", "minigrid"),
    "BabyAI": ("minigrid", "minigrid"),
}


def resolve_env_id(env_name: str) -> str:
    """Return a gymnasium id for ``env_name``, importing/registering entry points as needed.

    ``env_name`` is a registered id (``"CartPole-v1"``), ``"module:EnvId"`` (the module
    registers ``EnvId`` on import) or ``"pkg.module:ClassName"`` (registered on the fly).

    Raises:
        ValueError: for an unknown id, listing close matches.
    """
    if env_name in gym.registry:
        return env_name
    if ":" in env_name:
        module_name, attr = env_name.split(":", 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            hint = ""
            top_level = module_name.split(".")[0]
            if isinstance(err, ModuleNotFoundError) and err.name == top_level:
                # Python looks next to the script and on sys.path, not in the working directory
                hint = (
                    f"; put the directory holding {top_level!r} on PYTHONPATH "
                    "(e.g. PYTHONPATH=. when it is in the working directory) or install it"
                )
            raise ValueError(
                f"Cannot import module {module_name!r} of environment {env_name!r}: {err}{hint}"
            ) from err
        if attr in gym.registry:
            return attr
        obj = getattr(module, attr, None)
        if obj is None:
            raise ValueError(
                f"Module {module_name!r} has no environment {attr!r} (neither a registered "
                f"gymnasium id nor an attribute)."
            )
        if not callable(obj):
            raise ValueError(f"{env_name!r} is not an environment class or factory.")
        env_id = f"rl_trainers/{module_name.replace('.', '_')}_{attr}-v0"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=obj)
        return env_id
    matches = difflib.get_close_matches(env_name, list(gym.registry.keys()), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(matches)}?" if matches else ""
    namespace = env_name.split("/", 1)[0] if "/" in env_name else None
    if namespace and not any(key.startswith(f"{namespace}/") for key in gym.registry):
        module, package = _NAMESPACE_MODULES.get(
            namespace, ("<module>", "the package providing it")
        )
        hint = (
            f" No imported package registers the namespace {namespace!r}: install "
            f"{package} and name the module that registers it, '{module}:{env_name}'."
        )
    raise ValueError(
        f"Unknown environment id {env_name!r}.{hint} "
        "(Use a registered gymnasium id, 'module:EnvId' or 'pkg.module:ClassName'.)"
    )


class _FrameSkip(gym.Wrapper):
    """Repeat each action ``skip`` times, summing rewards, stopping at episode end."""

    def __init__(self, env: gym.Env, skip: int) -> None:
        super().__init__(env)
        self._skip = int(skip)

    def step(self, action: Any) -> tuple:
        total = 0.0
        for _ in range(self._skip):
            obs, rew, term, trunc, info = self.env.step(action)
            total += float(rew)
            if term or trunc:
                break
        return obs, total, term, trunc, info


def _exit_worker_on_signal(signum: int, frame: Any) -> None:
    """A worker process's SIGTERM handler: unwind it (its ``finally`` blocks close its envs)
    and end it with status 128 + the signal, quietly (multiprocessing prints no traceback
    for a SystemExit)."""
    raise SystemExit(128 + signum)


def leave_stop_signals_to_main_process() -> None:
    """In a worker process (e.g. of an AsyncVectorEnv): ignore Ctrl-C, end on SIGTERM.

    A terminal's SIGINT reaches the whole process group; the trainer in the main process
    then finishes its batch and saves a checkpoint, which needs the workers alive. A forked
    worker also inherits the main process's Python handlers: SIGTERM (how its parent ends
    it) gets :func:`_exit_worker_on_signal` instead of the main process's stop handler, which
    raised the app's stop exception there (a traceback per worker at the end of a stopped
    run).
    """
    if multiprocessing.parent_process() is not None:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, _exit_worker_on_signal)
        except ValueError:  # not the worker's main thread
            pass


class GymFactory:
    """A picklable callable that builds one gymnasium env (used in worker processes too).

    Args:
        env_name: gymnasium id, ``"module:EnvId"`` or ``"pkg.module:ClassName"``.
        from_pixels: add rendered frames as ``"pixels"``.
        pixels_only: keep only the frames.
        frame_skip: repeat each action this many times (rewards summed).
        make_kwargs: passed to ``gymnasium.make``.
    """

    def __init__(
        self,
        env_name: str,
        from_pixels: bool = False,
        pixels_only: bool = False,
        frame_skip: int = 1,
        make_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.env_name = env_name
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only
        self.frame_skip = int(frame_skip)
        self.make_kwargs = dict(make_kwargs or {})

    def __call__(self) -> gym.Env:
        leave_stop_signals_to_main_process()
        kwargs = dict(self.make_kwargs)
        if self.from_pixels:
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
            os.environ.setdefault("MUJOCO_GL", "egl")
            kwargs.setdefault("render_mode", "rgb_array")
        env_id = resolve_env_id(self.env_name)
        _route_mujoco_warnings(env_id)
        try:
            env = gym.make(env_id, **kwargs)
        except ImportError as err:  # MuJoCo's v2/v3 ids (mujoco-py), as rl-zoo used them
            others = _other_versions(env_id)
            if not others:
                raise
            raise ImportError(f"{err} Registered versions here: {', '.join(others)}.") from err
        if self.frame_skip > 1:
            env = _FrameSkip(env, self.frame_skip)
        if self.from_pixels:
            env = gym.wrappers.AddRenderObservation(
                env, render_only=self.pixels_only, render_key="pixels", obs_key="observation"
            )
        return env


def _other_versions(env_id: str) -> list[str]:
    """The other registered versions of ``env_id`` built by another entry point (for
    ``Hopper-v3``: Hopper-v5, Hopper-v4; not Hopper-v2, which fails the same way), newest
    first."""
    name, _, version = env_id.rpartition("-v")
    if not name or not version.isdigit():
        return []
    failing = gym.spec(env_id).entry_point
    found = []
    for other, spec in gym.registry.items():
        other_name, _, other_version = other.rpartition("-v")
        if other_name == name and other_version.isdigit() and spec.entry_point != failing:
            found.append((int(other_version), other))
    return [other for _, other in sorted(found, reverse=True)]


def _route_mujoco_warnings(env_id: str) -> None:
    """Before a MuJoCo env is built: MuJoCo's own warnings (e.g. a deprecated attribute in a
    gymnasium model file, printed by the C library on stderr at every model load: once per
    sub-env and evaluation env) become Python warnings, shown once per process. A handler
    the user installed is kept."""
    if "mujoco" not in str(gym.spec(env_id).entry_point):
        return
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_warn_from_mujoco)


def _warn_from_mujoco(message: str) -> None:
    import sys
    import warnings

    from rl_trainers.errors import EnvWarning

    try:
        warnings.warn(f"MuJoCo: {message}", EnvWarning, stacklevel=1)
    except Exception:  # warnings made errors: an exception must not reach MuJoCo's C code
        print(f"MuJoCo warning: {message}", file=sys.stderr)


class _AttributeFactory:
    """A GymEnv's factory that also sets the attributes a ``create_env_fn`` added to the
    gymnasium env it built (e.g. ``env._env.foo = ...`` in torchrl's envs tutorial), so the
    workers' envs have them. The user's function itself is not run in the workers (building a
    GymEnv there would use torch in a forked process). Carries the factory's options."""

    def __init__(self, factory: Callable[[], gym.Env], attributes: dict[str, Any]) -> None:
        self.factory, self.attributes = factory, attributes
        self.categorical_action_encoding = getattr(factory, "categorical_action_encoding", False)
        self.pixels_only = getattr(factory, "pixels_only", False)

    def __call__(self) -> gym.Env:
        env = self.factory()
        for name, value in self.attributes.items():
            setattr(env, name, value)
        return env


def _added_attributes(env: gym.Env, factory: Callable[[], gym.Env]) -> dict[str, Any]:
    """Instance attributes of ``env`` that a fresh env from ``factory`` lacks."""
    fresh = factory()
    try:
        return {k: v for k, v in vars(env).items() if k not in vars(fresh)}
    finally:
        fresh.close()


def make_gym_factory(create_env_fn: Callable[..., Any], **kwargs: Any) -> Callable[[], gym.Env]:
    """Turn a ``create_env_fn`` (returning a GymEnv or a gymnasium env) into a gym factory."""
    probe = create_env_fn(**kwargs)
    if isinstance(probe, GymEnv) and not probe.batch_size:
        factory = probe._factory
        added = _added_attributes(probe._env, factory)
        probe.close()
        return _AttributeFactory(factory, added) if added else factory
    if isinstance(probe, gym.Env):
        probe.close()
        if not kwargs and hasattr(create_env_fn, "pixels_only"):
            return create_env_fn  # a GymEnv's own factory: keep its options (pixels-only)
        return lambda: create_env_fn(**kwargs)
    if isinstance(probe, EnvBase):
        probe.close()
        raise TypeError(
            f"create_env_fn returned a {type(probe).__name__}; batched envs need a function "
            "returning an unbatched GymEnv or a gymnasium env. Put transforms outside: "
            "TransformedEnv(ParallelEnv(n, lambda: GymEnv(...)), transform)."
        )
    raise TypeError(
        f"create_env_fn must return a GymEnv or a gymnasium.Env, got {type(probe).__name__}."
    )


# --- numpy <-> torch conversion --------------------------------------------------------------
def _np_dtype(spec: TensorSpec) -> Any:
    return torch.empty((), dtype=spec.dtype).numpy().dtype


def _leaf_converter(space: spaces.Space, spec: TensorSpec) -> Callable[[Any], torch.Tensor]:
    if isinstance(spec, OneHot):
        n = spec.n

        def conv_onehot(x: Any) -> torch.Tensor:
            idx = torch.from_numpy(np.array(x, dtype=np.int64))
            return torch.nn.functional.one_hot(idx, n).bool()

        return conv_onehot
    dtype = _np_dtype(spec)

    def conv(x: Any) -> torch.Tensor:
        return torch.from_numpy(np.array(x, dtype=dtype))

    return conv


def _tuple_key(root_key: str, i: int) -> str:
    return f"{root_key}_{i}"


def _tuple_keys(root_key: str, n: int) -> list[str]:
    """Keys of the entries of a top-level Tuple observation: ``observation_0``, ..."""
    return [_tuple_key(root_key, i) for i in range(n)]


def tuple_observation_keys(spec: Composite, root_key: str = "observation") -> list[str]:
    """The keys a top-level Tuple observation was split into (``observation_0``, ``...``,
    in order) when ``spec`` holds them and no ``root_key`` entry; otherwise ``[]``."""
    present = set(spec.keys())
    if root_key in present:
        return []
    keys: list[str] = []
    while _tuple_key(root_key, len(keys)) in present:
        keys.append(_tuple_key(root_key, len(keys)))
    return keys


def _observation_spec(
    space: spaces.Space, spec: TensorSpec | Composite, root_key: str, batch_size: torch.Size
) -> Composite:
    """The env's observation Composite: a leaf under ``root_key``; a Dict's entries under
    their names; a Tuple's entries under ``root_key_0``, ``root_key_1``, ..."""
    if isinstance(space, spaces.Tuple):
        keys = _tuple_keys(root_key, len(space.spaces))
        entries = {k: spec[str(i)] for i, k in enumerate(keys)}
        return Composite(entries, shape=batch_size, device=spec.device)
    if not isinstance(spec, Composite):
        return Composite({root_key: spec}, shape=batch_size, device=spec.device)
    return spec


def _obs_converter(
    space: spaces.Space, spec: TensorSpec | Composite, root_key: str, top: bool = True
) -> Callable[[Any], dict[str, Any]]:
    """Function mapping a (batched or single) gym observation to a dict of tensors.

    ``spec`` is the env's observation Composite (``_observation_spec``) at the top level.
    """
    if isinstance(space, spaces.Dict | spaces.Tuple):
        names = list(space.spaces.keys()) if isinstance(space, spaces.Dict) else None
        if names is None and top:
            tuple_keys = _tuple_keys(root_key, len(space.spaces))
        else:
            tuple_keys = [str(i) for i in range(len(space.spaces))]
        subs = []
        for i, sub in enumerate(space.spaces.values() if names else space.spaces):
            key = names[i] if names else tuple_keys[i]
            sub_spec = spec[key]
            if isinstance(sub, spaces.Dict | spaces.Tuple):
                subs.append((key, i, _obs_converter(sub, sub_spec, "", top=False)))
            else:
                subs.append((key, i, _leaf_converter(sub, sub_spec)))
        by_name = names is not None

        def conv_dict(x: Any) -> dict[str, Any]:
            return {key: fn(x[key] if by_name else x[i]) for key, i, fn in subs}

        return conv_dict
    leaf = _leaf_converter(space, spec[root_key])

    def conv_leaf(x: Any) -> dict[str, Any]:
        return {root_key: leaf(x)}

    return conv_leaf


def _np(a: torch.Tensor) -> np.ndarray:
    return a.detach().numpy() if a.requires_grad else a.numpy()


#: The gymnasium action spaces a :class:`GymWrapper` can act in.
ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class UnsupportedActionSpaceError(TypeError):
    """The env's action space is none of :data:`ACTION_SPACES` (a Dict, Tuple, Text...).

    Attributes:
        space: the gymnasium action space (of one env).
    """

    def __init__(self, space: spaces.Space) -> None:
        self.space = space
        names = ", ".join(s.__name__ for s in ACTION_SPACES)
        super().__init__(
            f"the action space {space} is not supported: the env must act in a {names} "
            "space (a wrapper of its own can map one onto it)"
        )


def _action_converter(spec: TensorSpec, space: spaces.Space, batched: bool) -> Callable:
    if isinstance(spec, OneHot):
        if batched:
            return lambda a: _np(a).argmax(-1)
        return lambda a: int(_np(a).argmax(-1))
    if isinstance(spec, Categorical):
        n = spec.n

        def conv_cat(a: torch.Tensor) -> Any:
            out = _np(a) if batched else int(a)
            if np.any(out >= n) or np.any(out < 0):
                raise ValueError(f"Action index {a.tolist()} is outside the action spec {spec!r}.")
            return out

        return conv_cat
    dtype = space.dtype
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if (
        isinstance(space, spaces.Box)
        and np.issubdtype(dtype, np.floating)
        and np.isfinite(low).any() | np.isfinite(high).any()
    ):
        # an unsquashed Gaussian policy (gSDE) samples past the bounds: clip them as SB3
        # does, while the batch keeps (and the loss scores) the unclipped action
        def conv_clip(a: torch.Tensor) -> Any:
            # maximum/minimum: ~2 us cheaper per call than np.clip on small arrays
            return np.minimum(np.maximum(_np(a).astype(dtype, copy=False), low), high)

        return conv_clip

    def conv(a: torch.Tensor) -> Any:
        return _np(a).astype(dtype, copy=False)

    return conv


def _clone_tree(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _clone_tree(v) if isinstance(v, dict) else v.clone() for k, v in d.items()}


def _write_row(dst: dict[str, Any], i: int, src: dict[str, Any]) -> None:
    for k, v in src.items():
        if isinstance(v, dict):
            _write_row(dst[k], i, v)
        else:
            dst[k][i] = v


def _flag_history(first: torch.Tensor, steps: int) -> torch.Tensor:
    """``[*B, steps, 1]`` input flags of a batch: ``first`` at step 0, False afterwards."""
    out = torch.zeros((*first.shape[:-1], steps, 1), dtype=first.dtype)
    out[..., 0, :] = first
    return out


# --- the env ---------------------------------------------------------------------------------
class _AvailableEnvs:
    """``GymEnv.available_envs``: the ids registered in gymnasium (a class-level list)."""

    def __get__(self, obj: Any, owner: type) -> list[str]:
        return list(gym.registry.keys())


class _WorkerAttribute:
    """An attribute of every sub-env of a vector env (torchrl's ``parallel_env.foo``).

    Iterating (``list(penv.foo)``) gives one value per sub-env; calling
    (``penv.get_something(0)``) calls the method in every sub-env and gives the results.
    """

    def __init__(self, vector_env: gym.vector.VectorEnv, name: str) -> None:
        self._vector_env, self._name = vector_env, name

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        return list(self._vector_env.call(self._name, *args, **kwargs))

    def _values(self) -> list[Any]:
        return list(self._vector_env.call(self._name))

    def __iter__(self) -> Any:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())

    def __getitem__(self, index: int) -> Any:
        return self._values()[index]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


def _mapped(value: torch.Tensor, functions: Sequence[Callable]) -> torch.Tensor:
    """``value`` through ``functions`` in order."""
    for function in functions:
        value = function(value)
    return value


class GymWrapper(EnvBase):
    """Wrap an already built gymnasium env (or vector env) as a TensorDict env.

    Attributes the wrapper lacks are read from the gymnasium env (``env.foo`` is
    ``env._env.foo``, through gymnasium wrappers); for batched envs they are read in every
    sub-env (a list-like, callable for methods), as torchrl's ``ParallelEnv`` does.

    Continuous (``Box``) actions are clipped to the space's bounds before the gymnasium env
    steps (an unsquashed Gaussian policy, e.g. gSDE, samples past them, as in SB3); the
    TensorDict keeps the action as given.

    Args:
        env: a ``gymnasium.Env`` or a ``gymnasium.vector.VectorEnv`` built with
            ``autoreset_mode=AutoresetMode.SAME_STEP``.
        categorical_action_encoding: Discrete actions as int64 indices instead of one-hot.
        device: tensor device (CPU).
        pixels_key_only: the env's non-Dict observation is a rendered frame (key "pixels").
    """

    def __init__(
        self,
        env: gym.Env | gym.vector.VectorEnv | None = None,
        categorical_action_encoding: bool = False,
        device: Any = "cpu",
        pixels_key_only: bool = False,
        **kwargs: Any,
    ) -> None:
        if env is None:
            env = kwargs.pop("env")
        _drop_torchrl_keywords("GymWrapper", kwargs)
        if kwargs:
            raise TypeError(f"GymWrapper got unexpected arguments {sorted(kwargs)}.")
        self._init_from(env, categorical_action_encoding, device, pixels_key_only)

    def _init_from(
        self,
        env: gym.Env | gym.vector.VectorEnv,
        categorical_action_encoding: bool,
        device: Any,
        pixels_key_only: bool,
    ) -> None:
        self._env = env
        self._batched = isinstance(env, gym.vector.VectorEnv)
        if self._batched:
            mode = env.metadata.get("autoreset_mode")
            if mode != _SAME_STEP:
                raise ValueError(
                    "Vector envs must use autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP "
                    f"(so final observations are kept), got {mode}."
                )
            batch_size = torch.Size([env.num_envs])
            obs_space, act_space = env.single_observation_space, env.single_action_space
        elif isinstance(env, gym.Env):
            batch_size = torch.Size([])
            obs_space, act_space = env.observation_space, env.action_space
        else:
            raise TypeError(
                f"GymWrapper needs a gymnasium.Env or VectorEnv, got {type(env).__name__}."
            )
        super().__init__(device=device, batch_size=batch_size)
        self.categorical_action_encoding = categorical_action_encoding
        self._obs_space, self._act_space = obs_space, act_space
        root_key = "pixels" if pixels_key_only else "observation"
        obs_spec = _observation_spec(
            obs_space,
            specs_from_gym_space(obs_space, categorical_action_encoding, self.device, batch_size),
            root_key,
            batch_size,
        )
        self.full_observation_spec = obs_spec
        if not isinstance(act_space, ACTION_SPACES):
            raise UnsupportedActionSpaceError(act_space)
        act_spec = specs_from_gym_space(
            act_space, categorical_action_encoding, self.device, batch_size
        )
        self.full_action_spec = Composite(action=act_spec, shape=batch_size, device=self.device)
        self._root_key = root_key
        self._leaf_obs = not isinstance(obs_space, spaces.Dict | spaces.Tuple)
        self._obs_conv = _obs_converter(obs_space, obs_spec, root_key)
        self._act_conv = _action_converter(act_spec, act_space, self._batched)
        self._action_shape = act_spec.shape
        self._flag_shape = (*batch_size, 1)
        self._pending_seed: int | None = None
        self._autoreset_obs: dict[str, Any] | None = None
        self._last_done: np.ndarray | None = None

    available_envs = _AvailableEnvs()

    # --- info --------------------------------------------------------------------------------
    @property
    def env(self) -> gym.Env | gym.vector.VectorEnv:
        """The wrapped gymnasium env."""
        return self._env

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("_env")
        if name.startswith("_") or env is None or self.__dict__.get("is_closed", True):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}.")
        try:
            if isinstance(env, gym.vector.VectorEnv):
                if all(env.call("has_wrapper_attr", name)):
                    return _WorkerAttribute(env, name)
            elif env.has_wrapper_attr(name):
                return env.get_wrapper_attr(name)
        except Exception as err:  # noqa: BLE001 - a worker error means "not there" here
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}.") from err
        raise AttributeError(
            f"{type(self).__name__} (and the gymnasium env it wraps) has no attribute {name!r}."
        )

    @property
    def single_action_space(self) -> spaces.Space:
        """The gymnasium action space of one env (of each sub-env of a vector env)."""
        return self._act_space

    @property
    def num_envs(self) -> int:
        """Number of sub-envs (0 for a single env)."""
        return self.batch_size[0] if self._batched else 0

    # --- seeding -----------------------------------------------------------------------------
    def _set_seed(self, seed: int | None) -> None:
        self._pending_seed = seed
        if seed is not None:
            torch.manual_seed(seed)
            self._env.action_space.seed(seed)
            if self._batched:
                self._env.single_action_space.seed(seed)

    # --- reset -------------------------------------------------------------------------------
    def _zero_flags(self) -> dict[str, torch.Tensor]:
        shape = self._flag_shape
        return {
            "done": torch.zeros(shape, dtype=torch.bool),
            "terminated": torch.zeros(shape, dtype=torch.bool),
            "truncated": torch.zeros(shape, dtype=torch.bool),
        }

    def _reset(self, tensordict: TensorDictBase | None) -> TensorDictBase:
        mask = None
        if tensordict is not None and self._batched:
            m = tensordict.get("_reset", None)
            if m is not None:
                mask = m.reshape(self.batch_size).numpy()
        seed, self._pending_seed = self._pending_seed, None
        pending = self._autoreset_obs
        reuse = mask is not None and seed is None and pending is not None
        if reuse and np.array_equal(mask, self._last_done):
            # gymnasium already reset these sub-envs at the last step (SAME_STEP); also when
            # all of them finished together, which must not reset them a second time
            obs = pending
        elif mask is not None and seed is None and not mask.all():
            raw, _ = self._env.reset(options={"reset_mask": mask.astype(np.bool_)})
            obs = self._obs_conv(raw)
        else:
            raw, _ = self._env.reset(seed=seed)
            obs = self._obs_conv(raw)
        self._autoreset_obs = None
        self._last_done = None
        obs.update(self._zero_flags())
        return new_td(obs, self.batch_size, self.device)

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Step; finished sub-envs get their (already computed) reset observation.

        See ``EnvBase.step_and_maybe_reset``. The batched path reuses the observation that
        gymnasium's SAME_STEP autoreset returned, so no extra reset call is made.
        """
        if not self._batched:
            return super().step_and_maybe_reset(tensordict)
        tensordict = self.step(tensordict)
        next_input = step_mdp(tensordict, reward_keys=self.reward_keys)
        pending = self._autoreset_obs
        if pending is not None:
            self._autoreset_obs = None
            self._last_done = None
            pending.update(self._zero_flags())
            for k, v in pending.items():
                fast_set(next_input, k, v)
        return tensordict, next_input

    # --- batched rollout on arrays -----------------------------------------------------------
    def rollout_batch(
        self,
        tensordict: TensorDictBase,
        steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        acting: Any = None,
        observation_steps: Sequence[Callable[[torch.Tensor], torch.Tensor]] = (),
    ) -> tuple[TensorDictBase, TensorDictBase] | None:
        """``steps`` calls of :meth:`step_and_maybe_reset`, stacked along a last time dim.

        What a collector's inner loop does, with the ``"next"`` entries kept as numpy arrays
        and turned into one TensorDict at the end instead of a TensorDict per step; random
        actions (``policy=None``) are drawn for all steps at once, from the same generator
        in the same order. Results equal the step-by-step loop's.

        ``acting`` (a :mod:`~rl_trainers.fast.acting` path of ``policy``) acts on
        observation tensors instead of calling ``policy`` on a TensorDict per step, when the
        input and the action spec fit it (else ``policy`` is called); its entries are
        written for all steps at once.

        ``observation_steps`` (from a :class:`TransformedEnv`, e.g. a running observation
        normaliser) map the observation where the transforms' ``_step`` and ``_reset`` would:
        the step's observations (the final ones of finished episodes), then, when an episode
        ended, the whole batch's observations after the autoreset, which the policy reads.

        Returns:
            ``(transitions [*B, steps], next policy input)``, or None when this env cannot
            take the array path: a single env, Dict observations, a subclass overriding the
            step, or random actions on an input holding more than observation and done
            flags.
        """
        if not self._batched or not self._leaf_obs or type(tensordict) is not TensorDict:
            return None
        cls = type(self)
        if cls._step is not GymWrapper._step or cls._get_action is not GymWrapper._get_action:
            return None  # a subclass changed how steps are taken: keep to its step()
        root, obs_key = tensordict._tensordict, self._root_key
        if obs_key not in root or any(k not in root for k in DONE_KEYS):
            return None
        if policy is None and set(root) - {obs_key, *DONE_KEYS, "action"}:
            return None
        env, conv, n = self._env, self._obs_conv, self.batch_size[0]
        if policy is None or not self._fits(acting, root):
            acting = None
        records: list[tuple[torch.Tensor, ...]] = []
        actions = None
        if policy is None:
            actions = self.action_spec.rand(torch.Size([steps]))  # [T, *B, ...] one draw
            if actions.shape[1:] != self._action_shape:
                return None
            env_actions = self._act_conv(actions)
        inputs, next_obs, rewards, terms, truncs = [], [], [], [], []
        td, obs_in = tensordict, root[obs_key]
        for t in range(steps):
            if policy is None:  # no TensorDict per step: observations only
                action = env_actions[t]
                inputs.append(obs_in)
            elif acting is not None:  # tensors only, no TensorDict per step
                record = acting.step(obs_in)
                records.append(record)
                inputs.append(obs_in)
                action = acting.env_action(record, self._act_conv)
            else:
                td = policy(td)
                action = self._get_action(td)
                inputs.append(td)
            obs, rew, term, trunc, info = env.step(action)
            rewards.append(np.array(rew, dtype=np.float32))
            terms.append(term.copy())
            truncs.append(trunc.copy())
            reset_obs = conv(obs)
            done = term | trunc
            if np.count_nonzero(done):
                final, patched = info["final_obs"], np.array(obs)
                for i in np.flatnonzero(done):
                    patched[i] = final[i]
                next_obs.append(_mapped(conv(patched)[obs_key], observation_steps))
                reset_obs[obs_key] = _mapped(reset_obs[obs_key], observation_steps)
            else:
                reset_obs[obs_key] = _mapped(reset_obs[obs_key], observation_steps)
                next_obs.append(reset_obs[obs_key])
            obs_in = reset_obs[obs_key]
            if policy is not None and acting is None:
                td = self._next_input(td, reset_obs)
        if policy is None:
            td = new_td({**reset_obs, **self._zero_flags()}, self.batch_size, self.device)
        self._autoreset_obs = self._last_done = None
        time_dim = len(self.batch_size)
        batch_size = torch.Size([n, steps])
        if acting is not None:
            outputs = acting.batch_outputs(records, time_dim)
            batch, td = self._acting_entries(root, inputs, outputs, reset_obs, steps)
        elif policy is None:
            first = tensordict._tensordict
            flags_in = {k: _flag_history(first.get(k), steps) for k in DONE_KEYS}
            root_entries = {
                obs_key: torch.stack(inputs, time_dim),
                **flags_in,
                "action": actions.transpose(0, 1).contiguous(),
            }
            batch = new_td(root_entries, batch_size, self.device)
        else:
            batch = stack_steps(inputs, time_dim)
        term = torch.from_numpy(np.stack(terms, 1).reshape(n, steps, 1))
        trunc = torch.from_numpy(np.stack(truncs, 1).reshape(n, steps, 1))
        nxt = {
            obs_key: torch.stack(next_obs, time_dim),
            "reward": torch.from_numpy(np.stack(rewards, 1).reshape(n, steps, 1)),
            "done": term | trunc,
            "terminated": term,
            "truncated": trunc,
        }
        fast_set(batch, "next", new_td(nxt, batch_size, self.device))
        return batch, td

    def _fits(self, acting: Any, root: dict[str, Any]) -> bool:
        """Whether ``acting`` can replace the policy call on this input and action spec: the
        input holds only the observation, the done flags and the policy's own entries, and
        what it samples is what the env takes: a categorical path's index (one-hot or not)
        for a spec of as many categories, a continuous path's action of the spec's shape
        (which the env converts)."""
        if acting is None or acting.obs_key != self._root_key:
            return False
        if set(root) - {self._root_key, *DONE_KEYS, *acting.out_keys}:
            return False
        spec, shape = self.action_spec, self._action_shape
        if acting.n_actions is None:
            return tuple(getattr(spec, "shape", ())) == tuple(shape)
        if acting.one_hot:
            return isinstance(spec, OneHot) and shape == (shape[0], acting.n_actions)
        return isinstance(spec, Categorical) and shape == (shape[0],) and spec.n == acting.n_actions

    def _acting_entries(
        self,
        root: dict[str, Any],
        observations: list[torch.Tensor],
        outputs: dict[str, torch.Tensor],
        reset_obs: dict[str, torch.Tensor],
        steps: int,
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """The ``[*B, steps]`` root entries and the next policy input of a batch acted by a
        lean acting path: the same keys, order and values as the policy's TensorDicts
        (entries in the input's order, then the new outputs; the next input as
        :meth:`_next_input` builds it from the last step)."""
        time_dim = len(self.batch_size)
        entries: dict[str, Any] = {}
        for key, value in root.items():
            if key == self._root_key:
                entries[key] = torch.stack(observations, time_dim)
            elif key in DONE_KEYS:
                entries[key] = _flag_history(value, steps)
            else:
                entries[key] = None  # an output of the policy: written below, in this place
        entries.update(outputs)
        batch = new_td(entries, torch.Size([*self.batch_size, steps]), self.device)
        last = dict.fromkeys(k for k in entries if k not in ("action", "next", "reward"))
        last.update({k: v.select(time_dim, -1).clone() for k, v in outputs.items() if k in last})
        last.update(reset_obs)
        last.update(self._zero_flags())
        return batch, new_td(last, self.batch_size, self.device)

    def _next_input(self, td: TensorDictBase, obs: dict[str, torch.Tensor]) -> TensorDictBase:
        """The next policy input as ``step_and_maybe_reset`` builds it: after the autoreset
        no sub-env is done, so its flags are all False."""
        entries = {k: v for k, v in td._tensordict.items() if k not in ("action", "next", "reward")}
        entries.update(obs)
        entries.update(self._zero_flags())
        return new_td(entries, self.batch_size, self.device)

    # --- step --------------------------------------------------------------------------------
    def _get_action(self, tensordict: TensorDictBase) -> Any:
        action = tensordict.get("action", None)
        if action is None:
            raise KeyError(
                f"step() needs an 'action' entry; keys present: {list(tensordict.keys())}."
            )
        if action.shape != self._action_shape:
            raise ValueError(
                f"Action of shape {tuple(action.shape)} does not match the action spec "
                f"{self.action_spec!r} (expected shape {tuple(self.action_spec.shape)})."
            )
        return self._act_conv(action)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self._get_action(tensordict)
        obs, rew, term, trunc, info = self._env.step(action)
        if not self._batched:
            out = self._obs_conv(obs)
            t, tr = bool(term), bool(trunc)
            out["reward"] = torch.tensor([float(rew)], dtype=torch.float32)
            out["done"] = torch.tensor([t or tr])
            out["terminated"] = torch.tensor([t])
            out["truncated"] = torch.tensor([tr])
            return new_td(out, self.batch_size, self.device)
        done = term | trunc
        if np.count_nonzero(done):
            # ``obs`` holds the reset observation of finished sub-envs; put the final one in
            # "next" and keep the reset one for the next policy input.
            final = info["final_obs"]
            idx = np.flatnonzero(done)
            reset_obs = self._obs_conv(obs)
            if self._leaf_obs:
                obs = np.array(obs)
                for i in idx:
                    obs[i] = final[i]
                out = self._obs_conv(obs)
            else:
                out = _clone_tree(reset_obs)
                for i in idx:
                    _write_row(out, int(i), self._single_conv(final[i]))
            self._autoreset_obs = reset_obs
            self._last_done = done
        else:
            out = self._obs_conv(obs)
            self._autoreset_obs = None
            self._last_done = None
        n = self.batch_size[0]
        out["reward"] = torch.from_numpy(np.asarray(rew, dtype=np.float32).reshape(n, 1))
        out["done"] = torch.from_numpy(done.reshape(n, 1))
        out["terminated"] = torch.from_numpy(term.reshape(n, 1))
        out["truncated"] = torch.from_numpy(trunc.reshape(n, 1))
        return new_td(out, self.batch_size, self.device)

    @property
    def _single_conv(self) -> Callable[[Any], dict[str, Any]]:
        conv = self.__dict__.get("_single_conv_cache")
        if conv is None:
            root = self._root_key
            single = _observation_spec(
                self._obs_space,
                specs_from_gym_space(
                    self._obs_space, self.categorical_action_encoding, self.device
                ),
                root,
                torch.Size([]),
            )
            conv = _obs_converter(self._obs_space, single, root)
            self.__dict__["_single_conv_cache"] = conv
        return conv

    def close(self) -> None:
        """Close the gymnasium env (and its worker processes)."""
        if not self.is_closed:
            self.is_closed = True
            self._env.close()


class GymEnv(GymWrapper):
    """A gymnasium environment by id, single or batched.

    Args:
        env_name: gymnasium id (``"CartPole-v1"``), ``"module:EnvId"`` or
            ``"pkg.module:ClassName"``.
        num_envs: 0 for one env, ``N > 0`` for a ``SyncVectorEnv`` of N envs (batch ``(N,)``).
        from_pixels: add rendered frames as ``"pixels"`` (uint8 ``[H, W, C]``).
        pixels_only: keep only ``"pixels"``.
        frame_skip: repeat each action this many times (rewards summed).
        categorical_action_encoding: Discrete actions as int64 indices instead of one-hot.
        device: tensor device.
        **make_kwargs: passed to ``gymnasium.make`` (e.g. ``max_episode_steps``), except
            torchrl's ``batch_size``, ``allow_done_after_reset``, ``convert_actions_to_numpy``
            and ``missing_obs_value``, accepted at the values rl_trainers behaves as
            (:data:`TORCHRL_GYM_KEYWORDS`).

    Example:
        >>> env = GymEnv("Pendulum-v1")
        >>> env.action_spec.high
        tensor([2.])
    """

    def __init__(
        self,
        env_name: str,
        *,
        num_envs: int = 0,
        from_pixels: bool = False,
        pixels_only: bool = False,
        frame_skip: int = 1,
        categorical_action_encoding: bool = False,
        device: Any = "cpu",
        **make_kwargs: Any,
    ) -> None:
        if not isinstance(env_name, str):
            raise TypeError(f"env_name must be a string id, got {type(env_name).__name__}.")
        if int(num_envs) < 0:
            raise ValueError(f"num_envs must be >= 0, got {num_envs}.")
        if int(frame_skip) < 1:
            raise ValueError(f"frame_skip must be >= 1, got {frame_skip}.")
        resolve_env_id(env_name)  # fail early with a helpful message
        _drop_torchrl_keywords("GymEnv", make_kwargs)
        self.env_name = env_name
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only and from_pixels
        self.frame_skip = int(frame_skip)
        self.make_kwargs = dict(make_kwargs)
        self._factory = GymFactory(env_name, from_pixels, self.pixels_only, frame_skip, make_kwargs)
        self._factory.categorical_action_encoding = categorical_action_encoding
        self._constructor_kwargs = {
            "num_envs": num_envs,
            "from_pixels": from_pixels,
            "pixels_only": pixels_only,
            "frame_skip": frame_skip,
            "categorical_action_encoding": categorical_action_encoding,
            "device": device,
            **make_kwargs,
        }
        if num_envs:
            env = gym.vector.SyncVectorEnv(
                [self._factory] * int(num_envs), copy=False, autoreset_mode=_SAME_STEP
            )
        else:
            env = self._factory()
        self._init_from(env, categorical_action_encoding, device, self.pixels_only)

    def __repr__(self) -> str:
        return f"GymEnv(env_name={self.env_name!r}, batch_size={tuple(self.batch_size)})"


# --- torchrl's gym-backend switch ------------------------------------------------------------
def _check_backend(backend: Any) -> Any:
    """The gymnasium module if ``backend`` names it; otherwise a clear error."""
    if callable(backend):
        backend = backend()
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
    if name != "gymnasium":
        raise ValueError(
            f"set_gym_backend({name!r}): rl_trainers supports gymnasium only; use "
            "set_gym_backend('gymnasium') or drop the call."
        )
    return gym


class set_gym_backend(contextlib.ContextDecorator):  # noqa: N801 - torchrl's name
    """torchrl's gym-backend switch; rl_trainers runs on gymnasium only.

    Accepted as a context manager, a decorator or with :meth:`set`, so ported scripts keep
    it. ``backend`` is ``"gymnasium"``, the ``gymnasium`` module or a callable returning
    it; anything else (``"gym"``) raises ``ValueError``.

    Example:
        >>> with set_gym_backend("gymnasium"):
        ...     env = GymEnv("CartPole-v1")
    """

    def __init__(self, backend: Any) -> None:
        self.backend = _check_backend(backend)

    def set(self) -> None:
        """Set the backend for the rest of the program (a no-op: gymnasium it is)."""

    def __enter__(self) -> set_gym_backend:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def gym_backend(submodule: str | None = None) -> Any:
    """The gym backend in use (the ``gymnasium`` module), or one of its submodules.

    Example:
        >>> gym_backend("spaces").Box
    """
    if submodule is None:
        return gym
    return importlib.import_module(f"gymnasium.{submodule}")
