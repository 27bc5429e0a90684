"""Pointing MuJoCo users at the algorithms' MuJoCo presets (``<algorithm>_halfcheetah``,
which suit every MuJoCo env: ``experiment=sac_halfcheetah env=hopper``).

Two places name them: a ``Warning:`` when a MuJoCo env runs an algorithm's default recipe
(tuned for a small task; rl-zoo users expect the env alone to pick the settings), and the
``Error:`` of an ``experiment=<algorithm>_<env>`` preset that does not exist
(``experiment=td3_hopper``).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from . import RECIPES_DIR

#: The MuJoCo envs the presets' settings are tuned and checked for (docs/results.md); on
#: the others (Swimmer, Humanoid, Reacher...) rl-zoo tunes some settings apart.
PRESET_ENVS = ("HalfCheetah", "Hopper", "Walker2d", "Ant")


def tuned_for(env_name: str) -> bool:
    """Whether the MuJoCo presets are tuned for ``env_name`` (:data:`PRESET_ENVS`)."""
    return env_name.partition("-v")[0] in PRESET_ENVS


def preset_fit(env_name: str) -> str:
    """How the MuJoCo presets fit ``env_name``: said after the preset's command."""
    if tuned_for(env_name):
        return "the settings of docs/results.md"
    return (
        f"tuned for {', '.join(PRESET_ENVS[:-1])} and {PRESET_ENVS[-1]} in docs/results.md; "
        f"a starting point for {env_name}"
    )


def mujoco_preset(algorithm: str) -> str:
    """The name of ``algorithm``'s MuJoCo preset (an option of ``experiment`` if it has one)."""
    return f"{algorithm}_halfcheetah"


def is_mujoco(env_name: str) -> bool:
    """Whether ``env_name`` is one of gymnasium's MuJoCo envs."""
    import gymnasium

    spec = gymnasium.envs.registry.get(env_name)
    return spec is not None and str(spec.entry_point).startswith("gymnasium.envs.mujoco")


def env_option_id(option: str | None) -> str | None:
    """The gymnasium id an ``env`` option sets (``hopper`` -> ``Hopper-v5``), None for no
    such option."""
    if not option:
        return None
    option_file = Path(RECIPES_DIR) / "env" / f"{option}.yaml"
    if not option_file.is_file():
        return None
    env_name = OmegaConf.load(option_file).get("env_name")
    return None if env_name is None else str(env_name)


def env_option_of(env_id: str) -> str | None:
    """The ``env`` option that sets the gymnasium id ``env_id`` (``Hopper-v5`` -> ``hopper``,
    case-insensitive), None when no option does."""
    for option_file in sorted((Path(RECIPES_DIR) / "env").glob("*.yaml")):
        option = option_file.stem
        if not option.endswith("_schema") and (env_option_id(option) or "").lower() == (
            env_id.lower()
        ):
            return option
    return None


def env_override(value: str) -> str:
    """The override that picks the env a user named ``value`` (an ``env`` option or a
    gymnasium id, as ``--env`` takes it in rl-zoo): ``env=<option>``, else
    ``env.env_name=<value>``."""
    if env_option_id(value) is not None:
        return f"env={value}"
    option = env_option_of(value)
    return f"env={option}" if option is not None else f"env.env_name={value}"


def preset_command(preset: str, env_option: str | None, env_name: str) -> str:
    """``experiment=<preset>`` and what picks ``env_name`` after it: the chosen ``env``
    option when that option is ``env_name``'s (nothing for the preset's own), else
    ``env.env_name``."""
    if env_option and env_option_id(env_option) == env_name:
        env = "" if preset.endswith(f"_{env_option}") else f" env={env_option}"
        return f"experiment={preset}{env}"
    return f"experiment={preset} env.env_name={env_name}"


def warn_default_recipe_on_mujoco(cfg: DictConfig) -> None:
    """A MuJoCo env under an algorithm's default recipe, which is tuned for a small task,
    when the algorithm has a MuJoCo preset and no ``experiment`` was chosen: one
    ``Warning:`` line naming the preset."""
    import warnings

    from hydra.core.hydra_config import HydraConfig

    from rl_trainers.errors import ConfigWarning

    from .help_page import group_options

    preset = mujoco_preset(cfg.algorithm)
    if not HydraConfig.initialized() or preset not in group_options(cfg.algorithm).get(
        "experiment", []
    ):
        return
    choices = HydraConfig.get().runtime.choices
    if choices.get("experiment") not in (None, "null"):
        return
    name = str(cfg.env.env_name)
    if not is_mujoco(name):
        return
    warnings.warn(
        ConfigWarning(
            f"{name} runs {cfg.algorithm}'s default recipe, whose hyperparameters are tuned "
            f"for a small task; {preset_command(preset, choices.get('env'), name)} runs its "
            f"MuJoCo preset ({preset_fit(name)})"
        ),
        stacklevel=1,
    )


def missing_preset_hint(algorithm: str, option: str, presets: list[str]) -> str | None:
    """For ``experiment=<algorithm>_<env option>`` naming a MuJoCo env that has no preset
    of its own: the command running the algorithm's MuJoCo preset on it; else None."""
    preset = mujoco_preset(algorithm)
    env_option = option.removeprefix(f"{algorithm}_")
    if preset not in presets or env_option == option:
        return None
    env_name = env_option_id(env_option)
    if env_name is None or not is_mujoco(env_name):
        return None
    command = f"experiment={preset} env={env_option}"
    if tuned_for(env_name):
        return f"the MuJoCo preset suits {env_name} too: {command}"
    return f"no preset for {env_name}: {command} runs the MuJoCo preset, {preset_fit(env_name)}"
