"""torchrl's path ``torchrl.trainers.algorithms.configs.envs_libs``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.envs_libs` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    make_gym_env,
)
from rl_trainers.configs.envs_libs import (
    GymEnvConfig,
)

__all__ = [
    "GymEnvConfig",
    "make_gym_env",
]
