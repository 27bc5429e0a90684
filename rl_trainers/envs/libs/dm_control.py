"""torchrl's ``torchrl.envs.libs.dm_control`` path: ``DMControlEnv`` and ``DMControlWrapper``,
which refuse to build and name the gymnasium alternatives (see
:mod:`rl_trainers.envs.unsupported_libs`)."""

from rl_trainers.envs.unsupported_libs import DMControlEnv, DMControlWrapper

__all__ = ["DMControlEnv", "DMControlWrapper"]
