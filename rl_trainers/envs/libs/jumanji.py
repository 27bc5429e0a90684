"""torchrl's ``torchrl.envs.libs.jumanji`` path: ``JumanjiEnv`` and ``JumanjiWrapper``, which
refuse to build and name the gymnasium alternative (see
:mod:`rl_trainers.envs.unsupported_libs`)."""

from rl_trainers.envs.unsupported_libs import JumanjiEnv, JumanjiWrapper

__all__ = ["JumanjiEnv", "JumanjiWrapper"]
