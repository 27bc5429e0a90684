"""The factories torchrl's config nodes name in their ``_target_``
(``torchrl.trainers.algorithms.configs.<module>.<factory>``) resolve with the prefix changed
to ``rl_trainers`` and build rl_trainers' objects from the same fields, given as Hydra gives
them: built children, partial children, nested keys as lists."""

from __future__ import annotations

import functools
import importlib

import pytest
import torch
from hydra._internal.utils import _locate
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_trainers.compat.torchrl import config_factories
from rl_trainers.compat.torchrl.config_factories import TORCHRL_FACTORIES
from rl_trainers.envs import (
    Compose,
    DoubleToFloat,
    GymEnv,
    NoopResetEnv,
    RewardSum,
    TransformedEnv,
)
from rl_trainers.modules import (
    MLP,
    AdditiveGaussianModule,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    ValueOperator,
)
from rl_trainers.objectives import (
    A2CLoss,
    ClipPPOLoss,
    DQNLoss,
    KLPENPPOLoss,
    SACLoss,
    TD3Loss,
)
from rl_trainers.objectives.value import GAE
from rl_trainers.trainers import LogScalar

CONFIGS = "rl_trainers.trainers.algorithms.configs"

#: torchrl's ``_target_`` paths whose object exists here under another module path, with
#: the prefix changed (the factories are checked below, from their table)
CLASS_TARGETS = [
    "rl_trainers.envs.transforms.transforms.NoopResetEnv",
    "rl_trainers.envs.transforms.transforms.Compose",
    "rl_trainers.envs.transforms.transforms.DoubleToFloat",
    "rl_trainers.envs.transforms.gym_transforms.EndOfLifeTransform",
    "rl_trainers.envs.TransformedEnv",
    "rl_trainers.modules.models.utils.SquashDims",
    "rl_trainers.collectors.Collector",
    "rl_trainers.collectors.AsyncCollector",
    "rl_trainers.collectors.MultiSyncCollector",
    "rl_trainers.collectors.MultiAsyncCollector",
    "rl_trainers.collectors.collectors.SyncDataCollector",
    "rl_trainers.objectives.utils.SoftUpdate",
    "rl_trainers.record.loggers.csv.CSVLogger",
    "rl_trainers.trainers.trainers.CountFramesLog",
    f"{CONFIGS}.logging.WandbLogger",
]


@pytest.mark.parametrize("target", CLASS_TARGETS)
def test_torchrl_class_targets_resolve(target):
    assert callable(_locate(target))


@pytest.mark.parametrize(
    ("module", "name"),
    [(module, name) for module, names in TORCHRL_FACTORIES.items() for name in names],
)
def test_each_factory_is_at_torchrls_config_module_path(module, name):
    alias = importlib.import_module(f"{CONFIGS}.{module}")
    assert _locate(f"{CONFIGS}.{module}.{name}") is getattr(config_factories, name)
    assert name in alias.__all__


def test_specs_import_from_torchrls_tensor_specs_module():
    import rl_trainers.data as data
    from rl_trainers.data import tensor_specs

    for name in tensor_specs.__all__:
        assert getattr(tensor_specs, name) is getattr(data, name)
    assert tensor_specs.Bounded(-1.0, 1.0, shape=(2,)).shape == (2,)


# ----------------------------------------------------------------------------- transforms


def test_noop_reset_and_compose_factories_as_torchrl_yaml_names_them():
    node = OmegaConf.create(
        {
            "_target_": f"{CONFIGS}.transforms.make_compose",
            "transforms": [
                {"_target_": f"{CONFIGS}.transforms.make_noop_reset_env", "noops": 4},
                {
                    "_target_": "rl_trainers.envs.transforms.transforms.DoubleToFloat",
                    "in_keys": ["observation"],
                },
            ],
        }
    )
    compose = instantiate(node)
    assert isinstance(compose, Compose)
    noop, cast = list(compose)
    assert isinstance(noop, NoopResetEnv) and noop.noops == 4 and noop.random is True
    assert isinstance(cast, DoubleToFloat)
    assert len(instantiate({"_target_": f"{CONFIGS}.transforms.make_compose"})) == 0


def test_reward_sum_factory_reads_nested_keys():
    transform = instantiate(
        {
            "_target_": f"{CONFIGS}.transforms._make_reward_sum_transform",
            "in_keys": [["next", "reward"]],
            "out_keys": ["reward_sum"],
        }
    )
    assert isinstance(transform, RewardSum)
    assert transform.in_keys == [("next", "reward")] and transform.out_keys == ["reward_sum"]


# ----------------------------------------------------------------------------- envs


@pytest.mark.parametrize("module", ["envs.make_env", "envs_libs.make_gym_env"])
def test_gym_env_factories_build_gym_envs(module):
    env = instantiate(
        {"_target_": f"{CONFIGS}.{module}", "env_name": "Pendulum-v1", "double_to_float": True}
    )
    try:
        assert isinstance(env, TransformedEnv) and isinstance(env.base_env, GymEnv)
        assert isinstance(env.transform, DoubleToFloat)
        assert env.reset()["observation"].shape[-1] == 3
    finally:
        env.close()


def test_gym_env_factory_refuses_torchrl_options_it_does_not_have():
    node = {"_target_": f"{CONFIGS}.envs_libs.make_gym_env", "env_name": "CartPole-v1"}
    with pytest.raises(InstantiationException, match="num_workers=4 is invalid"):
        instantiate({**node, "num_workers": 4})
    with pytest.raises(InstantiationException, match="batch_size=.*the batch is set by num_envs"):
        instantiate({**node, "batch_size": [2]})
    env = instantiate({**node, "batch_size": [], "convert_actions_to_numpy": True})
    assert env.batch_size == ()


def test_transformed_env_of_a_base_env_given_by_its_fields_is_a_gym_env():
    # torchrl's config_with_transforms.yaml: base_env: {env_name: ..., _partial_: true}
    make = instantiate(
        {
            "_target_": f"{CONFIGS}.envs.make_transformed_env",
            "base_env": {"env_name": "CartPole-v1", "_partial_": True},
            "transform": {"_target_": f"{CONFIGS}.transforms.make_noop_reset_env", "noops": 3},
            "_partial_": True,
        }
    )
    env = make()
    try:
        assert isinstance(env.transform, NoopResetEnv)
        assert env.reset()["observation"].shape[-1] == 4
    finally:
        env.close()


# ----------------------------------------------------------------------------- modules


def _mlp(in_features: int, out_features: int) -> dict:
    return {
        "_target_": "rl_trainers.modules.MLP",
        "in_features": in_features,
        "out_features": out_features,
        "num_cells": [8],
    }


def test_model_factories_take_built_or_partial_networks():
    partial_net = {**_mlp(3, 2), "_partial_": True}  # a network node marked partial
    actor = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_tanh_normal_model",
            "network": partial_net,
            "return_log_prob": True,
        }
    )
    assert isinstance(actor, ProbabilisticActor)
    out = actor(TensorDict({"observation": torch.randn(5, 3)}, [5]))
    assert out["action"].shape == (5, 1) and bool((out["action"].abs() <= 1).all())
    value = instantiate({"_target_": f"{CONFIGS}.modules._make_value_model", "network": _mlp(3, 1)})
    assert isinstance(value, ValueOperator)
    assert value(TensorDict({"observation": torch.randn(5, 3)}, [5]))["state_value"].shape == (
        5,
        1,
    )


def test_tensordict_module_factories():
    module = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_tensordict_module",
            "module": _mlp(3, 4),
            "in_keys": ["observation"],
            "out_keys": [["hidden", "h"]],
        }
    )
    assert isinstance(module, TensorDictModule) and module.out_keys == [("hidden", "h")]
    sequence = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_tensordict_sequential",
            "modules": [
                {
                    "_target_": f"{CONFIGS}.modules._make_tensordict_module",
                    "module": _mlp(3, 4),
                    "in_keys": ["observation"],
                    "out_keys": ["hidden"],
                },
                {
                    "_target_": f"{CONFIGS}.modules._make_tensordict_module",
                    "module": _mlp(4, 2),
                    "in_keys": ["hidden"],
                    "out_keys": ["out"],
                },
            ],
        }
    )
    assert isinstance(sequence, TensorDictSequential)
    assert sequence(TensorDict({"observation": torch.randn(2, 3)}, [2]))["out"].shape == (2, 2)


def test_qvalue_tanh_and_gaussian_module_factories():
    from rl_trainers.data import Bounded

    qvalue = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_qvalue_model",
            "network": _mlp(4, 2),
            "in_keys": ["observation"],
            "action_space": "one_hot",
        }
    )
    assert isinstance(qvalue, QValueActor)
    td = qvalue(TensorDict({"observation": torch.randn(3, 4)}, [3]))
    assert bool((td["action"].sum(-1) == 1).all()) and td["action"].shape == (3, 2)
    tanh = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_tanh_module",
            "in_keys": ["raw"],
            "out_keys": ["action"],
            "low": -2.0,
            "high": 2.0,
        }
    )
    assert isinstance(tanh, TanhModule)
    out = tanh(TensorDict({"raw": torch.full((2, 1), 50.0)}, [2]))["action"]
    assert torch.allclose(out, torch.full((2, 1), 2.0))
    noise = instantiate(
        {"_target_": f"{CONFIGS}.modules._make_additive_gaussian_module", "sigma_init": 0.5},
        spec=Bounded(-1.0, 1.0, shape=(1,)),
    )
    assert isinstance(noise, AdditiveGaussianModule)


# ----------------------------------------------------------------------------- objectives


def _actor_critic():
    actor = instantiate(
        {
            "_target_": f"{CONFIGS}.modules._make_tanh_normal_model",
            "network": _mlp(3, 2),
            "return_log_prob": True,
        }
    )
    critic = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[8]), ["observation"])
    return actor, critic


def test_ppo_loss_factory_gives_each_loss_type_its_own_options():
    actor, critic = _actor_critic()
    node = {
        "_target_": f"{CONFIGS}.objectives._make_ppo_loss",
        "clip_epsilon": 0.1,
        "dtarg": 0.02,  # KL-only: dropped for the clipped loss
        "gamma": 0.9,
        "_partial_": True,
    }
    clip = instantiate(node)(actor_network=actor, critic_network=critic)
    assert isinstance(clip, ClipPPOLoss)
    assert clip.value_estimator.gamma == pytest.approx(0.9)
    kl = instantiate({**node, "loss_type": "kl"})(actor_network=actor, critic_network=critic)
    assert isinstance(kl, KLPENPPOLoss)


def test_on_policy_loss_factory_renames_keys():
    actor, critic = _actor_critic()
    loss = instantiate(
        {"_target_": f"{CONFIGS}.objectives._make_a2c_loss", "advantage_key": "adv"},
        actor_network=actor,
        critic_network=critic,
    )
    assert isinstance(loss, A2CLoss) and loss.tensor_keys.advantage == "adv"


def test_sac_and_dqn_loss_factories():
    actor, _ = _actor_critic()
    qvalue = ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[8]), ["observation", "action"]
    )
    sac = instantiate(
        {"_target_": f"{CONFIGS}.objectives._make_sac_loss", "delay_value": True},
        actor_network=actor,
        qvalue_network=qvalue,
    )
    assert isinstance(sac, SACLoss)
    q_actor = QValueActor(
        MLP(in_features=3, out_features=2, num_cells=[8]), ["observation"], action_space="one_hot"
    )
    dqn = instantiate(
        {"_target_": f"{CONFIGS}.objectives._make_dqn_loss", "gamma": 0.5, "done_key": "eol"},
        value_network=q_actor,
        action_space="one_hot",
    )
    assert isinstance(dqn, DQNLoss) and dqn.tensor_keys.done == "eol"
    assert dqn.value_estimator.gamma == pytest.approx(0.5)


def test_td3_loss_and_gae_factories():
    from rl_trainers.data import Bounded
    from rl_trainers.modules import Actor

    actor = Actor(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"])
    qvalue = ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[8]), ["observation", "action"]
    )
    td3 = instantiate(
        {"_target_": f"{CONFIGS}.objectives._make_td3_loss", "gamma": 0.8},
        actor_network=actor,
        qvalue_network=qvalue,
        action_spec=Bounded(-1.0, 1.0, shape=(1,)),
    )
    assert isinstance(td3, TD3Loss) and td3.value_estimator.gamma == pytest.approx(0.8)
    _, critic = _actor_critic()
    gae = instantiate(
        {"_target_": f"{CONFIGS}.objectives._make_gae", "gamma": 0.9, "lmbda": 0.8},
        value_network=critic,
    )
    assert isinstance(gae, GAE)
    with pytest.raises(InstantiationException, match="group_key"):
        instantiate(
            {"_target_": f"{CONFIGS}.objectives._make_gae", "gamma": 0.9, "lmbda": 0.8},
            value_network=critic,
            group_key="agents",
        )


# ----------------------------------------------------------------------------- logging, hooks


def test_wandb_logger_factory(tmp_path):
    from rl_trainers.record.loggers import WandbLogger

    logger = instantiate(
        {
            "_target_": f"{CONFIGS}.logging._make_wandb_logger",
            "exp_name": "factory",
            "offline": True,
            "log_dir": str(tmp_path),
            "wandb_kwargs": {"tags": ["a"]},
        }
    )
    assert isinstance(logger, WandbLogger) and logger.save_dir == str(tmp_path)
    with pytest.raises(InstantiationException, match="service_backend='ray' is invalid"):
        instantiate(
            {
                "_target_": f"{CONFIGS}.logging._make_wandb_logger",
                "exp_name": "factory",
                "service_backend": "ray",
            }
        )


def test_log_scalar_factory_reads_a_nested_key():
    hook = instantiate(
        {
            "_target_": f"{CONFIGS}.hooks._make_log_scalar",
            "key": ["next", "reward"],
            "logname": "r",
        }
    )
    assert isinstance(hook, LogScalar) and hook.key == ("next", "reward")


# ----------------------------------------------------------------------------- trainers


def test_ppo_trainer_factory_from_recursively_built_components(tmp_path):
    """A trainer node written against torchrl's factory, without ``_recursive_: false``:
    Hydra builds the children (partials where marked), the factory wires them."""
    from rl_trainers.trainers.algorithms import PPOTrainer

    policy = {
        "_target_": f"{CONFIGS}.modules._make_tanh_normal_model",
        "network": _mlp(3, 2),
        "return_log_prob": True,
        "low": -2.0,
        "high": 2.0,
    }
    node = OmegaConf.create(
        {
            "_target_": f"{CONFIGS}.trainers._make_ppo_trainer",
            "collector": {
                "_target_": "rl_trainers.collectors.Collector",
                "_partial_": True,
                "policy": policy,  # a copy of the actor: weight_update_map syncs it
                "create_env_fn": {
                    "_target_": f"{CONFIGS}.envs_libs.make_gym_env",
                    "env_name": "Pendulum-v1",
                    "_partial_": True,
                },
                "frames_per_batch": 32,
                "total_frames": 64,
            },
            "loss_module": {"_target_": f"{CONFIGS}.objectives._make_ppo_loss", "_partial_": True},
            "actor_network": {**policy, "_partial_": True},
            "critic_network": {
                "_target_": f"{CONFIGS}.modules._make_value_model",
                "network": _mlp(3, 1),
                "_partial_": True,
            },
            "optimizer": {"_target_": "torch.optim.Adam", "lr": 1e-3, "_partial_": True},
            "total_frames": None,
            "optim_steps_per_batch": 2,
            "num_epochs": 1,
            "progress_bar": False,
            "seed": 3,
            "logger": None,
            "save_trainer_file": None,
            "replay_buffer": None,
            "weight_update_map": {"policy": "loss_module.actor_network"},
            "hooks": [{"_target_": f"{CONFIGS}.hooks._make_log_scalar", "key": ["next", "reward"]}],
        }
    )
    trainer = instantiate(node)
    try:
        assert isinstance(trainer, PPOTrainer)
        assert trainer.total_frames == 64  # the collector's, as torchrl's factory reads it
        actor = trainer.loss_module.actor_network
        assert trainer.collector.policy is not actor  # two copies, as in torchrl
        before = [p.detach().clone() for p in actor.parameters()]
        trainer.train()
        assert trainer.collected_frames == 64
        assert any(p.ne(b).any() for p, b in zip(actor.parameters(), before))
        for mine, collectors in zip(actor.parameters(), trainer.collector.policy.parameters()):
            assert torch.equal(mine, collectors)  # synced after the last batch
    finally:
        trainer.collector.shutdown()


def test_trainer_factory_refuses_a_learner_backend():
    from rl_trainers.errors import ConfigError

    fields = {"collector": functools.partial(list), "loss_module": None, "learner_backend": "ray"}
    with pytest.raises(ConfigError, match="learner_backend='ray' is invalid"):
        config_factories._make_sac_trainer(**fields)
