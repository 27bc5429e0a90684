"""torchrl's ``trainers.helpers`` builders, driven by a plain config object.

Each builder reads the attribute names torchrl's argparse/dataclass configs use
(``cfg.frames_per_batch``, ``cfg.total_frames``, ``cfg.loss`` ...) from an argparse
``Namespace``, a ``dict`` or an OmegaConf node, so a torchrl script that builds its pieces
with these helpers runs after changing the import prefix. Fields a builder needs and the
config lacks raise a ``KeyError`` naming the field; optional fields fall back to torchrl's
defaults (listed in each docstring).

torchrl's paths (``rl_trainers.trainers.helpers``, ``...helpers.collectors``...) re-export
them. The Hydra application does not use these: it builds from config nodes through
``rl_trainers.algorithms.components``. ``make_replay_buffer`` serves both call forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from rl_trainers.algorithms import components
from rl_trainers.trainers.helpers import TORCHRL_HELPER_NAMES

#: torchrl's helper names, as its path (``rl_trainers.trainers.helpers``) declares them
__all__ = list(TORCHRL_HELPER_NAMES)

_MISSING = object()

# torchrl's defaults for the optional fields the builders read
DEFAULTS: dict[str, Any] = {
    "seed": None,
    "frame_skip": 1,
    "collector_device": "cpu",
    "async_collection": False,
    "multi_step": False,
    "n_steps_return": 3,
    "gamma": 0.99,
    "env_per_collector": 1,
    "num_workers": 1,
    "init_random_frames": 0,
    "max_frames_per_traj": -1,
    "loss": "double",
    "loss_function": "smooth_l1",
    "hard_update": False,
    "value_network_update_interval": 1000,
    "distributional": False,
    "buffer_size": 1_000_000,
    "batch_size": 256,
    "prb": False,
    "buffer_scratch_dir": None,
    "optimizer": "adam",
    "lr": 3e-4,
    "weight_decay": 0.0,
    "lr_scheduler": "cosine",
    "optim_steps_per_batch": 500,
    "clip_grad_norm": False,
    "clip_norm": 1000.0,
    "selected_keys": None,
    "sub_traj_len": -1,
    "normalize_rewards_online": False,
    "normalize_rewards_online_scale": 1.0,
    "normalize_rewards_online_decay": 0.9999,
    "record_interval": 1000,
    "record_frames": 1000,
    "log_interval": 10000,
    "env_library": "gym",
    "from_pixels": False,
    "catframes": 0,
    "noops": 0,
    "center_crop": None,
    "image_size": 84,
    "grayscale": True,
    "reward_scaling": None,
    "reward_loc": 0.0,
    "vecnorm": False,
    "norm_stats": True,
    "categorical_action_encoding": False,
    "init_env_steps": 1000,
}

_BOOKKEEPING_KEYS = ("episode_reward", "step_count", "is_init")
_FRAME_COUNT_FIELDS = (
    "max_frames_per_traj",
    "total_frames",
    "frames_per_batch",
    "record_frames",
    "annealing_frames",
    "init_random_frames",
    "init_env_steps",
    "noops",
)


# ------------------------------------------------------------------ config access
def _has(cfg: Any, name: str) -> bool:
    if isinstance(cfg, Mapping):
        return name in cfg
    try:
        getattr(cfg, name)
    except (AttributeError, KeyError):
        return False
    return True


def cfg_get(cfg: Any, name: str, default: Any = _MISSING) -> Any:
    """``cfg.name`` for a Namespace/OmegaConf node, ``cfg[name]`` for a dict.

    Without ``default``, torchrl's default from :data:`DEFAULTS` is used; a field with no
    default raises ``KeyError`` naming it.
    """
    if cfg is None:
        raise ValueError(f"A config is needed to read {name!r}; got cfg=None.")
    if _has(cfg, name):
        return cfg[name] if isinstance(cfg, Mapping) else getattr(cfg, name)
    if default is not _MISSING:
        return default
    if name in DEFAULTS:
        return DEFAULTS[name]
    raise KeyError(
        f"The config has no field {name!r} (a {type(cfg).__name__}); add it, e.g. "
        f"cfg.{name} = ... or {{'{name}': ...}}."
    )


def _cfg_set(cfg: Any, name: str, value: Any) -> None:
    if isinstance(cfg, dict):
        cfg[name] = value
    else:
        setattr(cfg, name, value)


def _device(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"One collector device is supported, got {list(value)}.")
        value = value[0]
    return value


# ------------------------------------------------------------------ frames and stats
def correct_for_frame_skip(cfg: Any) -> Any:
    """Divide every frame-count field of ``cfg`` by ``cfg.frame_skip`` (in place; returns cfg).

    Fields: ``max_frames_per_traj``, ``total_frames``, ``frames_per_batch``, ``record_frames``,
    ``annealing_frames``, ``init_random_frames``, ``init_env_steps``, ``noops`` (those present).
    """
    frame_skip = int(cfg_get(cfg, "frame_skip"))
    if frame_skip < 1:
        raise ValueError(f"cfg.frame_skip must be >= 1, got {frame_skip}.")
    if frame_skip != 1:
        for name in _FRAME_COUNT_FIELDS:
            if _has(cfg, name):
                value = cfg_get(cfg, name)
                if isinstance(value, int) and value > 0:
                    _cfg_set(cfg, name, value // frame_skip)
    return cfg


def get_stats_random_rollout(
    cfg: Any, proof_environment: Any = None, key: str | None = None
) -> dict[str, torch.Tensor]:
    """``{"loc", "scale"}`` of an observation over random rollouts (``cfg.init_env_steps`` steps).

    Pixels are reduced to scalars; other observations to per-feature statistics. Zero
    standard deviations become scale 1 (and loc 0).

    Args:
        cfg: config (``init_env_steps``; to build an env: see :func:`transformed_env_constructor`).
        proof_environment: the env to roll out (built from ``cfg`` and closed if None).
        key: observation key (the only one of the env if None).
    """
    own = proof_environment is None
    if own:
        proof_environment = transformed_env_constructor(
            cfg, stats={"loc": 0.0, "scale": 1.0}, norm_obs_only=True
        )()
    try:
        if key is None:
            keys = [
                k
                for k in proof_environment.observation_spec.keys(True, True)
                if k not in _BOOKKEEPING_KEYS
            ]
            if len(keys) != 1:
                raise RuntimeError(
                    f"The env has several observation keys {keys}; pass key= to choose one."
                )
            key = keys[0]
        steps = int(cfg_get(cfg, "init_env_steps"))
        data, n = [], 0
        while n < steps:
            td = proof_environment.rollout(max_steps=steps - n, break_when_any_done=False)
            data.append(td.get(key).float().reshape(-1, *td.get(key).shape[td.ndim :]))
            n += td.shape[-1]
        x = torch.cat(data, 0)
        if key == "pixels":
            loc, scale = x.mean(), x.std()
        else:
            loc, scale = x.mean(0), x.std(0)
        zero = scale == 0
        loc = torch.where(zero, torch.zeros_like(loc), loc)
        scale = torch.where(zero, torch.ones_like(scale), scale)
        return {"loc": loc, "scale": scale}
    finally:
        if own:
            proof_environment.close()


# ------------------------------------------------------------------ environments
def transformed_env_constructor(
    cfg: Any,
    video_tag: str = "",
    logger: Any = None,
    stats: dict[str, Any] | None = None,
    norm_obs_only: bool = False,
    use_env_creator: bool = False,
    custom_env_maker: Callable[..., Any] | None = None,
    custom_env: Any = None,
    return_transformed_envs: bool = True,
    action_dim_gsde: int | None = None,
    state_dim_gsde: int | None = None,
    batch_dims: int = 0,
    obs_norm_state_dict: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """A function building the (transformed) env that ``cfg`` describes.

    Base env: ``custom_env``, ``custom_env_maker()`` or ``GymEnv(cfg.env_name, from_pixels=,
    frame_skip=, categorical_action_encoding=)``; with ``video_tag`` and ``logger`` the
    GymEnv also renders ``pixels`` (next to the state observation) for the recorder.
    Transforms, in order: ``VideoRecorder`` (if ``logger`` and ``video_tag``),
    ``NoopResetEnv(cfg.noops)``; for pixels ``ToTensorImage``,
    ``Resize(cfg.image_size)``, ``GrayScale`` (``cfg.grayscale``), ``CatFrames(cfg.catframes)``
    and ``ObservationNorm`` (``obs_norm_state_dict`` or standard-normal ``stats``); for states
    ``VecNorm`` (``cfg.vecnorm``) or ``ObservationNorm(**stats)``; then ``RewardScaling``
    (``cfg.reward_scaling``/``cfg.reward_loc``, unless ``norm_obs_only``), ``RewardSum`` and
    ``StepCounter(cfg.max_frames_per_traj)``.

    Args:
        cfg: config (``env_name`` required).
        video_tag: tag of the recorded videos.
        logger: logger receiving videos.
        stats: ``{"loc", "scale"}`` of the observation normaliser.
        norm_obs_only: only add the observation transforms.
        use_env_creator: wrap the function in an ``EnvCreator``.
        custom_env_maker: builds the base env instead of ``GymEnv``.
        custom_env: the base env itself.
        return_transformed_envs: False returns the base env without transforms.
        action_dim_gsde: not supported (gSDE); must be None.
        state_dim_gsde: not supported (gSDE); must be None.
        batch_dims: accepted for torchrl compatibility (transforms handle any batch size).
        obs_norm_state_dict: ``ObservationNorm`` state dict (``loc``, ``scale``, ...).
    """
    if action_dim_gsde is not None or state_dim_gsde is not None:
        raise NotImplementedError("gSDE exploration is not available in rl_trainers.")

    def make_transformed_env(**kwargs: Any) -> Any:
        from rl_trainers.envs import GymEnv

        if custom_env is not None:
            env = custom_env
        elif custom_env_maker is not None:
            env = custom_env_maker(**kwargs)
        else:
            library = cfg_get(cfg, "env_library")
            if library not in ("gym", "gymnasium"):
                raise ValueError(f"cfg.env_library={library!r}: only 'gym'/'gymnasium' exist.")
            from_pixels = bool(cfg_get(cfg, "from_pixels"))
            # as torchrl: a recorded env renders pixels for its VideoRecorder, next to the
            # state observation the policy reads
            records = bool(video_tag) and logger is not None
            env = GymEnv(
                cfg_get(cfg, "env_name"),
                from_pixels=from_pixels or records,
                pixels_only=from_pixels,
                frame_skip=int(cfg_get(cfg, "frame_skip")),
                categorical_action_encoding=bool(cfg_get(cfg, "categorical_action_encoding")),
                **kwargs,
            )
        if not return_transformed_envs:
            return env
        return _add_transforms(
            env, cfg, video_tag, logger, stats, norm_obs_only, obs_norm_state_dict
        )

    if use_env_creator:
        from rl_trainers.envs import EnvCreator

        return EnvCreator(make_transformed_env)
    return make_transformed_env


def _add_transforms(
    env: Any,
    cfg: Any,
    video_tag: str,
    logger: Any,
    stats: dict[str, Any] | None,
    norm_obs_only: bool,
    obs_norm_state_dict: dict[str, Any] | None,
) -> Any:
    from rl_trainers import envs as E

    transforms: list[Any] = []
    if logger is not None and video_tag:
        from rl_trainers.record import VideoRecorder

        transforms.append(VideoRecorder(logger, tag=video_tag))
    if int(cfg_get(cfg, "noops")) > 0:
        transforms.append(E.NoopResetEnv(int(cfg_get(cfg, "noops"))))
    if cfg_get(cfg, "from_pixels"):
        size = int(cfg_get(cfg, "image_size"))
        transforms += [E.ToTensorImage(), E.Resize(size, size)]
        if cfg_get(cfg, "grayscale"):
            transforms.append(E.GrayScale())
        if int(cfg_get(cfg, "catframes")) > 0:
            transforms.append(E.CatFrames(int(cfg_get(cfg, "catframes")), in_keys=["pixels"]))
        transforms.append(_obs_norm("pixels", stats, obs_norm_state_dict))
    elif cfg_get(cfg, "vecnorm"):
        transforms.append(E.VecNorm(in_keys=["observation"]))
    elif stats is not None or obs_norm_state_dict is not None:
        transforms.append(_obs_norm("observation", stats, obs_norm_state_dict))
    if not norm_obs_only:
        scaling = cfg_get(cfg, "reward_scaling")
        if scaling is not None and float(scaling) != 1.0:
            transforms.append(
                E.RewardScaling(loc=float(cfg_get(cfg, "reward_loc")), scale=float(scaling))
            )
        transforms.append(E.RewardSum())
        max_steps = int(cfg_get(cfg, "max_frames_per_traj"))
        transforms.append(E.StepCounter(max_steps if max_steps > 0 else None))
    return E.TransformedEnv(env, E.Compose(*transforms))


def _obs_norm(key: str, stats: dict[str, Any] | None, state_dict: dict[str, Any] | None) -> Any:
    from rl_trainers.envs import ObservationNorm

    if state_dict is not None:
        return ObservationNorm(in_keys=[key], **state_dict)
    if stats is None:
        stats = {"loc": 0.0, "scale": 1.0}
    return ObservationNorm(in_keys=[key], standard_normal=True, **stats)


def parallel_env_constructor(cfg: Any, **kwargs: Any) -> Any:
    """A function building ``cfg.env_per_collector`` envs, or one env when it is 1.

    With several envs the base envs run in a ``ParallelEnv`` and the transforms wrap it
    (``kwargs`` go to :func:`transformed_env_constructor`).
    """
    n = int(cfg_get(cfg, "env_per_collector"))
    if n < 1:
        raise ValueError(f"cfg.env_per_collector must be >= 1, got {n}.")
    kwargs.pop("use_env_creator", None)
    if n == 1:
        return transformed_env_constructor(cfg, use_env_creator=True, **kwargs)
    base = transformed_env_constructor(cfg, return_transformed_envs=False)

    def make_parallel_env() -> Any:
        from rl_trainers.envs import ParallelEnv

        env = ParallelEnv(n, base)
        return transformed_env_constructor(cfg, custom_env=env, batch_dims=1, **kwargs)()

    from rl_trainers.envs import EnvCreator

    return EnvCreator(make_parallel_env)


# ------------------------------------------------------------------ collectors
def _make_collector(
    collector_class: type,
    env_fns: Any,
    env_kwargs: Any,
    policy: Any,
    max_frames_per_traj: int = -1,
    frames_per_batch: int = 200,
    total_frames: int | None = None,
    postproc: Any = None,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    **kwargs: Any,
) -> Any:
    if max_frames_per_traj is not None and max_frames_per_traj > 0:
        raise ValueError(
            f"max_frames_per_traj={max_frames_per_traj}: rl_trainers collectors do not cut "
            "trajectories; add StepCounter(max_steps=...) to the env instead."
        )
    if num_env_per_collector not in (None, 1):
        raise ValueError(
            f"num_env_per_collector={num_env_per_collector}: build batched envs in env_fns "
            "(e.g. parallel_env_constructor) instead."
        )
    if not isinstance(env_fns, (list, tuple)):
        env_fns = [env_fns] * (num_collectors or 1)
    if num_collectors is not None and len(env_fns) != num_collectors:
        raise ValueError(f"{len(env_fns)} env_fns for num_collectors={num_collectors}.")
    if not isinstance(env_kwargs, (list, tuple)):
        env_kwargs = [env_kwargs] * len(env_fns)
    fns = [_bind(fn, kw) for fn, kw in zip(env_fns, env_kwargs)]
    return collector_class(
        fns,
        policy,
        frames_per_batch=frames_per_batch,
        total_frames=-1 if total_frames is None else total_frames,
        postproc=postproc,
        **kwargs,
    )


def _bind(fn: Any, kwargs: dict[str, Any] | None) -> Any:
    if not kwargs:
        return fn
    from rl_trainers.envs import EnvCreator

    return EnvCreator(fn, kwargs)


def sync_async_collector(
    env_fns: Any,
    env_kwargs: Any,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    **kwargs: Any,
) -> Any:
    """A ``MultiaSyncDataCollector`` over ``num_collectors`` copies of ``env_fns``.

    Args:
        env_fns: env factory (or a list, one per collector).
        env_kwargs: keyword arguments of the factories (or a list of them).
        num_env_per_collector: must be 1/None (batch envs inside ``env_fns``).
        num_collectors: number of collector processes.
        **kwargs: ``policy``, ``frames_per_batch``, ``total_frames``, ``postproc`` and the
            other collector arguments.
    """
    from rl_trainers.collectors import MultiaSyncDataCollector

    return _make_collector(
        MultiaSyncDataCollector,
        env_fns,
        env_kwargs,
        num_env_per_collector=num_env_per_collector,
        num_collectors=num_collectors,
        **_policy_first(kwargs),
    )


def sync_sync_collector(
    env_fns: Any,
    env_kwargs: Any,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    **kwargs: Any,
) -> Any:
    """A ``MultiSyncDataCollector`` (or a ``SyncDataCollector`` for one collector).

    Same arguments as :func:`sync_async_collector`.
    """
    from rl_trainers.collectors import MultiSyncDataCollector, SyncDataCollector

    if num_collectors == 1 or (num_collectors is None and not isinstance(env_fns, list)):
        kwargs = _policy_first(kwargs)
        policy = kwargs.pop("policy")
        fn = env_fns[0] if isinstance(env_fns, (list, tuple)) else env_fns
        kw = env_kwargs[0] if isinstance(env_kwargs, (list, tuple)) else env_kwargs
        if num_env_per_collector not in (None, 1):
            raise ValueError(f"num_env_per_collector={num_env_per_collector} is not supported.")
        if kwargs.pop("max_frames_per_traj", -1) not in (None, -1, 0):
            raise ValueError("max_frames_per_traj: add StepCounter(max_steps=...) to the env.")
        total = kwargs.pop("total_frames", None)
        return SyncDataCollector(
            _bind(fn, kw), policy, total_frames=-1 if total is None else total, **kwargs
        )
    return _make_collector(
        MultiSyncDataCollector,
        env_fns,
        env_kwargs,
        num_env_per_collector=num_env_per_collector,
        num_collectors=num_collectors,
        **_policy_first(kwargs),
    )


def _policy_first(kwargs: dict[str, Any]) -> dict[str, Any]:
    if "policy" not in kwargs:
        raise TypeError("The collector helpers need policy=... (None for random actions).")
    return kwargs


def _collector_kwargs(cfg: Any) -> dict[str, Any]:
    workers = int(cfg_get(cfg, "num_workers"))
    per_collector = int(cfg_get(cfg, "env_per_collector"))
    device = _device(cfg_get(cfg, "collector_device"))
    return {
        "frames_per_batch": int(cfg_get(cfg, "frames_per_batch")),
        "total_frames": int(cfg_get(cfg, "total_frames")),
        "num_collectors": max(1, -(-workers // per_collector)),
        "device": device,
        "storing_device": device,
        "init_random_frames": int(cfg_get(cfg, "init_random_frames")),
        "split_trajs": False,
    }


def make_collector_offpolicy(
    make_env: Callable[..., Any],
    actor_model_explore: Any,
    cfg: Any,
    make_env_kwargs: dict[str, Any] | None = None,
) -> Any:
    """The off-policy collector ``cfg`` describes, seeded with ``cfg.seed``.

    Reads ``frames_per_batch``, ``total_frames`` (required), ``async_collection``,
    ``num_workers`` and ``env_per_collector`` (collectors = ceil(workers / per collector)),
    ``collector_device``, ``init_random_frames``, ``multi_step``/``n_steps_return``/``gamma``
    (a ``MultiStep`` postproc) and ``seed``.

    Args:
        make_env: env factory (e.g. from :func:`parallel_env_constructor`).
        actor_model_explore: the exploration policy.
        cfg: the config.
        make_env_kwargs: keyword arguments of ``make_env``.
    """
    from rl_trainers.data import MultiStep

    postproc = None
    if cfg_get(cfg, "multi_step"):
        postproc = MultiStep(
            gamma=float(cfg_get(cfg, "gamma")), n_steps=int(cfg_get(cfg, "n_steps_return"))
        )
    helper = sync_async_collector if cfg_get(cfg, "async_collection") else sync_sync_collector
    collector = helper(
        env_fns=make_env,
        env_kwargs=make_env_kwargs or {},
        policy=actor_model_explore,
        postproc=postproc,
        **_collector_kwargs(cfg),
    )
    seed = cfg_get(cfg, "seed")
    if seed is not None:
        collector.set_seed(int(seed))
    return collector


def make_collector_onpolicy(
    make_env: Callable[..., Any],
    actor_model_explore: Any,
    cfg: Any,
    make_env_kwargs: dict[str, Any] | None = None,
) -> Any:
    """The on-policy collector ``cfg`` describes (synchronous, no random frames, no multi-step).

    Same fields and arguments as :func:`make_collector_offpolicy`.
    """
    kwargs = _collector_kwargs(cfg)
    kwargs["init_random_frames"] = 0
    collector = sync_sync_collector(
        env_fns=make_env,
        env_kwargs=make_env_kwargs or {},
        policy=actor_model_explore,
        postproc=None,
        **kwargs,
    )
    seed = cfg_get(cfg, "seed")
    if seed is not None:
        collector.set_seed(int(seed))
    return collector


# ------------------------------------------------------------------ losses and buffers
def make_target_updater(cfg: Any, loss_module: Any) -> Any:
    """``SoftUpdate``/``HardUpdate`` for a ``"double"`` loss, None for ``"single"``.

    Reads ``loss`` (``"single"``/``"double"``), ``hard_update`` and
    ``value_network_update_interval`` (the hard-update period, or ``eps = 1 - 1/interval``).
    """
    from rl_trainers.objectives import HardUpdate, SoftUpdate

    loss = cfg_get(cfg, "loss")
    interval = int(cfg_get(cfg, "value_network_update_interval"))
    if loss == "double":
        if cfg_get(cfg, "hard_update"):
            return HardUpdate(loss_module, value_network_update_interval=interval)
        return SoftUpdate(loss_module, eps=1.0 - 1.0 / interval)
    if loss != "single":
        raise ValueError(f"cfg.loss={loss!r}; expected 'single' or 'double'.")
    if cfg_get(cfg, "hard_update"):
        raise RuntimeError(
            "cfg.hard_update needs a target network: use cfg.loss='double' or drop hard_update."
        )
    return None


def make_dqn_loss(model: Any, cfg: Any) -> tuple[Any, Any]:
    """``(loss, target updater or None)`` from ``cfg.distributional``, ``loss``,
    ``loss_function`` and ``gamma``.

    ``cfg.distributional`` builds a ``DistributionalDQNLoss`` (C51; ``model`` is then a
    ``DistributionalQValueActor``, and ``loss_function`` is not read: the loss is the
    cross-entropy to the projected target), else a ``DQNLoss``. ``cfg.loss == "double"``
    keeps a target network (``delay_value=True``).
    """
    from rl_trainers.objectives import DistributionalDQNLoss, DQNLoss

    loss = cfg_get(cfg, "loss")
    if loss not in ("single", "double"):
        raise ValueError(f"cfg.loss={loss!r}; expected 'single' or 'double'.")
    if cfg_get(cfg, "distributional"):
        loss_module = DistributionalDQNLoss(model, delay_value=loss == "double")
    else:
        loss_function = cfg_get(cfg, "loss_function")
        if loss_function not in ("l1", "l2", "smooth_l1"):
            raise ValueError(f"cfg.loss_function={loss_function!r}; expected l1, l2 or smooth_l1.")
        loss_module = DQNLoss(model, loss_function=loss_function, delay_value=loss == "double")
    loss_module.make_value_estimator(gamma=float(cfg_get(cfg, "gamma")))
    return loss_module, make_target_updater(cfg, loss_module)


def make_replay_buffer(
    size: Any = 1_000_000,
    batch_size: Any = 256,
    storage: str = "lazy_tensor",
    sampler: str = "random",
    writer: str = "round_robin",
    alpha: float = 0.6,
    beta: float = 0.4,
    scratch_dir: str | None = None,
    *,
    device: Any = None,
    cfg: Any = None,
) -> Any:
    """A ``TensorDictReplayBuffer``; two call forms, one builder.

    - ``make_replay_buffer(size=..., batch_size=..., storage=..., ...)``: the Hydra node's form
      (see :func:`rl_trainers.algorithms.components.make_replay_buffer`).
    - ``make_replay_buffer(device, cfg)``: torchrl's form. Reads ``buffer_size``,
      ``batch_size``, ``prb`` (prioritized, alpha 0.7, beta 0.5 as in torchrl) and
      ``buffer_scratch_dir``; the storage is a ``LazyMemmapStorage``. ``device`` is checked
      and otherwise unused (samples stay on CPU; ``ReplayBufferTrainer(device=...)`` moves them).

    Args:
        size: capacity, or the device in torchrl's form.
        batch_size: transitions per sample, or the config in torchrl's form.
        storage: ``lazy_tensor``, ``lazy_memmap`` or ``list``.
        sampler: ``random``, ``without_replacement`` or ``prioritized``.
        writer: ``round_robin``.
        alpha: priority exponent.
        beta: importance-weight exponent.
        scratch_dir: directory of a ``lazy_memmap`` storage.
        device, cfg: torchrl's form by keyword (``make_replay_buffer(device=..., cfg=...)``).
    """
    if cfg is None and isinstance(size, (str, torch.device)):
        if not isinstance(batch_size, (int, float)):
            device, cfg = size, batch_size
    elif cfg is not None and device is None:
        device = size if isinstance(size, (str, torch.device)) else "cpu"
    if cfg is not None:
        torch.device(device)  # a bad device string fails here, naming itself
        return components.make_replay_buffer(
            size=int(cfg_get(cfg, "buffer_size")),
            batch_size=int(cfg_get(cfg, "batch_size")),
            storage="lazy_memmap",
            sampler="prioritized" if cfg_get(cfg, "prb") else "random",
            alpha=0.7,
            beta=0.5,
            scratch_dir=cfg_get(cfg, "buffer_scratch_dir"),
        )
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(
            f"make_replay_buffer(size={size!r}, ...): size must be an int capacity, or call "
            "make_replay_buffer(device, cfg) with a config object."
        )
    return components.make_replay_buffer(
        size=size,
        batch_size=batch_size,
        storage=storage,
        sampler=sampler,
        writer=writer,
        alpha=alpha,
        beta=beta,
        scratch_dir=scratch_dir,
    )


# ------------------------------------------------------------------ trainer
_OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD, "adamax": torch.optim.Adamax}


def make_trainer(
    collector: Any,
    loss_module: Any,
    recorder: Any = None,
    target_net_updater: Any = None,
    policy_exploration: Any = None,
    replay_buffer: Any = None,
    logger: Any = None,
    cfg: Any = None,
) -> Any:
    """A :class:`~rl_trainers.core.Trainer` wired as torchrl's ``make_trainer`` wires it.

    Optimizer ``cfg.optimizer`` (adam/sgd/adamax) with ``lr``/``weight_decay``, optional
    cosine ``lr_scheduler`` (stepped after each optimisation step); hooks: ``SelectKeys``
    (``selected_keys``), replay buffer extend/sample/priority (``batch_size``) or a
    ``BatchSubSampler`` (``batch_size``, ``sub_traj_len``) without buffer, target updates,
    ``RewardNormalizer`` (``normalize_rewards_online*``), exploration annealing
    (``policy_exploration.step(frames_per_batch)``), collector weight sync, the learning
    rate, evaluation on ``recorder`` (``record_interval``, ``record_frames``), training
    reward and frame count logging. With a ``logger``, ``cfg`` is logged as the run's
    hyper-parameters (``logger.log_hparams``), as torchrl does.
    """
    from rl_trainers.core import Trainer
    from rl_trainers.hooks import (
        BatchSubSampler,
        CountFramesLog,
        LogReward,
        LogValidationReward,
        ReplayBufferTrainer,
        RewardNormalizer,
        SelectKeys,
        UpdateWeights,
    )

    if cfg is None:
        raise ValueError("make_trainer needs cfg (the config the other builders read).")
    name = str(cfg_get(cfg, "optimizer")).lower()
    if name not in _OPTIMIZERS:
        raise ValueError(f"cfg.optimizer={name!r}; expected one of {sorted(_OPTIMIZERS)}.")
    if logger is not None:  # as torchrl's make_trainer: the run's config with its logs
        logger.log_hparams(cfg)
    optimizer = _OPTIMIZERS[name](
        loss_module.parameters(),
        lr=float(cfg_get(cfg, "lr")),
        weight_decay=float(cfg_get(cfg, "weight_decay")),
    )
    frame_skip = int(cfg_get(cfg, "frame_skip"))
    frames_per_batch = int(cfg_get(cfg, "frames_per_batch"))
    total_frames = int(cfg_get(cfg, "total_frames"))
    optim_steps = int(cfg_get(cfg, "optim_steps_per_batch"))
    trainer = Trainer(
        collector=collector,
        total_frames=total_frames * frame_skip,
        frame_skip=frame_skip,
        optim_steps_per_batch=optim_steps,
        loss_module=loss_module,
        optimizer=optimizer,
        logger=logger,
        clip_grad_norm=bool(cfg_get(cfg, "clip_grad_norm")),
        clip_norm=cfg_get(cfg, "clip_norm"),
        log_interval=int(cfg_get(cfg, "log_interval")),
    )
    scheduler = None
    kind = cfg_get(cfg, "lr_scheduler")
    if kind == "cosine":
        steps = max(1, math.ceil(total_frames / frames_per_batch) * optim_steps)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    elif kind not in ("", None, "none", "constant"):
        raise ValueError(f"cfg.lr_scheduler={kind!r}; expected 'cosine' or ''.")
    selected = cfg_get(cfg, "selected_keys")
    if selected:
        SelectKeys(list(selected)).register(trainer)
    batch_size = int(cfg_get(cfg, "batch_size"))
    if replay_buffer is not None:
        ReplayBufferTrainer(replay_buffer, batch_size, flatten_tensordicts=True).register(trainer)
    else:
        # torchrl's default sub_traj_len=-1: whole trajectories of the collected batch.
        sub_traj_len = int(cfg_get(cfg, "sub_traj_len"))
        sampler = BatchSubSampler(batch_size=batch_size, sub_traj_len=sub_traj_len)
        trainer.register_op("process_optim_batch", sampler)
    if scheduler is not None:
        trainer.register_op("post_optim", scheduler.step)
        trainer.register_module("lr_scheduler", scheduler)
    if target_net_updater is not None:
        trainer.register_op("post_optim", target_net_updater.step)
    if cfg_get(cfg, "normalize_rewards_online"):
        RewardNormalizer(
            scale=float(cfg_get(cfg, "normalize_rewards_online_scale")),
            decay=float(cfg_get(cfg, "normalize_rewards_online_decay")),
        ).register(trainer)
    if policy_exploration is not None and callable(getattr(policy_exploration, "step", None)):
        trainer.register_op("post_steps", policy_exploration.step, frames=frames_per_batch)
    if callable(getattr(collector, "update_policy_weights_", None)):
        UpdateWeights(collector, update_weights_interval=1).register(trainer)
    trainer.register_op("post_steps_log", lambda *_: {"lr": optimizer.param_groups[0]["lr"]})
    if recorder is not None:
        if policy_exploration is None:
            raise ValueError("make_trainer: a recorder env needs policy_exploration to evaluate.")
        LogValidationReward(
            record_interval=int(cfg_get(cfg, "record_interval")),
            record_frames=int(cfg_get(cfg, "record_frames")),
            frame_skip=frame_skip,
            policy_exploration=policy_exploration,
            environment=recorder,
            log_pbar=True,
        ).register(trainer)
    LogReward(log_pbar=True).register(trainer)
    CountFramesLog(frame_skip=frame_skip).register(trainer)
    return trainer
