"""torchrl's path ``torchrl.trainers.algorithms.configs.trainers``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.trainers` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_a2c_trainer,
    _make_ppo_trainer,
    _make_reinforce_trainer,
    _make_sac_trainer,
)
from rl_trainers.configs.trainers import (
    A2CLoopConfig,
    A2CTrainerConfig,
    DDPGLoopConfig,
    DDPGTrainerConfig,
    DQNLoopConfig,
    DQNTrainerConfig,
    EvalConfig,
    LoopConfig,
    PGLoopConfig,
    PGTrainerConfig,
    PPOLoopConfig,
    PPOTrainerConfig,
    SACLoopConfig,
    SACTrainerConfig,
    TD3LoopConfig,
    TD3TrainerConfig,
)

__all__ = [
    "A2CLoopConfig",
    "A2CTrainerConfig",
    "DDPGLoopConfig",
    "DDPGTrainerConfig",
    "DQNLoopConfig",
    "DQNTrainerConfig",
    "EvalConfig",
    "LoopConfig",
    "PGLoopConfig",
    "PGTrainerConfig",
    "PPOLoopConfig",
    "PPOTrainerConfig",
    "SACLoopConfig",
    "SACTrainerConfig",
    "TD3LoopConfig",
    "TD3TrainerConfig",
    "_make_a2c_trainer",
    "_make_ppo_trainer",
    "_make_reinforce_trainer",
    "_make_sac_trainer",
]
