"""Environment config nodes: the root ``env`` node (:class:`GymEnvConfig`) and the env
presets' action spaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import config_field

#: The action space of the gymnasium env each ``configs/env/<name>.yaml`` preset names:
#: ``discrete`` or ``continuous``. ``--help`` lists for each algorithm only the presets it
#: can run (a root config's ``action_space_kind``) without building any env; a test checks
#: every preset is here and matches its env. A preset missing here is listed everywhere.
ENV_PRESET_ACTIONS: dict[str, str] = {
    "acrobot": "discrete",
    "ant": "continuous",
    "cartpole": "discrete",
    "halfcheetah": "continuous",
    "hopper": "continuous",
    "humanoid": "continuous",
    "inverted_double_pendulum": "continuous",
    "inverted_pendulum": "continuous",
    "mountaincar_continuous": "continuous",
    "pendulum": "continuous",
    "pusher": "continuous",
    "reacher": "continuous",
    "swimmer": "continuous",
    "walker2d": "continuous",
}


@dataclass
class GymEnvConfig:
    """A gymnasium environment, batched and transformed for training.

    Observation and action sizes and action bounds are read from the environment at build
    time; nothing here describes a network.
    """

    _target_: str = "rl_trainers.algorithms.components.make_env"
    env_name: str = config_field("CartPole-v1", "gymnasium id (e.g. Pendulum-v1) or 'module:Class'")
    num_envs: int = config_field(8, "environments stepped together in one vector env")
    vectorization: str = config_field("sync", "sync (one process) or async (one process per env)")
    max_episode_steps: int | None = config_field(None, "override the env's time limit (None: keep)")
    normalize_observations: bool = config_field(
        False,
        "normalise observations by the running mean/std of all seen (SB3 VecNormalize's norm_obs)",
    )
    obs_norm_clip: float | None = config_field(
        10.0, "normalize_observations: clip normalised observations to [-clip, clip] (null: no)"
    )
    normalize_rewards: bool = config_field(
        False,
        "divide training rewards by the running std of the discounted return "
        "(SB3 VecNormalize's norm_reward; logged and evaluated returns stay raw)",
    )
    reward_norm_gamma: float | None = config_field(
        None, "normalize_rewards: discount of that return (None: loss.gamma, else 0.99)"
    )
    reward_norm_clip: float = config_field(
        10.0, "normalize_rewards: clip normalised rewards to [-clip, clip]"
    )
    reward_scale: float = config_field(1.0, "multiply rewards by this factor for training")
    from_pixels: bool = config_field(False, "observe rendered frames under the 'pixels' key")
    frame_skip: int = config_field(1, "repeat each action this many times, summing rewards")
    device: str = config_field("cpu", "device the env's tensors live on")
    image_size: int = config_field(84, "pixels: side of the square resized frames")
    grayscale: bool = config_field(True, "pixels: one luminance channel instead of RGB")
    frame_stack: int = config_field(4, "pixels: recent frames stacked along the channels")
    transforms: list[Any] = config_field(
        [], "more transforms, last: [{_target_: rl_trainers.envs.StepCounter, max_steps: 200}]"
    )
    make_kwargs: Any = config_field(
        None, "keyword arguments for gymnasium.make, e.g. {g: 9.81} for Pendulum-v1"
    )
