"""the ``_target_`` path of torchrl's config nodes' builders: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.config_nodes`.
"""

from rl_trainers.compat.torchrl.config_nodes import (
    make_batched_env,
    make_compose,
    make_transformed_env,
)

__all__ = [
    "make_batched_env",
    "make_compose",
    "make_transformed_env",
]
