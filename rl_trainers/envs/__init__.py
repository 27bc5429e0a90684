"""Environments: specs, gymnasium envs (single and batched), transforms and utilities."""

from rl_trainers.envs.batched_envs import ParallelEnv, SerialEnv
from rl_trainers.envs.common import EnvBase
from rl_trainers.envs.libs.gym import GymEnv, GymWrapper
from rl_trainers.envs.specs import (
    Binary,
    BinaryDiscreteTensorSpec,
    Bounded,
    BoundedTensorSpec,
    Categorical,
    Composite,
    CompositeSpec,
    DiscreteTensorSpec,
    MultiCategorical,
    MultiDiscreteTensorSpec,
    OneHot,
    OneHotDiscreteTensorSpec,
    TensorSpec,
    Unbounded,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
    specs_from_gym_space,
)
from rl_trainers.envs.utils import (
    ExplorationType,
    check_env_specs,
    exploration_type,
    set_exploration_type,
    step_mdp,
)

__all__ = [
    "EnvBase",
    "GymEnv",
    "GymWrapper",
    "SerialEnv",
    "ParallelEnv",
    "TensorSpec",
    "Unbounded",
    "Bounded",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "Binary",
    "Composite",
    "specs_from_gym_space",
    "BoundedTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
    "OneHotDiscreteTensorSpec",
    "DiscreteTensorSpec",
    "MultiDiscreteTensorSpec",
    "BinaryDiscreteTensorSpec",
    "CompositeSpec",
    "step_mdp",
    "set_exploration_type",
    "ExplorationType",
    "exploration_type",
    "check_env_specs",
]
