"""What a new user of the app meets: environment variables, typos, resumes and re-running a
run's saved ``.hydra/config.yaml``; each mistake is one ``Error:`` line, never a traceback."""

from __future__ import annotations

import os
import warnings

import pytest
from omegaconf import OmegaConf

from rl_trainers.trainers.algorithms import build_trainer
from rl_trainers.trainers.algorithms.app import help_template
from rl_trainers.trainers.algorithms.configs import PPOTrainerConfig, SACTrainerConfig
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.algorithms.validation import typed_config, validate_config

from .conftest import TINY
from .test_cli import train
from .test_config_errors import assert_user_error


def test_bad_gemm_backend_variable_is_one_error_line(tmp_path):
    env = {**os.environ, "RL_TRAINERS_GEMM": "bogus"}
    proc = train("ppo", *TINY["ppo"], f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, env=env)
    assert_user_error(proc, "RL_TRAINERS_GEMM='bogus' is invalid", "auto", "mkl", "onednn")


@pytest.mark.parametrize("value", ["MKL", " onednn ", "auto"])
def test_gemm_backend_values_gemm_accepts_pass_validation(tiny_config, monkeypatch, value):
    monkeypatch.setenv("RL_TRAINERS_GEMM", value)
    validate_config(tiny_config("ppo"))


def test_misspelt_group_option_lists_only_the_options_a_user_can_pick(tmp_path):
    proc = train("ppo", "logger=csv2", cwd=tmp_path)
    assert_user_error(
        proc, "did you mean logger=csv?", "options of logger: csv, mlflow, tensorboard, wandb"
    )
    assert "_schema" not in proc.stderr


def test_help_names_every_value_loss_the_losses_accept():
    ppo = help_template("ppo_trainer", PPOTrainerConfig)
    sac = help_template("sac_trainer", SACTrainerConfig)
    assert "l2 | smooth_l1 | l1 value loss" in ppo
    assert "l2 | smooth_l1 | l1 Q loss" in sac


def test_help_lists_the_fields_of_options_extending_another_option():
    """optimizer=adamw takes betas/eps/fused as adam does; multi_async takes num_workers."""
    text = help_template("ppo_trainer", PPOTrainerConfig)
    options = text.split("== Fields of group options")[1].split("Network input")[0]
    adamw = options.split("optimizer=adamw:")[1].split("optimizer=sgd:")[0]
    assert "optimizer.betas" in adamw and "optimizer.fused" in adamw
    multi_async = options.split("collector=multi_async:")[1].split("logger=")[0]
    assert "collector.num_workers" in multi_async


@pytest.mark.parametrize(
    "override, expected",
    [
        ("eval.interval=-5", "eval.interval=-5 is invalid: 0 (only at the end) or a positive"),
        ("trainer.num_threads=-1", "trainer.num_threads=-1 is invalid: 0 (chosen from"),
    ],
)
def test_negative_interval_or_thread_count_is_refused(tiny_config, override, expected):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("ppo", [override]))
    assert str(err.value).startswith(expected)


def test_resume_with_fewer_eval_episodes_does_not_warn(tiny_config, tmp_path):
    first = build_trainer(tiny_config("ppo"), tmp_path / "a")
    first.train()
    resumed = build_trainer(tiny_config("ppo", ["eval.episodes=1"]), tmp_path / "b")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        resumed.load_from_file(first.save_trainer_file)
    assert resumed.collected_frames == 256


# ----------------------------------------------------------------------------- saved config


def _saved(tiny_config, algorithm: str = "ppo"):
    """The run's ``.hydra/config.yaml`` as Hydra writes it, read back without its schema."""
    return OmegaConf.create(OmegaConf.to_yaml(tiny_config(algorithm)))


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("optimizer.lr", "abc", "optimizer.lr='abc' is invalid: expected float"),
        ("trainer.total_frames", "abc", "trainer.total_frames='abc' is invalid: expected int"),
        ("env", "pendulum", "env='pendulum' is invalid: a config node"),
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


def test_stop_message_of_a_sweep_job_continues_the_whole_sweep(tmp_path, monkeypatch):
    """Following the 'Continue with:' line of a job stopped in a sweep resumes that job
    and runs the sweep's other jobs, in the same sweep directory."""
    import shlex
    import sys

    from hydra.core.hydra_config import HydraConfig

    from rl_trainers.trainers.algorithms.app import resume_command

    from .conftest import CONFIG_DIR, compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(
            "ppo_trainer",
            overrides=["seed=0", "hydra.mode=MULTIRUN", "hydra.sweep.dir=sweeps/a"],
            return_hydra_config=True,
        )
    cfg.hydra.runtime.cwd = str(tmp_path)
    argv = ["train.py", "-m", "seed=0,1", "trainer.resume=false", "hydra.sweep.dir=sweeps/a"]
    monkeypatch.setattr(sys, "argv", argv)
    HydraConfig.instance().set_config(cfg)
    try:
        words = shlex.split(resume_command(tmp_path / "sweeps" / "a" / "0"))
    finally:
        HydraConfig.instance().cfg = None
    assert words == [
        "python",
        "train.py",
        "-m",
        "seed=0,1",
        "trainer.resume=true",
        f"hydra.sweep.dir={tmp_path / 'sweeps' / 'a'}",
    ]


def test_trainers_instantiated_in_the_same_second_get_their_own_directories(
    tiny_config, tmp_path, monkeypatch
):
    """A loop over seeds in a script or notebook: each trainer its own run directory."""
    from hydra.utils import instantiate

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("time.strftime", lambda fmt: "2026-01-01_00-00-00")
    first = instantiate(tiny_config("ppo", ["seed=0"]).trainer)
    first.train()
    second = instantiate(tiny_config("ppo", ["seed=1"]).trainer)
    dirs = [t.save_trainer_file.parent.parent for t in (first, second)]
    assert [d.name for d in dirs] == ["2026-01-01_00-00-00", "2026-01-01_00-00-00_1"]


def test_resume_with_another_optimizer_names_it_instead_of_a_key_error(tiny_config, tmp_path):
    """Adam's saved state loaded into SGD used to fail at the first step (KeyError)."""
    from rl_trainers.trainers.checkpoint import CheckpointError

    first = build_trainer(tiny_config("ppo"), tmp_path / "a")
    first.train()
    resumed = build_trainer(tiny_config("ppo", ["optimizer=sgd"]), tmp_path / "b")
    with pytest.raises(CheckpointError) as err:
        resumed.load_from_file(first.save_trainer_file)
    assert "optimizer._target_: checkpoint 'torch.optim.Adam', this run 'torch.optim.SGD'" in str(
        err.value
    )
    same = build_trainer(tiny_config("ppo", ["optimizer.lr=3e-4"]), tmp_path / "c")
    same.load_from_file(first.save_trainer_file)  # another lr is not another optimizer


def test_checkpoint_made_before_the_optimizer_was_recorded_still_resumes(tiny_config, tmp_path):
    first = build_trainer(tiny_config("ppo"), tmp_path / "a")
    first.checkpoint_metadata.pop("optimizer._target_")  # as saved by the previous version
    first.train()
    resumed = build_trainer(tiny_config("ppo"), tmp_path / "b")
    resumed.load_from_file(first.save_trainer_file)
    assert resumed.collected_frames == 256


def test_field_of_an_unchosen_group_option_names_the_option(tmp_path):
    """It used to say 'not a field of PPO (it is PPO/SAC's)'."""
    proc = train("ppo", "model.policy.state_dependent_scale=false", cwd=tmp_path)
    assert_user_error(
        proc,
        "model.policy.state_dependent_scale is a field of model/policy=tanh_normal, not of "
        "the chosen model/policy option: choose one with model/policy=tanh_normal",
    )
    assert "PPO/SAC" not in proc.stderr
