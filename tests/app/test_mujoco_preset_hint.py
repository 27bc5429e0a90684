"""A MuJoCo env under an algorithm's default recipe (tuned for a small task) warns once,
naming the algorithm's MuJoCo preset; a preset, a small task or an algorithm without a
MuJoCo preset does not. A preset named after a MuJoCo env (``experiment=td3_hopper``) is an
error naming the MuJoCo preset with that env."""

from __future__ import annotations

import warnings

import pytest
from hydra.core.hydra_config import HydraConfig

from rl_trainers.app.mujoco_presets import warn_default_recipe_on_mujoco
from rl_trainers.errors import ConfigWarning

from .conftest import RECIPES_DIR, compose, initialize_config_dir
from .test_config_errors import assert_user_error, run_bad


def _warnings(algorithm: str, overrides: list[str]) -> list[str]:
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(f"{algorithm}_trainer", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_default_recipe_on_mujoco(cfg)
    finally:
        HydraConfig.instance().cfg = None
    return [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]


@pytest.mark.parametrize(
    ("algorithm", "overrides", "command"),
    [
        ("sac", ["env=hopper"], "experiment=sac_halfcheetah env=hopper"),
        ("sac", ["env=halfcheetah"], "experiment=sac_halfcheetah runs its MuJoCo preset"),
        ("td3", ["env=walker2d"], "experiment=td3_halfcheetah env=walker2d"),
        ("ppo", ["env.env_name=Swimmer-v5"], "experiment=ppo_halfcheetah env.env_name=Swimmer-v5"),
        # an env the preset is not tuned for: named as a starting point
        ("sac", ["env=swimmer"], "env=swimmer runs its MuJoCo preset (tuned for HalfCheetah"),
        ("td3", ["env=humanoid"], "a starting point for Humanoid-v5"),
        # an env option with its id changed: the id is what the preset needs
        (
            "sac",
            ["env=hopper", "env.env_name=Walker2d-v5"],
            "experiment=sac_halfcheetah env.env_name=Walker2d-v5",
        ),
    ],
)
def test_a_mujoco_env_on_the_default_recipe_names_the_preset(algorithm, overrides, command):
    (message,) = _warnings(algorithm, overrides)
    assert message.startswith(f"{_env_id(algorithm, overrides)} runs {algorithm}'s default recipe")
    assert command in message


def _env_id(algorithm: str, overrides: list[str]) -> str:
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        return compose(f"{algorithm}_trainer", overrides=overrides).env.env_name


@pytest.mark.parametrize(
    ("algorithm", "overrides"),
    [
        ("sac", ["experiment=sac_halfcheetah", "env=hopper"]),
        ("ppo", ["experiment=ppo_halfcheetah", "env=ant"]),
        ("sac", []),  # Pendulum-v1
        ("ppo", ["env=acrobot"]),
        ("ddpg", ["env=halfcheetah"]),  # no MuJoCo preset to name
    ],
)
def test_a_preset_a_small_task_or_no_preset_to_name_stays_quiet(algorithm, overrides):
    assert _warnings(algorithm, overrides) == []


@pytest.mark.parametrize(
    ("algorithm", "preset", "expected"),
    [
        ("td3", "td3_hopper", "experiment=td3_halfcheetah env=hopper"),
        ("ppo", "ppo_ant", "experiment=ppo_halfcheetah env=ant"),
    ],
)
def test_a_preset_named_after_a_mujoco_env_names_the_mujoco_preset(
    tmp_path, algorithm, preset, expected
):
    done = run_bad(algorithm, tmp_path, f"experiment={preset}")
    assert_user_error(done, f"experiment='{preset}' is invalid: the MuJoCo preset suits", expected)


def test_a_preset_named_after_another_mujoco_env_offers_the_preset_as_a_start(tmp_path):
    done = run_bad("sac", tmp_path, "experiment=sac_swimmer")
    assert_user_error(
        done,
        "experiment='sac_swimmer' is invalid: no preset for Swimmer-v5",
        "experiment=sac_halfcheetah env=swimmer",
        "a starting point for Swimmer-v5",
    )


def test_without_a_mujoco_preset_the_error_lists_the_options(tmp_path):
    done = run_bad("ddpg", tmp_path, "experiment=ddpg_hopper")
    assert_user_error(done, "experiment='ddpg_hopper' is invalid", "options of experiment")
    assert "MuJoCo preset" not in done.stderr
