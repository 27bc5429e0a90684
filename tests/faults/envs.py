"""Faulty envs for the fault matrix, given to the app as ``env.env_name=faults.envs:<Class>``.

The fault starts at a step count read from an environment variable (so a run can checkpoint
first); ``FAULT_AFTER`` steps of this env instance, 30 by default. ``FAULT_ENV_INDEX``
restricts the fault to the sub-env built in that order in its process (default: every one).
"""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

_built = itertools.count()


class _Faulty(CartPoleEnv):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.steps = 0
        self.index = next(_built)
        only = os.environ.get("FAULT_ENV_INDEX")
        self.armed = only is None or int(only) == self.index
        self.after = int(os.environ.get("FAULT_AFTER", "30"))

    def faulty(self) -> bool:
        self.steps += 1
        return self.armed and self.steps > self.after


class BlockingCartPole(_Faulty):
    """``step`` never returns once the fault starts (it waits on an event nobody sets)."""

    def step(self, action):
        if self.faulty():
            threading.Event().wait()
        return super().step(action)


class NaNCartPole(_Faulty):
    """Observations become NaN once the fault starts."""

    def step(self, action):
        obs, reward, term, trunc, info = super().step(action)
        if self.faulty():
            obs = np.full_like(obs, np.nan)
        return obs, reward, term, trunc, info


class InfRewardCartPole(_Faulty):
    """Rewards become +inf once the fault starts."""

    def step(self, action):
        obs, reward, term, trunc, info = super().step(action)
        if self.faulty():
            reward = float("inf")
        return obs, reward, term, trunc, info


class RaisingResetCartPole(CartPoleEnv):
    """``reset`` raises once the env was built (after the spec probe: at the second reset)."""

    resets = 0

    def reset(self, **kwargs):
        type(self).resets += 1
        if type(self).resets > int(os.environ.get("FAULT_AFTER", "1")):
            raise OSError("simulator connection lost in reset")
        return super().reset(**kwargs)


class SlowStartCartPole(CartPoleEnv):
    """Takes ``FAULT_START_SLEEP`` seconds to build (a simulator starting up), after
    printing ``ENV STARTING`` to stderr."""

    def __init__(self, **kwargs) -> None:
        import sys
        import time

        print("ENV STARTING", file=sys.stderr, flush=True)
        time.sleep(float(os.environ.get("FAULT_START_SLEEP", "30")))
        super().__init__(**kwargs)


class SlowAfterCartPole(CartPoleEnv):
    """Once ``FAULT_AFTER`` steps were taken by all instances of the process together, each
    step takes half a second (``SLOW`` is printed to stderr once): with the frames a run
    trains for as ``FAULT_AFTER``, the final evaluation is slow."""

    total = 0
    warned = False

    def step(self, action):
        import sys
        import time

        cls = type(self)
        cls.total += 1
        if cls.total > int(os.environ.get("FAULT_AFTER", "30")):
            if not cls.warned:
                cls.warned = True
                print("SLOW", file=sys.stderr, flush=True)
            time.sleep(0.5)
        return super().step(action)
