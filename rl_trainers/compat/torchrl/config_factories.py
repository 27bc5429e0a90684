"""The factory functions torchrl's config nodes name in their ``_target_``, at torchrl's names.

torchrl's nodes (``torchrl/trainers/algorithms/configs/*.py``) target module-level factories
of their own module, e.g. ``torchrl.trainers.algorithms.configs.transforms.make_noop_reset_env``
or ``...configs.objectives._make_ppo_loss``, and YAML files written against torchrl name them
too. With the prefix changed to ``rl_trainers``, those paths are the alias modules of
:mod:`rl_trainers.compat.torchrl.aliases`, which re-export the functions here (the table
:data:`TORCHRL_FACTORIES`). Each builds rl_trainers' object from the same fields:

* like torchrl's, they take what Hydra gives after instantiating the node's children: built
  objects, or ``functools.partial`` objects for children marked ``_partial_: true`` (a loss
  given its networks, an optimizer its parameters...), and nested keys written as YAML lists;
* the trainer factories also take the un-instantiated nodes that rl_trainers' own trainer
  nodes pass (``_recursive_: false``) and then build as ``trainer/ppo``/``trainer/sac`` do.

torchrl factories of components rl_trainers does not have (``_make_expand_as_transform``,
``_make_qmixer_loss``, ``_make_trackio_logger``, the DQN/DDPG/TD3/IQL/CQL and
offline-to-online trainer factories) are not here; ``docs/porting.md`` lists them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig

# torchrl's ``configs.envs`` factories of the batched and the transformed env are the
# builders of rl_trainers' own torchrl-named nodes (re-exported, see TORCHRL_FACTORIES)
from rl_trainers.compat.torchrl.config_nodes import (  # noqa: F401
    make_batched_env,
    make_transformed_env,
)
from rl_trainers.errors import ConfigError

#: the factories of each torchrl config module (``configs.<module>``), re-exported there
TORCHRL_FACTORIES: dict[str, tuple[str, ...]] = {
    "transforms": ("make_noop_reset_env", "make_compose", "_make_reward_sum_transform"),
    "envs": ("make_env", "make_batched_env", "make_transformed_env"),
    "envs_libs": ("make_gym_env",),
    "modules": (
        "_make_tensordict_module",
        "_make_tensordict_sequential",
        "_make_tanh_normal_model",
        "_make_value_model",
        "_make_tanh_module",
        "_make_additive_gaussian_module",
        "_make_qvalue_model",
    ),
    "collectors": ("_make_sync_collector_with_cross_references",),
    "objectives": (
        "_make_ppo_loss",
        "_make_sac_loss",
        "_make_a2c_loss",
        "_make_reinforce_loss",
        "_make_td3_loss",
        "_make_ddpg_loss",
        "_make_dqn_loss",
        "_make_iql_loss",
        "_make_cql_loss",
        "_make_gae",
    ),
    "logging": ("_make_wandb_logger", "CSVLogger", "TensorboardLogger", "WandbLogger"),
    "hooks": ("_make_log_scalar",),
    "trainers": (
        "_make_ppo_trainer",
        "_make_a2c_trainer",
        "_make_reinforce_trainer",
        "_make_sac_trainer",
    ),
}

__all__ = sorted({name for names in TORCHRL_FACTORIES.values() for name in names})

#: torchrl's first logging nodes targeted the logger classes at ``configs.logging``
_LOGGER_CLASSES = ("CSVLogger", "TensorboardLogger", "WandbLogger")


def __getattr__(name: str) -> Any:
    """The logger classes, imported when first asked for (they import torch)."""
    if name in _LOGGER_CLASSES:
        from rl_trainers.record import loggers

        return getattr(loggers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- helpers


def _key(key: Any) -> Any:
    """A key given in YAML: a string, or a list naming a nested entry (a tuple)."""
    if isinstance(key, ListConfig | list | tuple):
        return tuple(str(k) for k in key)
    return key if key is None else str(key)


def _keys(keys: Any) -> Any:
    """A key or a list of keys given in YAML (a string stays one key; None stays None)."""
    if keys is None or isinstance(keys, str):
        return keys
    return [_key(k) for k in keys]


def _built(value: Any, *args: Any, **kwargs: Any) -> Any:
    """``value`` as an object: a partial (a child marked ``_partial_: true``) called with
    ``args``, a config node (``_target_``) instantiated, anything else as it is."""
    if isinstance(value, functools.partial):
        return value(*args, **kwargs)
    if isinstance(value, DictConfig | dict) and "_target_" in value:
        from hydra.utils import instantiate

        return instantiate(value, *args, **kwargs)
    return value


def _only_default(factory: str, name: str, value: Any, default: Any) -> None:
    """torchrl options rl_trainers does not have: accepted at torchrl's default only."""
    if value != default:
        raise ConfigError(
            f"{factory}.{name}", value, f"not supported here; leave it out (torchrl's {default!r})"
        )


# ----------------------------------------------------------------------------- transforms


def make_noop_reset_env(noops: int = 30, random: bool = True) -> Any:
    """torchrl's ``NoopResetEnvConfig`` factory: ``NoopResetEnv(noops, random)``."""
    from rl_trainers.envs import NoopResetEnv

    return NoopResetEnv(noops=noops, random=random)


def make_compose(transforms: Sequence[Any] | None = None) -> Any:
    """torchrl's ``ComposeConfig`` factory: ``Compose(*transforms)`` (transform nodes left
    un-instantiated are built first)."""
    from rl_trainers.compat.torchrl.config_nodes import make_compose as compose

    return compose([_built(t) for t in transforms or ()])


def _make_reward_sum_transform(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``RewardSumConfig`` factory: ``RewardSum`` with its keys read from YAML."""
    from rl_trainers.envs import RewardSum

    return RewardSum(
        in_keys=_keys(kwargs.pop("in_keys", None)),
        out_keys=_keys(kwargs.pop("out_keys", None)),
        reset_keys=_keys(kwargs.pop("reset_keys", None)),
    )


# ----------------------------------------------------------------------------- envs


def make_gym_env(
    env_name: str,
    backend: str = "gymnasium",
    from_pixels: bool = False,
    double_to_float: bool = False,
    **kwargs: Any,
) -> Any:
    """torchrl's ``GymEnvConfig`` factory (``configs.envs_libs``): a ``GymEnv`` (gymnasium
    only), followed by ``DoubleToFloat`` on the observation when ``double_to_float``.

    ``kwargs`` are ``GymEnv``'s (``num_envs``, ``frame_skip``, ``pixels_only``, ``device``,
    ``categorical_action_encoding``, gymnasium's ``make`` arguments, e.g. ``render_mode``);
    torchrl's ``num_workers``, ``batch_size``, ``allow_done_after_reset``,
    ``convert_actions_to_numpy``, ``missing_obs_value`` and ``disable_env_checker`` are
    accepted at their defaults (``allow_done_after_reset`` at either value; batch copies
    with ``configs.envs.make_batched_env``).
    """
    from rl_trainers.envs import DoubleToFloat, GymEnv, set_gym_backend
    from rl_trainers.envs.libs.gym import TORCHRL_GYM_KEYWORDS, torchrl_keyword_refusal

    for name in TORCHRL_GYM_KEYWORDS.keys() & kwargs.keys():
        refusal = torchrl_keyword_refusal(name, kwargs[name])
        if refusal is not None:
            raise ConfigError(f"make_gym_env.{name}", kwargs[name], f"{refusal}; leave it out")
    for name, default in (("num_workers", 1), ("disable_env_checker", None)):
        _only_default("make_gym_env", name, kwargs.pop(name, default), default)
    if kwargs.get("render_mode") is None:
        kwargs.pop("render_mode", None)
    if not kwargs.get("num_envs"):
        kwargs.pop("num_envs", None)
    with set_gym_backend(backend):
        env = GymEnv(env_name, from_pixels=from_pixels, **kwargs)
    if double_to_float:
        env = env.append_transform(DoubleToFloat(in_keys=["observation"]))
    return env


def make_env(
    env_name: str,
    backend: str = "gymnasium",
    from_pixels: bool = False,
    double_to_float: bool = False,
) -> Any:
    """torchrl's first ``GymEnvConfig`` factory (``configs.envs``): as :func:`make_gym_env`."""
    return make_gym_env(
        env_name, backend=backend, from_pixels=from_pixels, double_to_float=double_to_float
    )


# ----------------------------------------------------------------------------- modules


def _make_tensordict_module(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``TensorDictModuleConfig`` factory: ``TensorDictModule(module, ...)``."""
    from tensordict.nn import TensorDictModule

    module = _built(kwargs.pop("module"))
    shared = kwargs.pop("shared", False)
    for name in ("in_keys", "out_keys"):
        if name in kwargs:
            kwargs[name] = _keys(kwargs[name])
    out = TensorDictModule(module, **kwargs)
    return out.share_memory() if shared else out


def _make_tensordict_sequential(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``TensorDictSequentialConfig`` factory: a ``TensorDictSequential`` of the
    ``modules`` (a list, or a mapping of names to modules)."""
    from tensordict.nn import TensorDictSequential

    modules = kwargs.pop("modules")
    shared = kwargs.pop("shared", False)
    kwargs.pop("in_keys", None)
    kwargs.pop("out_keys", None)
    if isinstance(modules, Mapping):
        modules = {name: _built(m) for name, m in modules.items()}
    elif isinstance(modules, ListConfig | list | tuple):
        modules = [_built(m) for m in modules]
    else:
        raise ConfigError("modules", type(modules).__name__, "a list or a mapping of modules")
    if kwargs.get("selected_out_keys") is not None:
        kwargs["selected_out_keys"] = _keys(kwargs["selected_out_keys"])
    if isinstance(modules, dict):
        out = TensorDictSequential(modules, **kwargs)
    else:
        out = TensorDictSequential(*modules, **kwargs)
    return out.share_memory() if shared else out


def _make_tanh_normal_model(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``TanhNormalModelConfig`` factory: the ``model/tanh_normal`` builder."""
    from rl_trainers.compat.torchrl.schema_builders import build_tanh_normal_model

    kwargs["network"] = _built(kwargs["network"])
    return build_tanh_normal_model(*args, **kwargs)


def _make_value_model(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``ValueModelConfig`` factory: the ``model/value`` builder."""
    from rl_trainers.compat.torchrl.schema_builders import build_value_model

    kwargs["network"] = _built(kwargs["network"])
    return build_value_model(*args, **kwargs)


def _make_tanh_module(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``TanhModuleConfig`` factory: a ``TanhModule``."""
    from rl_trainers.modules import TanhModule

    kwargs.pop("shared", None)
    for name in ("in_keys", "out_keys"):
        if name in kwargs:
            kwargs[name] = _keys(kwargs[name])
    return TanhModule(**kwargs)


def _make_additive_gaussian_module(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``AdditiveGaussianModuleConfig`` factory: an ``AdditiveGaussianModule``."""
    from rl_trainers.modules import AdditiveGaussianModule

    for name in ("shared", "in_keys", "out_keys"):
        kwargs.pop(name, None)
    if "action_key" in kwargs:
        kwargs["action_key"] = _key(kwargs["action_key"])
    return AdditiveGaussianModule(**kwargs)


def _make_qvalue_model(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``QValueModelConfig`` factory: a ``QValueActor`` over ``network``; its
    ``action_key`` and ``chosen_action_value_key`` are accepted at their defaults."""
    from rl_trainers.modules import QValueActor

    network = _built(kwargs.pop("network"))
    shared = kwargs.pop("shared", False)
    kwargs.pop("out_keys", None)
    _only_default("_make_qvalue_model", "action_key", _key(kwargs.pop("action_key", None)), None)
    chosen = _key(kwargs.pop("chosen_action_value_key", None))
    _only_default("_make_qvalue_model", "chosen_action_value_key", chosen, None)
    if kwargs.get("in_keys") is not None:
        kwargs["in_keys"] = _keys(kwargs["in_keys"])
    for name in ("action_value_key", "action_mask_key"):
        if kwargs.get(name) is not None:
            kwargs[name] = _key(kwargs[name])
    actor = QValueActor(network, **kwargs)
    return actor.share_memory() if shared else actor


# ----------------------------------------------------------------------------- collectors


def _make_sync_collector_with_cross_references(*args: Any, **kwargs: Any) -> Any:
    """torchrl's first ``SyncDataCollectorConfig`` factory: the ``collector/sync`` builder
    (an env node or factory as ``create_env_fn``, a policy or policy node)."""
    from rl_trainers.compat.torchrl.schema_builders import build_sync_collector

    kwargs.pop("_parent_config", None)
    _only_default("collector", "policy_factory", kwargs.pop("policy_factory", None), None)
    create_env_fn = kwargs.pop("create_env_fn")
    return build_sync_collector(create_env_fn, kwargs.pop("policy", None), **kwargs)


# ----------------------------------------------------------------------------- objectives


def _networks(kwargs: dict[str, Any], *names: str) -> None:
    for name in names:
        if kwargs.get(name) is not None:
            kwargs[name] = _built(kwargs[name])


def _with_gamma(loss: Any, gamma: float | None) -> Any:
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return loss


#: options of one PPO loss class that the others do not take (torchrl's factory drops them)
_PPO_ONLY = {
    "clip": {"clip_epsilon"},
    "kl": {"dtarg", "beta", "increment", "decrement", "samples_mc_kl"},
    "ppo": {
        "log_explained_variance",
        "advantage_key",
        "value_target_key",
        "value_key",
        "functional",
        "actor",
        "critic",
    },
}


def _make_ppo_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``PPOLossConfig`` factory: ClipPPOLoss, KLPENPPOLoss or PPOLoss by
    ``loss_type``, each given its own options only; ``gamma`` sets its value estimator."""
    from rl_trainers.compat.torchrl.schema_builders import build_ppo_loss

    loss_type = kwargs.pop("loss_type", "clip")
    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "critic_network", "advantage_norm")
    for other, names in _PPO_ONLY.items():
        if other != loss_type:
            for name in names - _PPO_ONLY.get(loss_type, set()):
                kwargs.pop(name, None)
    for name in ("actor", "critic"):  # torchrl's old names of the networks
        if kwargs.get(name) is None:
            kwargs.pop(name, None)
    if isinstance(kwargs.get("clip_epsilon"), ListConfig | list):
        kwargs["clip_epsilon"] = tuple(kwargs["clip_epsilon"])
    actor = kwargs.pop("actor_network", None)
    critic = kwargs.pop("critic_network", None)
    return _with_gamma(build_ppo_loss(actor, critic, loss_type, *args, **kwargs), gamma)


def _make_sac_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``SACLossConfig`` factory: ``SACLoss``, or ``DiscreteSACLoss`` with
    ``discrete=True``, each given its own options only."""
    from rl_trainers.objectives import DiscreteSACLoss, SACLoss

    discrete = kwargs.pop("discrete", False)
    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "qvalue_network", "value_network")
    if discrete:
        for name in ("value_network", "action_spec", "delay_actor", "delay_value"):
            kwargs.pop(name, None)
        loss = DiscreteSACLoss(*args, **kwargs)
    else:
        for name in ("action_space", "num_actions", "target_entropy_weight", "delay_value"):
            kwargs.pop(name, None)
        if kwargs.get("value_network") is None:
            kwargs.pop("value_network", None)
        loss = SACLoss(*args, **kwargs)
    return _with_gamma(loss, gamma)


def _make_on_policy_loss(loss_class: type, args: tuple, kwargs: dict[str, Any]) -> Any:
    gamma = kwargs.pop("gamma", None)
    keys = {name: _key(kwargs.pop(f"{name}_key", None)) for name in ("advantage", "value_target")}
    _networks(kwargs, "actor_network", "critic_network", "advantage_norm")
    loss = _with_gamma(loss_class(*args, **kwargs), gamma)
    keys = {name: key for name, key in keys.items() if key is not None}
    return loss.set_keys(**keys) if keys else loss


def _make_a2c_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``A2CLossConfig`` factory: an ``A2CLoss``; ``gamma`` sets its value
    estimator, ``advantage_key``/``value_target_key`` its keys."""
    from rl_trainers.objectives import A2CLoss

    return _make_on_policy_loss(A2CLoss, args, kwargs)


def _make_reinforce_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``ReinforceLossConfig`` factory: a ``ReinforceLoss`` (as ``_make_a2c_loss``)."""
    from rl_trainers.objectives import ReinforceLoss

    return _make_on_policy_loss(ReinforceLoss, args, kwargs)


def _make_td3_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``TD3LossConfig`` factory: a ``TD3Loss``."""
    from rl_trainers.objectives import TD3Loss

    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "qvalue_network")
    return _with_gamma(TD3Loss(*args, **kwargs), gamma)


def _make_ddpg_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``DDPGLossConfig`` factory: a ``DDPGLoss``."""
    from rl_trainers.objectives import DDPGLoss

    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "value_network")
    return _with_gamma(DDPGLoss(*args, **kwargs), gamma)


def _make_cql_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``CQLLossConfig`` factory: a ``CQLLoss``."""
    from rl_trainers.objectives import CQLLoss

    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "qvalue_network")
    return _with_gamma(CQLLoss(*args, **kwargs), gamma)


def _make_iql_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``IQLLossConfig`` factory: ``IQLLoss``, or ``DiscreteIQLLoss`` with
    ``discrete=True``."""
    from rl_trainers.objectives import DiscreteIQLLoss, IQLLoss

    discrete = kwargs.pop("discrete", False)
    gamma = kwargs.pop("gamma", None)
    _networks(kwargs, "actor_network", "qvalue_network", "value_network")
    if discrete:
        kwargs.pop("deactivate_vmap", None)
        loss = DiscreteIQLLoss(*args, **kwargs)
    else:
        kwargs.pop("action_space", None)
        loss = IQLLoss(*args, **kwargs)
    return _with_gamma(loss, gamma)


#: DQNLoss entries torchrl's node renames through ``<name>_key`` fields
_DQN_KEYS = (
    "action",
    "action_value",
    "value",
    "reward",
    "done",
    "terminated",
    "priority",
    "priority_weight",
)


def _make_dqn_loss(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``DQNLossConfig`` factory: a ``DQNLoss``; its ``<name>_key`` fields go to
    ``set_keys`` (the names ``set_keys`` takes here, see docs/porting.md)."""
    from rl_trainers.objectives import DQNLoss

    keys = {name: _key(kwargs.pop(f"{name}_key", None)) for name in _DQN_KEYS}
    gamma = kwargs.pop("gamma", None)
    if kwargs.get("use_prioritized_weights", "auto") == "auto":
        kwargs.pop("use_prioritized_weights", None)
    _networks(kwargs, "value_network")
    loss = _with_gamma(DQNLoss(*args, **kwargs), gamma)
    keys = {name: key for name, key in keys.items() if key is not None}
    return loss.set_keys(**keys) if keys else loss


def _make_gae(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``GAEConfig`` factory: a ``GAE``; ``group_key`` (multi-agent groups) is
    accepted as None only."""
    from rl_trainers.objectives.value import GAE

    _only_default("_make_gae", "group_key", _key(kwargs.pop("group_key", None)), None)
    _networks(kwargs, "value_network")
    return GAE(*args, **kwargs)


# ----------------------------------------------------------------------------- logging


def _make_wandb_logger(
    exp_name: str,
    offline: bool = False,
    save_dir: str | None = None,
    id: str | None = None,  # noqa: A002 - torchrl's name
    project: str | None = None,
    video_fps: int = 32,
    log_env_packages: bool = True,
    log_dir: str | None = None,
    wandb_kwargs: dict[str, Any] | None = None,
    service_backend: str = "direct",
    service_backend_options: dict[str, Any] | None = None,
) -> Any:
    """torchrl's ``WandbLoggerConfig`` factory: a ``WandbLogger``; ``wandb_kwargs`` go to
    ``wandb.init``. ``log_env_packages`` is accepted (no package list is logged) and
    ``service_backend`` takes ``direct`` only (the logger runs in the training process)."""
    from rl_trainers.record.loggers import WandbLogger

    _only_default("_make_wandb_logger", "service_backend", service_backend, "direct")
    if service_backend_options:
        _only_default(
            "_make_wandb_logger", "service_backend_options", dict(service_backend_options), {}
        )
    return WandbLogger(
        exp_name=exp_name,
        offline=offline,
        save_dir=save_dir if save_dir is not None else log_dir,
        id=id,
        project=project,
        video_fps=video_fps,
        **dict(wandb_kwargs or {}),
    )


# ----------------------------------------------------------------------------- hooks


def _make_log_scalar(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``LogScalarConfig`` factory: a ``LogScalar`` hook, its key read from YAML."""
    from rl_trainers.trainers import LogScalar

    if args:
        args = (_key(args[0]), *args[1:])
    elif "key" in kwargs:
        kwargs["key"] = _key(kwargs["key"])
    return LogScalar(*args, **kwargs)


# ----------------------------------------------------------------------------- trainers

#: torchrl trainer options with no rl_trainers counterpart, accepted at these values only
_TRAINER_DEFAULTS_ONLY = {
    "learner_backend": "local",
    "learner_backend_options": None,
    "learner_poll_interval": 0.05,
}


def _holds_nodes(fields: dict[str, Any]) -> bool:
    """Whether the trainer node was not instantiated recursively (``_recursive_: false``,
    as rl_trainers' ``trainer/ppo`` and ``trainer/sac`` nodes): its components are nodes."""
    return any(
        isinstance(fields.get(name), DictConfig | dict) for name in ("collector", "loss_module")
    )


def _make_trainer(trainer_class: type, critic_name: str, fields: dict[str, Any]) -> Any:
    """A torchrl-form trainer from components Hydra built (objects or partials), as
    torchrl's factories do: the loss given the trainer's networks, the collector its
    defaults, the optimizer the loss's parameters, then the hooks registered."""
    from rl_trainers.algorithms.components import seed_everything

    for name, default in _TRAINER_DEFAULTS_ONLY.items():
        _only_default(trainer_class.__name__, name, fields.pop(name, default), default)
    if fields.get("seed") is not None:
        seed_everything(int(fields["seed"]))
    fields.pop("create_env_fn", None)
    networks = {
        "actor_network": _built(fields.pop("actor_network", None)),
        critic_name: _built(fields.pop("critic_network", None)),
    }
    loss = fields.pop("loss_module")
    if isinstance(loss, functools.partial):
        loss = loss(**{k: v for k, v in networks.items() if v is not None})
    collector = _built(fields.pop("collector"))
    optimizer = _built(fields.pop("optimizer"), params=list(loss.parameters()))
    built = {"collector": collector, "loss_module": loss, "optimizer": optimizer}
    if fields.get("lr_scheduler") is not None:
        built["lr_scheduler"] = _built(fields.pop("lr_scheduler"), optimizer)
    if fields.get("gae") is not None:
        built["gae"] = _built(fields.pop("gae"))
    if fields.get("target_net_updater") is not None:
        built["target_net_updater"] = _built(fields.pop("target_net_updater"), loss)
    hooks = fields.pop("hooks", None) or []
    if fields.get("total_frames") is None:
        fields["total_frames"] = collector.total_frames
    for name in ("done_key", "terminated_key", "reward_key", "action_key", "observation_key"):
        if name in fields:
            fields[name] = _key(fields[name])
    if "episode_reward_key" in fields:
        fields["episode_reward_key"] = _key(fields["episode_reward_key"])
    if fields.get("weight_update_map") is not None:
        fields["weight_update_map"] = dict(fields["weight_update_map"])
    fields.setdefault("optim_steps_per_batch", 1)  # torchrl's form (and its default)
    trainer = trainer_class(**fields, **built)
    for hook in hooks:
        _built(hook).register(trainer)
    return trainer


def _make_ppo_trainer(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``PPOTrainerConfig`` factory: rl_trainers' ``PPOTrainer`` in torchrl's form."""
    from rl_trainers.compat.torchrl import schema_builders, trainers

    if _holds_nodes(kwargs):
        return schema_builders.build_ppo_trainer(**kwargs)
    return _make_trainer(trainers.PPOTrainer, "critic_network", kwargs)


def _make_a2c_trainer(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``A2CTrainerConfig`` factory: rl_trainers' ``A2CTrainer`` in torchrl's form."""
    from rl_trainers.compat.torchrl import trainers

    return _make_trainer(trainers.A2CTrainer, "critic_network", kwargs)


def _make_reinforce_trainer(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``ReinforceTrainerConfig`` factory: rl_trainers' ``ReinforceTrainer`` in
    torchrl's form."""
    from rl_trainers.compat.torchrl import trainers

    return _make_trainer(trainers.ReinforceTrainer, "critic_network", kwargs)


def _make_sac_trainer(*args: Any, **kwargs: Any) -> Any:
    """torchrl's ``SACTrainerConfig`` factory: rl_trainers' ``SACTrainer`` in torchrl's form
    (the trainer's ``critic_network`` is the loss's ``qvalue_network``)."""
    from rl_trainers.compat.torchrl import schema_builders, trainers

    if _holds_nodes(kwargs):
        return schema_builders.build_sac_trainer(**kwargs)
    return _make_trainer(trainers.SACTrainer, "qvalue_network", kwargs)
