"""torchrl's path ``torchrl.trainers.algorithms.configs.logging``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.logging` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    CSVLogger,
    TensorboardLogger,
    WandbLogger,
    _make_wandb_logger,
)
from rl_trainers.configs.logging import (
    LOGGER_ON_ERROR,
    CSVLoggerConfig,
    LoggerConfig,
    MLFlowLoggerConfig,
    TensorboardLoggerConfig,
    WandbLoggerConfig,
)

__all__ = [
    "CSVLogger",
    "CSVLoggerConfig",
    "LOGGER_ON_ERROR",
    "LoggerConfig",
    "MLFlowLoggerConfig",
    "TensorboardLogger",
    "TensorboardLoggerConfig",
    "WandbLogger",
    "WandbLoggerConfig",
    "_make_wandb_logger",
]
