"""Review leftovers: configs that would train nothing (or a typo nobody reads yet) are
refused before training; a saved run config resolves after ``import rl_trainers``; Tuple
observation keys are found under the name gym's adapter gives them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import pytest

from rl_trainers.envs.libs.gym import tuple_observation_keys
from rl_trainers.envs.specs import Composite, Unbounded
from rl_trainers.trainers.algorithms.app import run
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.algorithms.validation import validate_config
from rl_trainers.trainers.helpers.components import make_env

from .conftest import compose_config
from .test_cli import train
from .test_config_errors import assert_user_error, run_bad

# -------------------------------------------------------------- configs that would do nothing


def test_sac_learning_starts_past_total_frames_is_one_error_line(tmp_path):
    proc = run_bad("sac", tmp_path, "trainer.learning_starts=5000", "trainer.total_frames=1000")
    assert_user_error(
        proc, "trainer.learning_starts=5000", "a number of frames below trainer.total_frames (1000)"
    )
    assert not (tmp_path / "run" / "summary.json").exists()


@pytest.mark.parametrize(
    ("algorithm", "overrides", "expected"),
    [
        (
            "sac",
            ["trainer.learning_starts=200", "trainer.total_frames=200"],
            ["trainer.learning_starts=200", "a number of frames below trainer.total_frames (200)"],
        ),
        (
            "sac",
            ["trainer.learning_starts=150", "replay_buffer.size=100"],
            ["trainer.learning_starts=150", "at most replay_buffer.size (100)"],
        ),
        ("sac", ["trainer.learning_starts=-1"], ["trainer.learning_starts=-1", "0 or a positive"]),
        (
            "ppo",
            ["trainer.compile_mode=max-autotun"],
            ["trainer.compile_mode='max-autotun'", "one of default, reduce-overhead"],
        ),
        ("sac", ["trainer.compile_mode=fast"], ["trainer.compile_mode='fast'", "max-autotune"]),
        (
            "ppo",
            ["collector.init_random_frames=64"],
            ["collector.init_random_frames=64", "0 for PPO", "log-probability"],
        ),
    ],
)
def test_silent_config_is_refused(tiny_config, algorithm, overrides, expected):
    cfg = tiny_config(algorithm, overrides)
    assert not cfg.trainer.compile
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    for word in expected:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("algorithm", "overrides"),
    [
        ("ppo", []),
        ("sac", []),
        ("ppo", ["experiment=ppo_halfcheetah"]),
        ("sac", ["experiment=sac_halfcheetah"]),
        ("dqn", []),
        ("dqn", ["experiment=dqn_acrobot"]),
        ("td3", []),
        ("td3", ["experiment=td3_halfcheetah"]),
        ("ddpg", []),
        ("ddpg", ["experiment=ddpg_mountaincar"]),
        ("a2c", []),
        ("a2c", ["experiment=a2c_pendulum"]),
        ("pg", []),
        ("ppo", ["trainer.compile_mode=max-autotune-no-cudagraphs"]),
    ],
)
def test_recipe_defaults_pass_without_warning(algorithm, overrides):
    cfg = compose_config(algorithm, overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validate_config(cfg)


def test_sac_learning_starts_just_below_total_frames_is_accepted(tiny_config):
    validate_config(tiny_config("sac", ["trainer.learning_starts=199", "trainer.total_frames=200"]))


def test_log_interval_past_the_run_warns_with_the_frames_collected(tiny_config):
    cfg = tiny_config("ppo", ["trainer.total_frames=200", "trainer.log_interval=257"])
    # 200 frames in batches of 64: the run collects 256
    with pytest.warns(UserWarning, match=r"log_interval=257 .* 256 frames .* no training scalar"):
        validate_config(cfg)


def test_log_interval_reached_by_the_last_batch_logs(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["trainer.total_frames=200", "trainer.log_interval=256"])
    with warnings.catch_warnings():  # (200 frames rounded up to 256 are warned about)
        warnings.filterwarnings("error", message="trainer.log_interval", category=UserWarning)
        validate_config(cfg)
    run(cfg, output_dir=tmp_path)
    logged = (tmp_path / "logs" / "ppo_CartPole-v1" / "scalars" / "loss_critic.csv").read_text()
    assert logged.split(",")[0] == "256"


# -------------------------------------------------------------- saved configs and OmegaConf

RESOLVE_SAVED = textwrap.dedent(
    """
    import json, sys
    {imports}
    loaded_at_import = "omegaconf" in sys.modules
    from omegaconf import OmegaConf
    cfg = OmegaConf.to_container(OmegaConf.load(sys.argv[1]), resolve=True)
    print(json.dumps({{"omegaconf_at_import": loaded_at_import, "cfg": cfg}}))
    """
)


def _resolve_in_fresh_process(path, imports: str) -> subprocess.CompletedProcess:
    script = RESOLVE_SAVED.format(imports=imports)
    return subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=300
    )


def test_saved_run_config_resolves_after_importing_the_config_package(tmp_path):
    """A saved ``.hydra/config.yaml`` resolves with bare OmegaConf once the config package
    (which registers ``${rl_trainers.root_config:}``) is imported; ``import rl_trainers``
    alone registers nothing."""
    out = tmp_path / "run"
    proc = train(
        "ppo",
        "trainer.total_frames=128",
        "collector.frames_per_batch=64",
        "env.num_envs=2",
        "trainer.minibatch_size=32",
        "trainer.num_epochs=1",
        "eval.episodes=1",
        "trainer.progress_bar=false",
        "trainer.log_interval=64",
        "logger=csv",
        f"hydra.run.dir={out}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = out / ".hydra" / "config.yaml"
    assert "${rl_trainers.root_config:}" in saved.read_text()

    bare = _resolve_in_fresh_process(saved, "")
    assert bare.returncode != 0 and "rl_trainers.root_config" in bare.stderr

    light = _resolve_in_fresh_process(saved, "import rl_trainers")
    assert light.returncode != 0 and "rl_trainers.root_config" in light.stderr

    proc = _resolve_in_fresh_process(saved, "import rl_trainers.trainers.algorithms.configs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["omegaconf_at_import"] is True  # the config package is built on omegaconf
    cfg = result["cfg"]
    assert cfg["trainer"]["_config_"] == "${rl_trainers.root_config:}"
    assert cfg["trainer"]["total_frames"] == 128 and cfg["env"]["num_envs"] == 2


# -------------------------------------------------------------- Tuple observation keys


def test_tuple_observation_keys_in_tuple_order():
    order = [7, 0, 11, 3, 10, 1, 2, 9, 4, 8, 5, 6]
    spec = Composite({f"observation_{i}": Unbounded((1,)) for i in order})
    assert tuple_observation_keys(spec) == [f"observation_{i}" for i in range(12)]
    spec["observation"] = Unbounded((3,))
    assert tuple_observation_keys(spec) == []
    assert tuple_observation_keys(Composite({"pixels": Unbounded((3,))})) == []


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_tuple_observation_parts_become_one_observation(vectorization):
    env = make_env("Blackjack-v1", num_envs=2, vectorization=vectorization)
    try:
        td = env.reset()
    finally:
        env.close()
    obs = td["observation"]
    assert obs.shape == (2, 32 + 11 + 2)
    for block in (obs[:, :32], obs[:, 32:43], obs[:, 43:]):  # one-hot parts, in order
        assert (block.sum(-1) == 1).all()
    assert not any(str(k).startswith("observation_") for k in td.keys())
