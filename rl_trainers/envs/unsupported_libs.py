"""torchrl's env wrappers of libraries other than gymnasium (rl_trainers wraps gymnasium
only), importable so that a script choosing its library at run time imports, and failing
with a message naming what to use when one is built.

torchrl's SAC, TD3 and DDPG scripts import ``DMControlEnv`` next to ``GymEnv``, its discrete
SAC script ``JumanjiEnv`` too, and they build one only when their config's ``env.library``
names that library: with ``gymnasium`` they run unchanged here, and with another they stop
at the env with what to use instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["DMControlEnv", "DMControlWrapper", "JumanjiEnv", "JumanjiWrapper"]

_ALTERNATIVES = {
    "dm_control": (
        "Use GymEnv on a gymnasium registration of the task (shimmy registers the "
        "dm_control suite as 'dm_control/<domain>-<task>-v0'), or a gymnasium MuJoCo task "
        "such as GymEnv('HalfCheetah-v5') (env.library=gymnasium in torchrl's SAC, TD3 and "
        "DDPG configs)."
    ),
    "jumanji": (
        "Use GymEnv on a gymnasium env, e.g. GymEnv('CartPole-v1') "
        "(env.library=gymnasium in torchrl's discrete SAC config)."
    ),
}


def _refuse(call: str, library: str) -> NoReturn:
    raise NotImplementedError(
        f"{call}: rl_trainers wraps gymnasium environments only, {library} is not "
        f"supported. {_ALTERNATIVES[library]}"
    )


class DMControlEnv:
    """torchrl's ``DMControlEnv(env_name, task_name, ...)``: building one raises
    ``NotImplementedError`` naming the gymnasium alternatives."""

    def __init__(self, env_name: Any = None, task_name: Any = None, *args: Any, **kwargs: Any):
        _refuse(f"DMControlEnv({env_name!r}, {task_name!r})", "dm_control")


class DMControlWrapper:
    """torchrl's ``DMControlWrapper(env, ...)``: building one raises ``NotImplementedError``
    naming the gymnasium alternatives."""

    def __init__(self, env: Any = None, *args: Any, **kwargs: Any):
        _refuse(f"DMControlWrapper({type(env).__name__})", "dm_control")


class JumanjiEnv:
    """torchrl's ``JumanjiEnv(env_name, ...)``: building one raises ``NotImplementedError``
    naming the gymnasium alternative."""

    def __init__(self, env_name: Any = None, *args: Any, **kwargs: Any):
        _refuse(f"JumanjiEnv({env_name!r})", "jumanji")


class JumanjiWrapper:
    """torchrl's ``JumanjiWrapper(env, ...)``: building one raises ``NotImplementedError``
    naming the gymnasium alternative."""

    def __init__(self, env: Any = None, *args: Any, **kwargs: Any):
        _refuse(f"JumanjiWrapper({type(env).__name__})", "jumanji")
