"""Builders of torchrl's schema nodes (:mod:`rl_trainers.compat.torchrl.schema`).

The trainer builders (:func:`build_ppo_trainer`, :func:`build_sac_trainer`) receive their
component nodes un-instantiated and build them in an order that fixes what torchrl's own
builders get wrong: seeding before any network exists, one policy module shared by the
collector and the loss (``weight_update_map``), the optimizer over the loss's parameters.
They then build rl_trainers' ``PPOTrainer``/``SACTrainer`` in torchrl's constructor form
(:mod:`rl_trainers.compat.torchrl.trainers`). The nodes' ``_target_`` paths name
:mod:`rl_trainers.trainers.helpers.torchrl_schema`, an alias of this module.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from omegaconf import DictConfig, ListConfig, OmegaConf

from rl_trainers.algorithms.components import seed_everything
from rl_trainers.compat.torchrl.config_nodes import _as_node, _NodeEnvFactory, _plain
from rl_trainers.errors import ConfigError

__all__ = [
    "build_multi_async_collector",
    "build_multi_sync_collector",
    "build_ppo_loss",
    "build_ppo_trainer",
    "build_replay_buffer",
    "build_round_robin_writer",
    "build_sac_loss",
    "build_sac_trainer",
    "build_sync_collector",
    "build_tanh_normal_model",
    "build_value_model",
]


def _key(key: Any) -> Any:
    """A key given in YAML: a string, or a list naming a nested entry (a tuple)."""
    if isinstance(key, ListConfig | list | tuple):
        return tuple(str(k) for k in key)
    return str(key)


def _keys(keys: Any) -> list[Any]:
    return [_key(k) for k in keys]


def _interaction_type(name: str) -> Any:
    from tensordict.nn import InteractionType

    try:
        return InteractionType[str(name).upper()]
    except KeyError:
        options = [t.name for t in InteractionType]
        raise ConfigError("exploration_type", name, f"one of {options}") from None


def _instantiate(node: Any, **kwargs: Any) -> Any:
    """``node`` instantiated (a node given as a DictConfig or dataclass), else as it is."""
    from hydra.utils import instantiate

    if isinstance(node, DictConfig | dict) and "_target_" in node:
        return instantiate(node, **kwargs)
    if hasattr(node, "_target_"):  # a dataclass node
        return instantiate(node, **kwargs)
    return node


# ----------------------------------------------------------------------------- models


def build_tanh_normal_model(
    network: torch.nn.Module,
    in_keys: Sequence[Any] = ("observation",),
    out_keys: Sequence[Any] = ("action",),
    param_keys: Sequence[Any] = ("loc", "scale"),
    return_log_prob: bool = False,
    extract_normal_params: bool = True,
    scale_mapping: str = "biased_softplus_1.0",
    scale_lb: float = 1e-4,
    low: float | None = None,
    high: float | None = None,
    tanh_loc: bool = False,
    upscale: float = 5.0,
    exploration_type: str = "RANDOM",
    eval_mode: bool = False,
    shared: bool = False,
) -> Any:
    """torchrl's TanhNormal model: ``network`` (its output split into ``param_keys`` by a
    ``NormalParamExtractor``) and a TanhNormal over ``[low, high]`` (None: -1 and 1)."""
    from tensordict.nn import TensorDictModule

    from rl_trainers.modules import NormalParamExtractor, ProbabilisticActor, TanhNormal

    if extract_normal_params:
        network = torch.nn.Sequential(
            network, NormalParamExtractor(scale_mapping=scale_mapping, scale_lb=scale_lb)
        )
    param_keys = _keys(param_keys)
    module = TensorDictModule(network, in_keys=_keys(in_keys), out_keys=param_keys)
    distribution_kwargs = {"tanh_loc": tanh_loc, "upscale": upscale}
    if low is not None:
        distribution_kwargs["low"] = low
    if high is not None:
        distribution_kwargs["high"] = high
    actor = ProbabilisticActor(
        module,
        in_keys=param_keys,
        out_keys=_keys(out_keys),
        distribution_class=TanhNormal,
        distribution_kwargs=distribution_kwargs,
        return_log_prob=return_log_prob,
        default_interaction_type=_interaction_type(exploration_type),
    )
    if shared:
        actor.share_memory()
    if eval_mode:
        actor.eval()
    return actor


def build_value_model(
    network: torch.nn.Module,
    in_keys: Sequence[Any] = ("observation",),
    out_keys: Sequence[Any] = ("state_value",),
    shared: bool = False,
) -> Any:
    """torchrl's value model: ``ValueOperator(network, in_keys, out_keys)``."""
    from rl_trainers.modules import ValueOperator

    model = ValueOperator(network, in_keys=_keys(in_keys), out_keys=_keys(out_keys))
    if shared:
        model.share_memory()
    return model


# ----------------------------------------------------------------------------- collectors


def _collector(collector_class: type, create_env_fn: Any, policy: Any, **kwargs: Any) -> Any:
    node = _as_node(create_env_fn)
    if node is not None:  # a picklable factory: multi-process workers each build their env
        create_env_fn = _NodeEnvFactory(node)
    policy = _instantiate(policy)
    kwargs.pop("track_policy_version", None)  # workers always get the newest weights
    kwargs["exploration_type"] = _interaction_type(kwargs.get("exploration_type", "RANDOM"))
    env_kwargs = _plain(kwargs.pop("create_env_kwargs", None))
    if env_kwargs:
        create_env_fn = functools.partial(create_env_fn, **env_kwargs)
    return collector_class(create_env_fn, policy, **kwargs)


def build_sync_collector(create_env_fn: Any, policy: Any = None, **kwargs: Any) -> Any:
    """torchrl's ``collector/sync`` node: a ``SyncDataCollector``."""
    from rl_trainers.collectors import SyncDataCollector

    return _collector(SyncDataCollector, create_env_fn, policy, **kwargs)


def build_multi_sync_collector(create_env_fn: Any, policy: Any = None, **kwargs: Any) -> Any:
    """torchrl's ``collector/multi_sync`` node: a ``MultiSyncDataCollector``."""
    from rl_trainers.collectors import MultiSyncDataCollector

    return _collector(MultiSyncDataCollector, create_env_fn, policy, **kwargs)


def build_multi_async_collector(create_env_fn: Any, policy: Any = None, **kwargs: Any) -> Any:
    """torchrl's ``collector/multi_async`` node: a ``MultiaSyncDataCollector``."""
    from rl_trainers.collectors import MultiaSyncDataCollector

    return _collector(MultiaSyncDataCollector, create_env_fn, policy, **kwargs)


# ----------------------------------------------------------------------------- buffers


def build_replay_buffer(shared: bool = False, **kwargs: Any) -> Any:
    """torchrl's ``replay_buffer/base`` node: a ``TensorDictReplayBuffer``. ``shared`` is
    accepted: the trainer, in this process, is the buffer's only writer."""
    from rl_trainers.data import TensorDictReplayBuffer

    return TensorDictReplayBuffer(**kwargs)


def build_round_robin_writer(compilable: bool = False) -> Any:
    """torchrl's ``writer/round_robin`` node (``compilable`` accepted: one eager path)."""
    from rl_trainers.data import RoundRobinWriter

    return RoundRobinWriter()


# ----------------------------------------------------------------------------- losses

_PPO_LOSS_ONLY = {
    "clip": {"clip_epsilon"},
    "kl": {"dtarg", "beta", "increment", "decrement", "samples_mc_kl"},
    "ppo": set(),
}


def build_ppo_loss(
    actor_network: Any, critic_network: Any = None, loss_type: str = "clip", **kwargs: Any
) -> Any:
    """torchrl's ``loss/ppo`` node: ClipPPOLoss, KLPENPPOLoss or PPOLoss by ``loss_type``,
    each given only its own options."""
    from rl_trainers.objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss

    classes = {"clip": ClipPPOLoss, "kl": KLPENPPOLoss, "ppo": PPOLoss}
    if loss_type not in classes:
        raise ConfigError("loss.loss_type", loss_type, f"one of {list(classes)}")
    for other, names in _PPO_LOSS_ONLY.items():
        if other != loss_type:
            for name in names:
                kwargs.pop(name, None)
    return classes[loss_type](actor_network, critic_network, **kwargs)


def build_sac_loss(actor_network: Any, qvalue_network: Any, **kwargs: Any) -> Any:
    """torchrl's ``loss/sac`` node: a ``SACLoss``."""
    from rl_trainers.objectives import SACLoss

    return SACLoss(actor_network, qvalue_network, **kwargs)


# ----------------------------------------------------------------------------- trainers


def build_ppo_trainer(**fields: Any) -> Any:
    """torchrl's ``trainer/ppo`` node: rl_trainers' ``PPOTrainer`` in torchrl's form."""
    from rl_trainers.compat.torchrl.trainers import PPOTrainer

    return _build_trainer(PPOTrainer, fields, critic_name="critic_network")


def build_sac_trainer(**fields: Any) -> Any:
    """torchrl's ``trainer/sac`` node: rl_trainers' ``SACTrainer`` in torchrl's form."""
    from rl_trainers.compat.torchrl.trainers import SACTrainer

    updater = fields.pop("target_net_updater", None)
    return _build_trainer(
        SACTrainer, fields, critic_name="qvalue_network", target_net_updater=updater
    )


def _build_trainer(
    trainer_class: type, fields: dict[str, Any], critic_name: str, **partials: Any
) -> Any:
    """The trainer a torchrl trainer node describes (see the module doc for the order)."""
    fields = {k: _plain(v) for k, v in fields.items()}
    if fields.get("seed") is not None:
        seed_everything(int(fields["seed"]))
    fields.pop("create_env_fn", None)
    loss_node = fields.pop("loss_module")
    actor_node = fields.pop("actor_network", None)
    critic_node = fields.pop("critic_network", None)
    loss = _build_loss(loss_node, actor_node, critic_node, critic_name)
    _check_models_fit_env(fields["collector"], loss, critic_name)
    weight_update_map = fields.pop("weight_update_map", None)
    policy = _collector_policy(fields["collector"], loss_node, loss, weight_update_map)
    collector = _instantiate_partial(fields.pop("collector"))
    collector = collector(policy=policy) if policy is not None else collector()
    optimizer = _instantiate_partial(fields.pop("optimizer"))(params=list(loss.parameters()))
    built = {
        "collector": collector,
        "loss_module": loss,
        "optimizer": optimizer,
        "replay_buffer": _instantiate(fields.pop("replay_buffer", None)),
        "logger": _instantiate(fields.pop("logger", None)),
    }
    scheduler = fields.pop("lr_scheduler", None)
    if scheduler is not None:
        built["lr_scheduler"] = _instantiate_partial(scheduler)(optimizer)
    if "gae" in fields:
        built["gae"] = _instantiate(fields.pop("gae"))
    for name, node in partials.items():
        if node is not None:
            built[name] = _instantiate_partial(node)(loss)
    hooks = fields.pop("hooks", None) or []
    if fields.get("total_frames") is None:
        fields["total_frames"] = collector.total_frames
    for name in ("done_key", "terminated_key", "reward_key", "action_key", "observation_key"):
        fields[name] = _key(fields[name])
    if "episode_reward_key" in fields:
        fields["episode_reward_key"] = _key(fields["episode_reward_key"])
    if weight_update_map is not None:
        fields["weight_update_map"] = dict(weight_update_map)
    trainer = trainer_class(**fields, **built)
    for hook in hooks:
        _instantiate(hook).register(trainer)
    return trainer


def _build_loss(loss_node: Any, actor_node: Any, critic_node: Any, critic_name: str) -> Any:
    """The loss, with the trainer node's ``actor_network``/``critic_network`` where the
    loss node has none (torchrl passes them to a partial loss)."""
    node = _as_node(loss_node)
    if node is None:
        return loss_node
    if actor_node is not None and node.get("actor_network") is None:
        node.actor_network = actor_node
    if critic_node is not None and node.get(critic_name) is None:
        node[critic_name] = critic_node
    return _instantiate(node)


def _check_models_fit_env(collector_node: Any, loss: Any, critic_name: str) -> None:
    """Run the loss's actor (and PPO's critic) once on a reset of the collector's env, in
    this process: sizes that do not fit the env (torchrl's recipes write ``in_features``
    and ``out_features`` by hand) raise one ConfigError here, not a shape error in a
    collector worker; lazy layers are initialised before the policy is sent to workers."""
    node = (
        _as_node(collector_node.get("create_env_fn")) if isinstance(collector_node, dict) else None
    )
    if node is None:
        return
    env = _NodeEnvFactory(node)()
    try:
        batch = env.reset()
        modules = [("actor_network", loss.actor_network)]
        if critic_name == "critic_network" and getattr(loss, "critic_network", None) is not None:
            modules.append(("critic_network", loss.critic_network))
        for name, module in modules:
            try:
                with torch.no_grad():
                    module(batch.clone())
            except RuntimeError as err:
                keys = [k for k in getattr(module, "in_keys", []) if k in batch.keys(True)]
                sizes = {k: tuple(batch.get(k).shape[batch.batch_dims :]) for k in keys}
                raise ConfigError(
                    f"loss.{name}",
                    type(module).__name__,
                    f"does not fit the env's {sizes} ({str(err).splitlines()[0]}): "
                    "set its network's in_features/out_features to the env's sizes",
                ) from None
    finally:
        env.close()


def _collector_policy(
    collector_node: Any, loss_node: Any, loss: Any, weight_update_map: dict | None
) -> Any:
    """The module the collector acts with: the trainer's module ``weight_update_map`` names
    for ``policy`` (torchrl syncs its weights there; here it is the same module), else the
    loss's actor when the collector's policy node is the loss's actor node; else None (the
    collector builds its own)."""
    if weight_update_map:
        unsupported = [dest for dest in weight_update_map if dest != "policy"]
        if unsupported:
            raise ConfigError(
                "trainer.weight_update_map",
                dict(weight_update_map),
                f"destinations other than 'policy' ({unsupported}) are not supported: "
                "drop them (the collector's policy is the only module it syncs)",
            )
        source = str(weight_update_map["policy"])
        module = _attribute_path({"loss_module": loss}, source)
        if module is None:
            raise ConfigError(
                "trainer.weight_update_map.policy",
                source,
                "a module path of the trainer, e.g. loss_module.actor_network",
            )
        return module
    policy_node = collector_node.get("policy") if isinstance(collector_node, dict) else None
    actor_node = loss_node.get("actor_network") if isinstance(loss_node, dict) else None
    if policy_node is not None and policy_node == actor_node:
        return loss.actor_network
    return None


def _attribute_path(roots: dict[str, Any], path: str) -> Any:
    head, *rest = path.split(".")
    obj = roots.get(head)
    for name in rest:
        obj = getattr(obj, name, None)
    return obj


def _instantiate_partial(node: Any) -> Any:
    """A callable building what the config ``node`` describes, given the arguments it lacks
    (the optimizer its parameters, a target updater its loss...)."""
    from hydra.utils import instantiate

    return instantiate(OmegaConf.create(node) if isinstance(node, dict) else node, _partial_=True)
