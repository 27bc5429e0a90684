"""Dataclass config nodes, one module per group, registered in Hydra's ConfigStore here.

Importing this package registers every node, so a ``@hydra.main`` entry point can compose
``configs/*.yaml`` on top of them. Nothing else in rl_trainers imports this package except
entry points and helpers.
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigStore

from .collectors import (
    MultiaSyncDataCollectorConfig,
    MultiSyncDataCollectorConfig,
    SyncDataCollectorConfig,
)
from .common import (
    ROOT_CONFIG_RESOLVER,
    ComposedConfig,
    config_field,
    field_help,
    register_root_resolver,
)
from .data import (
    ImmutableDatasetWriterConfig,
    LazyMemmapStorageConfig,
    LazyTensorStorageConfig,
    ListStorageConfig,
    PrioritizedSamplerConfig,
    PrioritizedSliceSamplerConfig,
    RandomSamplerConfig,
    ReplayBufferConfig,
    RoundRobinWriterConfig,
    SamplerWithoutReplacementConfig,
    SliceSamplerConfig,
    SliceSamplerWithoutReplacementConfig,
    TensorDictMaxValueWriterConfig,
    TensorDictReplayBufferConfig,
    TensorDictRoundRobinWriterConfig,
    TensorStorageConfig,
)
from .envs import (
    ENV_PRESET_ACTIONS,
    GymEnvConfig,
)
from .logging import (
    CSVLoggerConfig,
    LoggerConfig,
    MLFlowLoggerConfig,
    TensorboardLoggerConfig,
    WandbLoggerConfig,
)
from .modules import (
    ActorCriticNetworkConfig,
    ActorQValueModelConfig,
    ActorValueModelConfig,
    CategoricalModelConfig,
    ConvActorCriticNetworkConfig,
    ConvNetConfig,
    DeterministicActorQValueModelConfig,
    DeterministicModelConfig,
    DQNModelConfig,
    MLPConfig,
    NormalModelConfig,
    PolicyModelConfig,
    QValueModelConfig,
    TanhNormalModelConfig,
    ValueModelConfig,
)
from .objectives import (
    A2CLossConfig,
    DDPGLossConfig,
    DQNLossConfig,
    PGLossConfig,
    PPOLossConfig,
    SACLossConfig,
    TD3LossConfig,
)
from .optim import (
    AdamConfig,
    AdamWConfig,
    LRSchedulerConfig,
    OptimizerConfig,
    RMSpropConfig,
    SGDConfig,
)
from .trainers import (
    A2CLoopConfig,
    A2CTrainerConfig,
    DDPGLoopConfig,
    DDPGTrainerConfig,
    DQNLoopConfig,
    DQNTrainerConfig,
    EvalConfig,
    LoopConfig,
    PGLoopConfig,
    PGTrainerConfig,
    PPOLoopConfig,
    PPOTrainerConfig,
    RootConfig,
    SACLoopConfig,
    SACTrainerConfig,
    TD3LoopConfig,
    TD3TrainerConfig,
)
from .transforms import (
    BinarizeRewardConfig,
    CatFramesConfig,
    CatTensorsConfig,
    CenterCropConfig,
    ClipTransformConfig,
    DoubleToFloatConfig,
    EndOfLifeTransformConfig,
    FlattenObservationConfig,
    FrameSkipTransformConfig,
    GrayScaleConfig,
    InitTrackerConfig,
    NoopResetEnvConfig,
    ObservationNormConfig,
    PermuteTransformConfig,
    ResizeConfig,
    RewardClippingConfig,
    RewardScalingConfig,
    RewardSumConfig,
    SignTransformConfig,
    StepCounterConfig,
    TargetReturnConfig,
    ToTensorImageConfig,
    TrajCounterConfig,
    UnsqueezeTransformConfig,
    VecNormConfig,
)

#: Options of each config group that users switch with ``group=option`` on the command line.
GROUP_OPTIONS: dict[str, dict[str, type]] = {
    "collector": {
        "sync_schema": SyncDataCollectorConfig,
        "multi_sync_schema": MultiSyncDataCollectorConfig,
        "multi_async_schema": MultiaSyncDataCollectorConfig,
    },
    "logger": {
        "csv_schema": CSVLoggerConfig,
        "mlflow_schema": MLFlowLoggerConfig,
        "tensorboard_schema": TensorboardLoggerConfig,
        "wandb_schema": WandbLoggerConfig,
    },
    "network": {
        "mlp_schema": ActorCriticNetworkConfig,
        "convnet": ConvActorCriticNetworkConfig,
    },
    "model/policy": {
        "auto": PolicyModelConfig,
        "tanh_normal": TanhNormalModelConfig,
        "normal": NormalModelConfig,
        "categorical": CategoricalModelConfig,
    },
    "optimizer": {
        "adam_schema": AdamConfig,
        "adamw_schema": AdamWConfig,
        "sgd_schema": SGDConfig,
        "rmsprop_schema": RMSpropConfig,
    },
}
# An option named ``<name>_schema`` is reached through ``configs/<group>/<name>.yaml``
# (``defaults: [<name>_schema]``): torchrl's recipes, which lack those files, get torchrl's
# node of that name instead (``rl_trainers.compat.torchrl.schema.SHARED_OPTION_NAMES``).

#: The root schema of each algorithm's primary config (configs/<algorithm>_trainer.yaml).
ROOT_SCHEMAS: dict[str, type] = {
    "ppo_trainer_schema": PPOTrainerConfig,
    "sac_trainer_schema": SACTrainerConfig,
    "dqn_trainer_schema": DQNTrainerConfig,
    "td3_trainer_schema": TD3TrainerConfig,
    "ddpg_trainer_schema": DDPGTrainerConfig,
    "a2c_trainer_schema": A2CTrainerConfig,
    "pg_trainer_schema": PGTrainerConfig,
}


def register_configs() -> None:
    """Store every root schema and group option in Hydra's ConfigStore, and register the
    ``${rl_trainers.root_config:}`` resolver of the ``trainer`` node (idempotent)."""
    register_root_resolver()
    store = ConfigStore.instance()
    for name, node in ROOT_SCHEMAS.items():
        store.store(name=name, node=node)
    for group, options in GROUP_OPTIONS.items():
        for name, node in options.items():
            store.store(group=group, name=name, node=node)


def instantiate_trainer(cfg: Any) -> Any:
    """The trainer ``cfg.trainer`` describes: ``hydra.utils.instantiate(cfg.trainer)``
    (torchrl's name; works for torchrl's recipes and rl_trainers' root configs alike)."""
    from hydra.utils import instantiate

    return instantiate(cfg.trainer)


register_configs()


def register_help_pages() -> None:
    """Store a short ``hydra/help`` option per algorithm, which its primary YAML selects
    (``override hydra/help: ppo_trainer``), so a script that imports only this package
    (torchrl's ``from ...configs import *``) composes those YAMLs too; the app
    (:mod:`rl_trainers.app.help_page`) replaces each with the full page."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for schema_name in ROOT_SCHEMAS:
        algorithm = schema_name.removesuffix("_schema")
        name = algorithm.removesuffix("_trainer")
        node = {
            "app_name": algorithm,
            "header": "",
            "footer": "",
            "template": f"{algorithm}: rl-trainers {name} --help lists its groups and fields.",
        }
        store.store(group="hydra/help", name=algorithm, node=node)


register_help_pages()

__all__ = [
    "A2CLoopConfig",
    "A2CLossConfig",
    "A2CTrainerConfig",
    "ActorCriticNetworkConfig",
    "ActorQValueModelConfig",
    "ActorValueModelConfig",
    "AdamConfig",
    "AdamWConfig",
    "BinarizeRewardConfig",
    "CSVLoggerConfig",
    "CatFramesConfig",
    "CatTensorsConfig",
    "CategoricalModelConfig",
    "CenterCropConfig",
    "ClipTransformConfig",
    "ComposedConfig",
    "ConvActorCriticNetworkConfig",
    "ConvNetConfig",
    "DDPGLoopConfig",
    "DDPGLossConfig",
    "DDPGTrainerConfig",
    "DQNLoopConfig",
    "DQNLossConfig",
    "DQNModelConfig",
    "DQNTrainerConfig",
    "DeterministicActorQValueModelConfig",
    "DeterministicModelConfig",
    "DoubleToFloatConfig",
    "ENV_PRESET_ACTIONS",
    "EndOfLifeTransformConfig",
    "EvalConfig",
    "FlattenObservationConfig",
    "FrameSkipTransformConfig",
    "GROUP_OPTIONS",
    "GrayScaleConfig",
    "GymEnvConfig",
    "ImmutableDatasetWriterConfig",
    "InitTrackerConfig",
    "LRSchedulerConfig",
    "LazyMemmapStorageConfig",
    "LazyTensorStorageConfig",
    "ListStorageConfig",
    "LoggerConfig",
    "LoopConfig",
    "MLFlowLoggerConfig",
    "MLPConfig",
    "MultiSyncDataCollectorConfig",
    "MultiaSyncDataCollectorConfig",
    "NoopResetEnvConfig",
    "ObservationNormConfig",
    "OptimizerConfig",
    "PGLoopConfig",
    "PGLossConfig",
    "PGTrainerConfig",
    "PPOLoopConfig",
    "PPOLossConfig",
    "PPOTrainerConfig",
    "PermuteTransformConfig",
    "PolicyModelConfig",
    "PrioritizedSamplerConfig",
    "PrioritizedSliceSamplerConfig",
    "QValueModelConfig",
    "RootConfig",
    "RMSpropConfig",
    "ROOT_CONFIG_RESOLVER",
    "ROOT_SCHEMAS",
    "RandomSamplerConfig",
    "ReplayBufferConfig",
    "ResizeConfig",
    "RewardClippingConfig",
    "RewardScalingConfig",
    "RewardSumConfig",
    "RoundRobinWriterConfig",
    "SACLoopConfig",
    "SACLossConfig",
    "SACTrainerConfig",
    "SGDConfig",
    "SamplerWithoutReplacementConfig",
    "SignTransformConfig",
    "SliceSamplerConfig",
    "SliceSamplerWithoutReplacementConfig",
    "StepCounterConfig",
    "SyncDataCollectorConfig",
    "TD3LoopConfig",
    "TD3LossConfig",
    "TD3TrainerConfig",
    "NormalModelConfig",
    "TanhNormalModelConfig",
    "TargetReturnConfig",
    "TensorDictMaxValueWriterConfig",
    "TensorDictReplayBufferConfig",
    "TensorDictRoundRobinWriterConfig",
    "TensorStorageConfig",
    "TensorboardLoggerConfig",
    "ToTensorImageConfig",
    "TrajCounterConfig",
    "UnsqueezeTransformConfig",
    "ValueModelConfig",
    "VecNormConfig",
    "WandbLoggerConfig",
    "config_field",
    "field_help",
    "instantiate_trainer",
    "register_configs",
    "register_root_resolver",
]
