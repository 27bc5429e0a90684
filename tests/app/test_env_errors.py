"""Environment messages: an unsupported action space names the env, its space and what is
supported; MuJoCo model warnings are shown once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rl_trainers.app.run import run
from rl_trainers.errors import ConfigError


def _python(script: str, cwd) -> subprocess.CompletedProcess:
    """``python -c script`` in a fresh interpreter, which must succeed."""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_mujoco_model_warnings_are_shown_once_per_process(tmp_path):
    """MuJoCo 4 warns about gymnasium's half_cheetah.xml at each model load: 18 lines on
    stderr in an app run before (one per sub-env and evaluation env)."""
    pytest.importorskip("mujoco")
    script = (
        "from rl_trainers.envs import GymEnv\n"
        "env = GymEnv('HalfCheetah-v5', num_envs=3)\n"
        "GymEnv('HalfCheetah-v5').reset()\n"
        "print(env.reset()['observation'].shape)\n"
    )
    proc = _python(script, tmp_path)
    assert proc.stdout.strip() == "torch.Size([3, 17])"
    if "settotalmass" in proc.stderr:  # the installed MuJoCo warns about this model file
        assert proc.stderr.count("settotalmass") == 1, proc.stderr


def test_a_mujoco_warning_is_one_warning_line_in_the_apps_commands(tmp_path):
    """Shown as the app shows its own warnings (rl-trainers' runs, eval, enjoy): one
    ``Warning: MuJoCo: ...`` line, not Python's file, line and source line."""
    pytest.importorskip("mujoco")
    script = (  # the handler MuJoCo calls; the installed MuJoCo may warn at the load too
        "from rl_trainers.envs import GymEnv\n"
        "from rl_trainers.envs.libs.gym import _warn_from_mujoco\n"
        "from rl_trainers.errors import warnings_as_lines\n"
        "with warnings_as_lines():\n"
        "    GymEnv('HalfCheetah-v5').reset()\n"
        "    _warn_from_mujoco('a model attribute is deprecated')\n"
    )
    proc = _python(script, tmp_path)
    lines = [line for line in proc.stderr.splitlines() if "deprecated" in line]
    assert "Warning: MuJoCo: a model attribute is deprecated" in lines, proc.stderr
    assert all(line.startswith("Warning: MuJoCo: ") for line in lines), proc.stderr
    assert "warnings.warn" not in proc.stderr and "gym.py" not in proc.stderr


UNSUPPORTED_ACTION_ENVS = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces


    class Acting(gym.Env):
        action_space = spaces.MultiDiscrete([3, 2])

        def __init__(self, render_mode=None):
            self.observation_space = spaces.Box(-1, 1, (3,), np.float32)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, True, {}


    class MultiBinaryActions(Acting):
        action_space = spaces.MultiBinary(4)


    class TupleActions(Acting):
        action_space = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)])


    class HalfBounded(Acting):
        action_space = spaces.Box(
            np.array([0.0, -np.inf], np.float32), np.array([1.0, np.inf], np.float32)
        )
    """
)


@pytest.mark.parametrize(
    "algorithm, env_class, space, supported, advice",
    [
        (
            "ppo",
            "Acting",
            "MultiDiscrete([3 2])",
            "Discrete (a categorical policy) and Box",
            "Discrete(n) over every combination of its actions (np.unravel_index maps an "
            "index back)",
        ),
        (
            "sac",
            "Acting",
            "MultiDiscrete([3 2])",
            "Box (a tanh_normal policy)",
            "index back), and train it with ppo, dqn, a2c or pg",
        ),
        (
            "dqn",
            "MultiBinaryActions",
            "MultiBinary(4)",
            "Discrete (one Q-value per action)",
            "Discrete(n) over every combination",
        ),
        (
            "td3",
            "TupleActions",
            "Tuple(Discrete(2), Discrete(3))",
            "Box",
            "to act in one Box (continuous actions) or one Discrete space",
        ),
    ],
)
def test_an_unsupported_action_space_names_the_env_its_space_and_what_is_supported(
    tiny_config, tmp_path, monkeypatch, algorithm, env_class, space, supported, advice
):
    """The config error names the env, its action space, the spaces the algorithm
    supports (PPO, SAC, DQN, TD3 alike) and how to make the env act in one of them."""
    (tmp_path / "unsupported_action_envs.py").write_text(UNSUPPORTED_ACTION_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env_name = f"unsupported_action_envs:{env_class}"
    with pytest.raises(ConfigError) as err:
        run(tiny_config(algorithm, [f"env.env_name={env_name}"]), output_dir=tmp_path / "run")
    assert str(err.value).startswith(
        f"env.env_name='{env_name}' is invalid: its action space {space} is not supported: "
        f"{algorithm.upper()} acts in {supported}"
    )
    assert "wrap the env (a gymnasium.ActionWrapper in its module)" in str(err.value)
    assert advice in str(err.value)


def test_a_mujoco_py_env_version_names_the_versions_that_build(tmp_path):
    """rl-zoo's hyperparameter files name Hopper-v3, which gymnasium refuses (mujoco-py)."""
    pytest.importorskip("mujoco")
    from .conftest import TINY
    from .test_cli import train

    proc = train(
        "sac",
        *TINY["sac"],
        "env=hopper",
        "env.env_name=Hopper-v3",
        "hydra.run.dir=run",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    error = next(line for line in proc.stderr.splitlines() if line.startswith("Error: "))
    assert error.startswith("Error: could not build 'env': The mujoco v2 and v3 based")
    assert error.endswith("Registered versions here: Hopper-v5, Hopper-v4.")


@pytest.mark.parametrize(
    "algorithm, env_name, names",
    [
        ("sac", "CartPole-v1", "train discrete ones with ppo, dqn, a2c or pg"),
        ("td3", "CartPole-v1", "train discrete ones with ppo, dqn, a2c or pg"),
        ("dqn", "Pendulum-v1", "train continuous ones with sac, td3, ddpg, ppo, a2c or pg"),
    ],
)
def test_the_wrong_kind_of_actions_names_the_algorithms_that_fit(
    tiny_config, tmp_path, algorithm, env_name, names
):
    with pytest.raises(ConfigError) as err:
        run(tiny_config(algorithm, [f"env.env_name={env_name}"]), output_dir=tmp_path / "run")
    assert names in str(err.value)


@pytest.mark.parametrize(
    "algorithm, overrides, kind, instead",
    [
        ("ppo", [], "auto policy (model.policy)", True),
        ("ppo", ["model/policy=tanh_normal"], "tanh_normal policy (model.policy)", True),
        ("sac", [], "auto policy (model.policy)", False),
        ("td3", [], "deterministic policy (model.actor)", False),
    ],
)
def test_action_bounds_finite_in_some_dimensions_only_are_refused_before_training(
    tiny_config, tmp_path, monkeypatch, algorithm, overrides, kind, instead
):
    """A policy squashing into bounds that are infinite in some dimensions would act NaN:
    refused, naming the space and what to give the env (or the policy to use)."""
    (tmp_path / "unsupported_action_envs.py").write_text(UNSUPPORTED_ACTION_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env_name = "unsupported_action_envs:HalfBounded"
    cfg = tiny_config(algorithm, [f"env.env_name={env_name}", *overrides])
    with pytest.raises(ConfigError) as err:
        run(cfg, output_dir=tmp_path / "run")
    message = str(err.value)
    assert message.startswith(
        f"env.env_name='{env_name}' is invalid: its action space Box([  0. -inf], [ 1. inf], "
        f"(2,), float32) is bounded in some dimensions and not in others, and the {kind} "
        "squashes actions into the bounds, which must then be finite in every dimension: give "
        "the env finite bounds in each (e.g. a large one where it has none) or in none"
    )
    assert ("or use model/policy=normal" in message) is instead
    assert not (tmp_path / "run" / "checkpoints").exists() or not any(
        (tmp_path / "run" / "checkpoints").iterdir()
    )


def test_action_bounds_finite_in_some_dimensions_only_train_an_unsquashed_policy(
    tiny_config, tmp_path, monkeypatch
):
    """``model/policy=normal`` (the env clips its actions) trains on such an env."""
    (tmp_path / "unsupported_action_envs.py").write_text(UNSUPPORTED_ACTION_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tiny_config(
        "ppo", ["env.env_name=unsupported_action_envs:HalfBounded", "model/policy=normal"]
    )
    run(cfg, output_dir=tmp_path / "run")
    assert (tmp_path / "run" / "summary.json").exists()
