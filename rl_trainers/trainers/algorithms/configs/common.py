"""torchrl's path ``torchrl.trainers.algorithms.configs.common``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.common`.
"""

from rl_trainers.configs.common import (
    ROOT_CONFIG_INTERPOLATION,
    ROOT_CONFIG_RESOLVER,
    ComposedConfig,
    config_field,
    field_help,
    register_root_resolver,
)

__all__ = [
    "ComposedConfig",
    "ROOT_CONFIG_INTERPOLATION",
    "ROOT_CONFIG_RESOLVER",
    "config_field",
    "field_help",
    "register_root_resolver",
]
