"""torchrl's path ``torchrl.trainers.helpers.envs``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.helpers`.
"""

from rl_trainers.compat.torchrl.helpers import (
    correct_for_frame_skip,
    get_stats_random_rollout,
    parallel_env_constructor,
    transformed_env_constructor,
)

__all__ = [
    "correct_for_frame_skip",
    "get_stats_random_rollout",
    "parallel_env_constructor",
    "transformed_env_constructor",
]
