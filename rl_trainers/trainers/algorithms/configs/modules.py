"""torchrl's path ``torchrl.trainers.algorithms.configs.modules``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.modules` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_additive_gaussian_module,
    _make_qvalue_model,
    _make_tanh_module,
    _make_tanh_normal_model,
    _make_tensordict_module,
    _make_tensordict_sequential,
    _make_value_model,
)
from rl_trainers.configs.modules import (
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

__all__ = [
    "ActorCriticNetworkConfig",
    "ActorQValueModelConfig",
    "ActorValueModelConfig",
    "CategoricalModelConfig",
    "ConvActorCriticNetworkConfig",
    "ConvNetConfig",
    "DQNModelConfig",
    "DeterministicActorQValueModelConfig",
    "DeterministicModelConfig",
    "MLPConfig",
    "NormalModelConfig",
    "PolicyModelConfig",
    "QValueModelConfig",
    "TanhNormalModelConfig",
    "ValueModelConfig",
    "_make_additive_gaussian_module",
    "_make_qvalue_model",
    "_make_tanh_module",
    "_make_tanh_normal_model",
    "_make_tensordict_module",
    "_make_tensordict_sequential",
    "_make_value_model",
]
