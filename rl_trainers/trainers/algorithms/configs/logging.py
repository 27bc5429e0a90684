"""torchrl's path ``torchrl.trainers.algorithms.configs.logging``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.logging`.
"""

from rl_trainers.configs.logging import (
    LOGGER_ON_ERROR,
    CSVLoggerConfig,
    LoggerConfig,
    MLFlowLoggerConfig,
    TensorboardLoggerConfig,
    WandbLoggerConfig,
)

__all__ = [
    "CSVLoggerConfig",
    "LOGGER_ON_ERROR",
    "LoggerConfig",
    "MLFlowLoggerConfig",
    "TensorboardLoggerConfig",
    "WandbLoggerConfig",
]
