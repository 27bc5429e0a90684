"""Wrappers of external simulators (gymnasium)."""

from rl_trainers.envs.libs.gym import GymEnv, GymWrapper

__all__ = ["GymEnv", "GymWrapper"]
