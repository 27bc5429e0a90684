"""torchrl's path ``torchrl.trainers.algorithms.configs.envs``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.envs`,
:mod:`rl_trainers.compat.torchrl.schema` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    make_batched_env,
    make_env,
    make_transformed_env,
)
from rl_trainers.compat.torchrl.schema import (
    BatchedEnvConfig,
    TransformedEnvConfig,
)
from rl_trainers.configs.envs import (
    ENV_PRESET_ACTIONS,
    GymEnvConfig,
)

__all__ = [
    "BatchedEnvConfig",
    "ENV_PRESET_ACTIONS",
    "GymEnvConfig",
    "TransformedEnvConfig",
    "make_batched_env",
    "make_env",
    "make_transformed_env",
]
