"""``torchrl.modules.tensordict_module.exploration`` names."""

from rl_trainers.modules.exploration import (
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    EGreedyModule,
    EGreedyWrapper,
    OrnsteinUhlenbeckProcessModule,
)

__all__ = [
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
    "EGreedyModule",
    "EGreedyWrapper",
    "OrnsteinUhlenbeckProcessModule",
]
