"""torchrl's module path of the gymnasium env node (``configs.envs_libs.GymEnvConfig``)."""

from __future__ import annotations

from .envs import GymEnvConfig

__all__ = ["GymEnvConfig"]
