"""CartPoles for the resume and fault tests: one that raises after a few steps (the error
must reach the user from a worker), one whose state cannot be captured, one holding
settings in objects that are configuration."""

from __future__ import annotations

import enum

import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv


class FaultyCartPole(CartPoleEnv):
    """Raises ``RuntimeError("boom from the env")`` at its 30th step."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps >= 30:
            raise RuntimeError("boom from the env")
        return super().step(action)


class OpaqueStateCartPole(CartPoleEnv):
    """A CartPole holding part of its state in an object the generic capture cannot read."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.physics = object()


class Mode(enum.Enum):
    FAST = "fast"


class ConfiguredCartPole(CartPoleEnv):
    """A CartPole holding settings in a numpy dtype and an enum (configuration, not state)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.obs_dtype = np.dtype(np.float32)
        self.mode = Mode.FAST
