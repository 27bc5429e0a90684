"""Loggers: a common :class:`Logger` template over CSV, TensorBoard, W&B and MLflow.

The backends' own packages (tensorboard, wandb, mlflow) are imported only when a logger
that needs them is created.
"""

from .common import Logger, flatten_hparams
from .csv import CSVLogger
from .guard import GuardedLogger, LoggerBackendError, guard_logger
from .mlflow import MLFlowLogger
from .tensorboard import TensorboardLogger
from .utils import LOGGER_TYPES, generate_exp_name, get_logger
from .wandb import WandbLogger

__all__ = [
    "Logger",
    "CSVLogger",
    "GuardedLogger",
    "LoggerBackendError",
    "guard_logger",
    "TensorboardLogger",
    "WandbLogger",
    "MLFlowLogger",
    "get_logger",
    "generate_exp_name",
    "flatten_hparams",
    "LOGGER_TYPES",
]
