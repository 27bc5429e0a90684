"""Logger config nodes (group ``logger``). Outputs go under Hydra's run directory."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field

#: The values of ``logger.on_error`` (see ``rl_trainers.record.loggers.guard``).
LOGGER_ON_ERROR = ("continue", "raise")


@dataclass
class LoggerConfig:
    """Fields every logger shares."""

    _target_: str = "rl_trainers.record.loggers.CSVLogger"
    exp_name: str = config_field("${algorithm}_${env.env_name}", "experiment name")
    on_error: str = config_field(
        "continue",
        "if the backend fails mid-run: continue (one warning, metrics go to CSV in logs/) "
        "or raise (stop with a checkpoint, exit status 2)",
    )


@dataclass
class CSVLoggerConfig(LoggerConfig):
    """CSV files, one per scalar, in <log_dir>/<exp_name>/scalars/."""

    _target_: str = "rl_trainers.record.loggers.CSVLogger"
    log_dir: str = config_field("logs", "directory, relative to the run directory")
    video_format: str = config_field(
        "gif", "videos (eval.video): gif, mp4 (needs imageio-ffmpeg) or pt (raw uint8, large)"
    )


@dataclass
class TensorboardLoggerConfig(LoggerConfig):
    """TensorBoard event files in <log_dir>/<exp_name>/."""

    _target_: str = "rl_trainers.record.loggers.TensorboardLogger"
    log_dir: str = config_field("tensorboard", "directory, relative to the run directory")


@dataclass
class WandbLoggerConfig(LoggerConfig):
    """Weights & Biases; offline=true needs no account or network."""

    _target_: str = "rl_trainers.record.loggers.WandbLogger"
    offline: bool = config_field(False, "write the run to disk only (sync later with wandb sync)")
    save_dir: str = config_field(".", "directory (relative to the run directory) that gets wandb/")
    project: str | None = config_field(None, "W&B project name")


@dataclass
class MLFlowLoggerConfig(LoggerConfig):
    """MLflow tracking to a local file store or sqlite database."""

    _target_: str = "rl_trainers.record.loggers.MLFlowLogger"
    tracking_uri: str | None = config_field(
        None,
        "directory (relative: in the run directory), file://, sqlite:/// or http(s):// URI "
        "(null: the environment's MLFLOW_TRACKING_URI when set, else mlruns)",
    )
