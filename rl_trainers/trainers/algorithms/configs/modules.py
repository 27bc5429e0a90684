"""torchrl's path ``torchrl.trainers.algorithms.configs.modules``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.modules`.
"""

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
]
