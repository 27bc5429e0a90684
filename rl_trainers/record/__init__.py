"""Recording: loggers (``rl_trainers.record.loggers``) and rollout-recording transforms.

``VideoRecorder``, ``TensorDictRecorder`` and ``PixelRenderTransform`` subclass the env
``Transform``; they are imported on first access so that the loggers never pull in the
env package.
"""

from __future__ import annotations

from typing import Any

from rl_trainers.record.loggers import (
    CSVLogger,
    Logger,
    MLFlowLogger,
    TensorboardLogger,
    WandbLogger,
    generate_exp_name,
    get_logger,
)

_LAZY = {
    "VideoRecorder": "rl_trainers.record.recorder",
    "TensorDictRecorder": "rl_trainers.record.recorder",
    "PixelRenderTransform": "rl_trainers.record.rendering",
}

__all__ = [
    "VideoRecorder",
    "TensorDictRecorder",
    "PixelRenderTransform",
    "Logger",
    "CSVLogger",
    "TensorboardLogger",
    "WandbLogger",
    "MLFlowLogger",
    "get_logger",
    "generate_exp_name",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rl_trainers.record' has no attribute {name!r}")
