"""Logger factory and experiment-name helper."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from .common import Logger

__all__ = ["get_logger", "generate_exp_name", "LOGGER_TYPES"]

LOGGER_TYPES = ("csv", "tensorboard", "wandb", "mlflow")


def generate_exp_name(model_name: str, experiment_name: str) -> str:
    """Builds a unique experiment name: model, experiment, date-time and a short uuid.

    Args:
        model_name: e.g. ``"PPO"``.
        experiment_name: e.g. ``"cartpole"``.

    Examples:
        >>> generate_exp_name("PPO", "cartpole")  # doctest: +SKIP
        'PPO_cartpole_25_01_31-14_02_59_1f2e3d4c'
    """
    stamp = datetime.now().strftime("%y_%m_%d-%H_%M_%S")
    return "_".join([str(model_name), str(experiment_name), stamp, uuid.uuid4().hex[:8]])


def get_logger(
    logger_type: str, logger_name: str, experiment_name: str, **kwargs: Any
) -> Logger | None:
    """Gets a logger instance of the provided ``logger_type``.

    Args:
        logger_type: one of ``"csv"``, ``"tensorboard"``, ``"wandb"``, ``"mlflow"``; an
            empty string or ``None`` returns ``None`` (no logging).
        logger_name: the root directory of the logs (for mlflow a directory or a tracking
            URI).
        experiment_name: the experiment name.
        **kwargs: forwarded to the logger's constructor.

    Raises:
        ValueError: for an unknown ``logger_type``.
    """
    if logger_type in ("", None):
        return None
    if logger_type == "csv":
        from .csv import CSVLogger

        return CSVLogger(exp_name=experiment_name, log_dir=logger_name, **kwargs)
    if logger_type == "tensorboard":
        from .tensorboard import TensorboardLogger

        return TensorboardLogger(exp_name=experiment_name, log_dir=logger_name, **kwargs)
    if logger_type == "wandb":
        from .wandb import WandbLogger

        kwargs.setdefault("save_dir", logger_name)
        return WandbLogger(exp_name=experiment_name, **kwargs)
    if logger_type == "mlflow":
        from .mlflow import MLFlowLogger

        return MLFlowLogger(exp_name=experiment_name, tracking_uri=logger_name, **kwargs)
    raise ValueError(
        f"Unknown logger_type {logger_type!r}; expected one of {', '.join(LOGGER_TYPES)} "
        "(or '' / None for no logger)."
    )
