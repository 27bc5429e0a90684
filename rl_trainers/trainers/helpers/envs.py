"""torchrl's module path ``torchrl.trainers.helpers.envs`` (the builders live in
:mod:`rl_trainers.trainers.helpers.builders`)."""

from rl_trainers.trainers.helpers.builders import (
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
