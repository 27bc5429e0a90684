"""Re-running a run's saved ``.hydra/config.yaml``: values checked against the schema, group
options kept, typos one error line; resolving it with bare OmegaConf."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from omegaconf import OmegaConf

from rl_trainers.configs.validation import typed_config
from rl_trainers.errors import ConfigError

from .test_cli import train
from .test_config_errors import assert_user_error


def _saved(tiny_config, algorithm: str = "ppo"):
    """The run's ``.hydra/config.yaml`` as Hydra writes it, read back without its schema."""
    return OmegaConf.create(OmegaConf.to_yaml(tiny_config(algorithm)))


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("optimizer.lr", "abc", "optimizer.lr='abc' is invalid: expected float"),
        ("trainer.total_frames", "abc", "trainer.total_frames='abc' is invalid: expected int"),
        ("env", "pendulum", "env='pendulum' is invalid: a saved config has no 'env' options"),
    ],
)
def test_saved_config_values_are_checked_against_the_schema(tiny_config, key, value, expected):
    cfg = _saved(tiny_config)
    OmegaConf.update(cfg, key, value, merge=False)
    with pytest.raises(ConfigError) as err:
        typed_config(cfg)
    assert str(err.value).startswith(expected)


def test_saved_config_key_added_with_plus_is_refused(tiny_config):
    cfg = _saved(tiny_config)
    cfg.trainer.num_epoch = 3  # what +trainer.num_epoch=3 adds
    with pytest.raises(ConfigError, match="did you mean trainer.num_epochs"):
        typed_config(cfg)


@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_saved_config_keeps_its_values_and_group_options(tiny_config, algorithm):
    extra = ["optimizer=rmsprop", "logger=tensorboard", "env=mountaincar_continuous"]
    original = tiny_config(algorithm, extra)
    typed = typed_config(OmegaConf.create(OmegaConf.to_yaml(original)))
    assert OmegaConf.to_container(typed) == OmegaConf.to_container(original)
    assert type(typed.optimizer._get_node("alpha")._val) is float
    assert OmegaConf.get_type(typed.logger).__name__ == "TensorboardLoggerConfig"


def test_saved_config_typo_on_the_command_line_is_one_error_line(tiny_config, tmp_path):
    saved = tmp_path / "run" / ".hydra"
    saved.mkdir(parents=True)
    (saved / "config.yaml").write_text(OmegaConf.to_yaml(tiny_config("ppo")))
    proc = train(
        "ppo",
        "--config-path",
        str(saved),
        "--config-name",
        "config",
        "optimizer.lrr=1e-3",
        cwd=tmp_path,
    )
    assert_user_error(proc, "optimizer.lrr is not a field: did you mean optimizer.lr?")


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


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["env=pendulum"], "env='pendulum' is invalid: a saved config has no 'env' options"),
        (["optimizer=adamw"], "a saved config has no 'optimizer' options to pick from"),
        (["+logger=tensorboard"], "a saved config has no 'logger' options to pick from"),
    ],
)
def test_a_group_option_given_to_a_saved_config_is_one_error_line(
    tiny_config, tmp_path, args, expected
):
    saved = tmp_path / "run" / ".hydra"
    saved.mkdir(parents=True)
    (saved / "config.yaml").write_text(OmegaConf.to_yaml(tiny_config("ppo")))
    proc = train(
        "ppo", "--config-path", "run/.hydra", "--config-name", "config", *args, cwd=tmp_path
    )
    assert_user_error(proc, expected)


def test_a_saved_config_runs_again_from_a_relative_path_with_its_own_algorithm(
    tiny_config, tmp_path
):
    """``--config-path`` relative to the working directory (Hydra's own rule is relative to
    the app's package); another algorithm's app names the one the config is for."""
    saved = tmp_path / "run" / ".hydra"
    saved.mkdir(parents=True)
    (saved / "config.yaml").write_text(OmegaConf.to_yaml(tiny_config("ppo")))
    again = ["--config-path", "run/.hydra", "--config-name", "config"]
    proc = train("ppo", *again, f"hydra.run.dir={tmp_path}/again", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["algorithm"] == "ppo"
    other = train("sac", *again, cwd=tmp_path)
    assert_user_error(
        other, "this config is a ppo run's: run it with python sota-implementations/ppo"
    )
