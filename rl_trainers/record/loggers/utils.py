"""Logger factory and experiment-name helper."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from .common import Logger

__all__ = ["get_logger", "generate_exp_name", "LOGGER_TYPES"]

LOGGER_TYPES = ("csv", "tensorboard", "wandb", "mlflow")


def generate_exp_name(model_name: str, experiment_name: str) -> str:
    """Builds a unique experiment name, laid out as torchrl's: model, experiment, the first
    8 characters of a uuid4, then the date-time.

    Args:
        model_name: e.g. ``"PPO"``.
        experiment_name: e.g. ``"cartpole"``.

    Examples:
        >>> generate_exp_name("PPO", "cartpole")  # doctest: +SKIP
        'PPO_cartpole_1f2e3d4c_25_01_31-14_02_59'
    """
    stamp = datetime.now().strftime("%y_%m_%d-%H_%M_%S")
    return "_".join([str(model_name), str(experiment_name), str(uuid.uuid4())[:8], stamp])


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
        **kwargs: forwarded to the logger's constructor; torchrl's ``wandb_kwargs={...}``
            (for ``"wandb"``) and ``mlflow_kwargs={...}`` (for ``"mlflow"``) are unpacked
            into them.

    Raises:
        ValueError: for an unknown ``logger_type``.
    """
    if logger_type in ("", None):
        return None
    for backend in LOGGER_TYPES:  # torchrl's form: get_logger(..., wandb_kwargs={...})
        extra = kwargs.pop(f"{backend}_kwargs", None)
        if extra and backend == logger_type:
            kwargs.update(extra)
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
