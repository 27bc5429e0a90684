"""Config values the app refuses or warns about before training (each one ``Error:`` or
warning line naming the field), and the values it accepts."""

from __future__ import annotations

import json
import os
import warnings

import pytest

from rl_trainers.algorithms.components import make_sac_loss
from rl_trainers.app.run import run
from rl_trainers.configs.validation import validate_config
from rl_trainers.errors import ConfigError, ConfigWarning

from .conftest import TINY, compose_config
from .test_cli import train
from .test_config_errors import assert_user_error, run_bad


def test_bad_gemm_backend_variable_is_one_error_line(tmp_path):
    env = {**os.environ, "RL_TRAINERS_GEMM": "bogus"}
    proc = train("ppo", *TINY["ppo"], f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, env=env)
    assert_user_error(proc, "RL_TRAINERS_GEMM='bogus' is invalid", "auto", "mkl", "onednn")


@pytest.mark.parametrize("value", ["MKL", " onednn ", "auto"])
def test_gemm_backend_values_gemm_accepts_pass_validation(tiny_config, monkeypatch, value):
    monkeypatch.setenv("RL_TRAINERS_GEMM", value)
    validate_config(tiny_config("ppo"))


@pytest.mark.parametrize(
    "override, expected",
    [
        ("eval.interval=-5", "eval.interval=-5 is invalid: 0 (only at the end) or a positive"),
        ("trainer.num_threads=-1", "trainer.num_threads=-1 is invalid: a positive number"),
    ],
)
def test_negative_interval_or_thread_count_is_refused(tiny_config, override, expected):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("ppo", [override]))
    assert str(err.value).startswith(expected)


@pytest.mark.parametrize(
    "algorithm, overrides, expected",
    [
        # collector workers: at least one
        ("ppo", ["collector=multi_sync", "collector.num_workers=0"], "collector.num_workers=0"),
        ("ppo", ["collector=multi_sync", "collector.num_workers=-1"], "collector.num_workers=-1"),
        # env settings named by their field, not by the component that fails on them
        ("ppo", ["env.frame_skip=0"], "env.frame_skip=0"),
        ("ppo", ["env.max_episode_steps=0"], "env.max_episode_steps=0"),
        ("ppo", ["env.max_episode_steps=-1"], "env.max_episode_steps=-1"),
        # a reward scale of 0 would train on zero rewards
        ("ppo", ["env.reward_scale=0"], "env.reward_scale=0.0"),
        # optimizer values (lr=0 would train nothing)
        ("ppo", ["optimizer.lr=-1"], "optimizer.lr=-1.0"),
        ("ppo", ["optimizer.lr=0"], "optimizer.lr=0.0"),
        ("ppo", ["optimizer.eps=-1"], "optimizer.eps=-1.0"),
        ("ppo", ["optimizer=sgd", "optimizer.momentum=-1"], "optimizer.momentum=-1.0"),
        # clipping norm and target-update rate
        ("ppo", ["trainer.clip_norm=0"], "trainer.clip_norm=0.0"),
        ("sac", ["trainer.clip_norm=-1"], "trainer.clip_norm=-1.0"),
        ("sac", ["trainer.tau=0"], "trainer.tau=0.0"),
        ("sac", ["trainer.tau=-1"], "trainer.tau=-1.0"),
        ("dqn", ["trainer.tau=1.5"], "trainer.tau=1.5"),
        # negative warm-up frames
        ("sac", ["collector.init_random_frames=-5"], "collector.init_random_frames=-5"),
        ("dqn", ["collector.init_random_frames=-5"], "collector.init_random_frames=-5"),
        # activations outside the supported names
        ("ppo", ["network.policy.activation=relu6"], "network.policy.activation='relu6'"),
        ("sac", ["network.value.activation=swish"], "network.value.activation='swish'"),
    ],
)
def test_bad_numbers_name_their_field(tiny_config, algorithm, overrides, expected):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config(algorithm, overrides))
    assert str(err.value).startswith(f"{expected} is invalid: ")


def test_zero_collector_workers_is_one_error_line(tmp_path):
    proc = run_bad("ppo", tmp_path, "collector=multi_sync", "collector.num_workers=0")
    assert_user_error(proc, "collector.num_workers=0 is invalid", "positive")


def test_zero_clip_norm_is_one_error_line(tmp_path):
    proc = run_bad("ppo", tmp_path, "trainer.clip_norm=0")
    assert_user_error(proc, "trainer.clip_norm=0.0 is invalid", "null (no clipping)")


@pytest.mark.parametrize("alpha_init", [0.0, -1.0])
def test_sac_alpha_init_must_be_positive(alpha_init):
    """A non-positive ``alpha_init`` is a config error naming ``loss.alpha_init``."""
    with pytest.raises(ConfigError, match=rf"loss.alpha_init={alpha_init} is invalid"):
        make_sac_loss(None, None, alpha_init=alpha_init)


def test_learning_starts_past_the_run_suggests_a_value(tiny_config):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("sac", ["trainer.learning_starts=1000"]))
    assert "e.g. trainer.learning_starts=50" in str(err.value)


@pytest.mark.parametrize("field", ["loss.critic_coef", "loss.entropy_coef"])
def test_ppo_negative_loss_weights_are_refused_as_a2c_refuses_them(tiny_config, field, tmp_path):
    """PPO trained with a negative critic or entropy weight before (A2C refused them)."""
    cfg = tiny_config("ppo", [f"{field}=-1"])
    with pytest.raises(ConfigError, match=rf"^{field}=-1.0 is invalid: a non-negative weight"):
        run(cfg, output_dir=tmp_path / "run")


def test_a_config_warning_is_one_warning_line(tmp_path):
    """A config warning is printed as one ``Warning:`` line, without Python's file:line
    prefix or source line."""
    proc = run_bad("ppo", tmp_path, "trainer.log_interval=100000")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "trainer.log_interval" in line]
    assert lines == [
        "Warning: trainer.log_interval=100000 is more than the 256 frames this run collects "
        "(trainer.total_frames=256): no training scalar will be logged; set "
        "trainer.log_interval=256 or less"
    ], proc.stderr
    assert "UserWarning" not in proc.stderr and "validate_config(cfg)" not in proc.stderr


def test_total_frames_rounded_up_to_whole_batches_is_one_warning_line(tmp_path):
    """300 frames in 64-frame batches train 320: one warning line says so."""
    proc = run_bad("ppo", tmp_path, "trainer.total_frames=300")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "total_frames" in line]
    assert lines == [
        "Warning: trainer.total_frames=300 is not a multiple of collector.frames_per_batch "
        "(64): the run collects whole batches and trains 320 frames (set "
        "trainer.total_frames=320 or 256 for an exact count)"
    ], proc.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["frames"] == 320


@pytest.mark.parametrize(
    "algorithm, overrides",
    [
        ("sac", ["trainer.total_frames=201"]),  # one frame per batch: never rounded
        ("ppo", ["trainer.total_frames=100000", "collector.frames_per_batch=256"]),  # +0.1%
    ],
)
def test_total_frames_rounded_by_little_or_not_at_all_is_not_warned(
    tiny_config, algorithm, overrides
):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        validate_config(tiny_config(algorithm, overrides))
    assert not [w for w in caught if issubclass(w.category, ConfigWarning)]


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


@pytest.mark.parametrize(
    ("algorithm", "experiment"),
    [("ppo", "ppo_halfcheetah"), ("sac", "sac_halfcheetah"), ("td3", "td3_halfcheetah")],
)
def test_mujoco_presets_checkpoint_periodically(algorithm, experiment):
    # hours-long runs: a SIGKILL loses at most 100k frames, not the whole run
    cfg = compose_config(algorithm, [f"experiment={experiment}", "env=hopper"])
    assert cfg.trainer.save_trainer_interval == 100_000
    assert cfg.trainer.keep_checkpoints == 2
    assert compose_config(algorithm, []).trainer.save_trainer_interval == 0  # short recipes


def test_an_encoder_target_of_your_own_is_refused_not_ignored():
    """The model builders build ``network.encoder`` from its fields: another ``_target_``
    would be silently ignored (the app's ConvNet trained instead), so it is refused, naming
    where an encoder of your own goes."""
    cfg = compose_config(
        "ppo",
        ["network=convnet", "env.from_pixels=true", "network.encoder._target_=my_nets.encoder"],
    )
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    assert str(err.value) == (
        "network.encoder._target_='my_nets.encoder' is invalid: rl_trainers.modules.make_convnet "
        "(the model builders build the encoder from network.encoder's fields, so another "
        "target would be ignored); for an encoder of your own, name builders of your own in "
        "model.policy._target_ and model.critic._target_ (docs/configuration.md, Networks of "
        "your own)"
    )
    validate_config(compose_config("ppo", ["network=convnet", "env.from_pixels=true"]))


@pytest.mark.parametrize("path", ["network.policy", "network.value", "network"])
def test_a_target_added_to_a_node_nothing_instantiates_is_refused_not_ignored(path):
    """``+network.policy._target_=...`` would be ignored (the model builders read the node's
    fields): refused, naming where a network of your own goes."""
    cfg = compose_config("ppo", [f"+{path}._target_=my_nets.MyNet"])
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    assert str(err.value) == (
        f"{path}._target_='my_nets.MyNet' is invalid: not a field: {path} is read by the "
        "app's builders, not instantiated, so a _target_ there would be ignored; for a network "
        "of your own, name builders of your own in model.policy._target_ and "
        "model.critic._target_ (docs/configuration.md, Networks of your own)"
    )
