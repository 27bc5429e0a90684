"""torchrl's path ``torchrl.trainers.algorithms.configs.objectives``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.objectives`.
"""

from rl_trainers.configs.objectives import (
    A2CLossConfig,
    DDPGLossConfig,
    DQNLossConfig,
    PGLossConfig,
    PPOLossConfig,
    SACLossConfig,
    TD3LossConfig,
)

__all__ = [
    "A2CLossConfig",
    "DDPGLossConfig",
    "DQNLossConfig",
    "PGLossConfig",
    "PPOLossConfig",
    "SACLossConfig",
    "TD3LossConfig",
]
