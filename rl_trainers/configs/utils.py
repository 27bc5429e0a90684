"""torchrl's module path of the optimizer nodes (``configs.utils.AdamConfig`` and the rest)."""

from __future__ import annotations

from .optim import AdamConfig, AdamWConfig, LRSchedulerConfig, RMSpropConfig, SGDConfig

__all__ = ["AdamConfig", "AdamWConfig", "LRSchedulerConfig", "RMSpropConfig", "SGDConfig"]
