"""torchrl's path ``torchrl.trainers.algorithms.configs.objectives``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.objectives` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_a2c_loss,
    _make_cql_loss,
    _make_ddpg_loss,
    _make_dqn_loss,
    _make_gae,
    _make_iql_loss,
    _make_ppo_loss,
    _make_reinforce_loss,
    _make_sac_loss,
    _make_td3_loss,
)
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
    "_make_a2c_loss",
    "_make_cql_loss",
    "_make_ddpg_loss",
    "_make_dqn_loss",
    "_make_gae",
    "_make_iql_loss",
    "_make_ppo_loss",
    "_make_reinforce_loss",
    "_make_sac_loss",
    "_make_td3_loss",
]
