"""A bad config, environment variable or checkpoint stops the run before training with one
``Error: ...`` line naming the field and what is accepted, and exit status 2."""

from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest
import torch

from rl_trainers.core.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from rl_trainers.errors import ConfigError

from .conftest import TINY
from .test_cli import train


def assert_user_error(proc, *expected: str) -> None:
    """Exit status 2 and one ``Error:`` line holding every ``expected`` string."""
    err = proc.stderr
    assert proc.returncode == 2, err[-3000:]
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, err
    for word in expected:
        assert word in lines[0], err
    assert "summary.json" not in err and not proc.stdout.strip(), proc.stdout


def run_bad(algorithm, tmp_path, *args, env=None):
    return train(
        algorithm,
        *TINY[algorithm],
        *args,
        f"hydra.run.dir={tmp_path}/run",
        cwd=tmp_path,
        env=env,
    )


def _no_cuda_device(index: int) -> bool:
    return torch.cuda.device_count() <= index


@pytest.mark.parametrize(
    ("algorithm", "args", "expected"),
    [
        ("ppo", ["device=banana"], ["device='banana'", "not a torch device", "cpu"]),
        pytest.param(
            "ppo",
            ["device=cuda:9"],
            ["device='cuda:9'", "not available on this machine", "cpu"],
            marks=pytest.mark.skipif(not _no_cuda_device(9), reason="this machine has cuda:9"),
        ),
        ("ppo", ["env.device=banana"], ["env.device='banana'", "not a torch device"]),
        ("ppo", ["collector.device=banana"], ["collector.device='banana'", "not a torch device"]),
        ("ppo", ["trainer.keep_checkpoints=0"], ["trainer.keep_checkpoints=0", "positive"]),
        ("ppo", ["seed=-1"], ["seed=-1", "from 0"]),
        (
            "ppo",
            ["trainer.total_frames=32"],
            ["trainer.total_frames=32", "at least collector.frames_per_batch (64)"],
        ),
        ("ppo", ["env.make_kwargs=3"], ["env.make_kwargs=3", "a dict of gymnasium.make arguments"]),
        (
            "ppo",
            ["env.normalize_rewards=true", "env.reward_norm_gamma=1.5"],
            ["env.reward_norm_gamma=1.5", "a discount in [0, 1]"],
        ),
        (
            "a2c",
            ["env.normalize_rewards=true", "env.reward_norm_clip=0"],
            ["env.reward_norm_clip=0", "a positive number"],
        ),
        (
            "ppo",
            ["env.normalize_observations=true", "env.obs_norm_clip=-1"],
            ["env.obs_norm_clip=-1", "a positive number"],
        ),
        (
            "ppo",
            ["optimizer.betas=[0.9,0.999,0.5]"],
            ["optimizer.betas=[0.9, 0.999, 0.5]", "two numbers in [0, 1)"],
        ),
        ("ppo", ["optimizer=adamw", "optimizer.betas=[0.9,1.5]"], ["optimizer.betas", "[0, 1)"]),
        (
            "ppo",
            ["network.policy.num_cells=[64,0]"],
            ["network.policy.num_cells=[64, 0]", "a list of positive integers"],
        ),
        ("sac", ["network.value.num_cells=[-3]"], ["network.value.num_cells=[-3]", "positive"]),
        (
            "sac",
            ["replay_buffer.batch_size=100000", "replay_buffer.size=10000"],
            ["replay_buffer.batch_size=100000", "at most replay_buffer.size (10000)"],
        ),
        (
            "ppo",
            ["env=pendulum", "model/policy=tanh_normal", "model.policy.log_std_init=-2"],
            ["model.policy.log_std_init=-2.0", "model.policy.state_dependent_scale=false"],
        ),
    ],
)
def test_bad_value_is_one_line_with_exit_status_2(algorithm, args, expected, tmp_path):
    assert_user_error(run_bad(algorithm, tmp_path, *args), *expected)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["trainer.eps_init=-0.1"], ["trainer.eps_init=-0.1", "a probability in [0, 1]"]),
        (["trainer.eps_end=1.5"], ["trainer.eps_end=1.5", "a probability in [0, 1]"]),
        (
            ["trainer.eps_init=0.1", "trainer.eps_end=0.5"],
            ["trainer.eps_end=0.5", "at most trainer.eps_init (0.1)"],
        ),
        (["trainer.exploration_fraction=0"], ["trainer.exploration_fraction=0", "(0, 1]"]),
        (
            ["trainer.target_update_interval=0"],
            ["trainer.target_update_interval=0", "a positive number of gradient updates"],
        ),
        (["trainer.tau=0"], ["trainer.tau=0", "(0, 1]"]),
        (["trainer.utd_ratio=0"], ["trainer.utd_ratio=0", "positive"]),
        (
            ["trainer.learning_starts=300"],
            ["trainer.learning_starts=300", "below trainer.total_frames"],
        ),
        (["replay_buffer.batch_size=0"], ["replay_buffer.batch_size=0", "positive"]),
    ],
)
def test_bad_dqn_value_names_the_field(tiny_config, overrides, expected):
    from rl_trainers.configs.validation import validate_config

    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("dqn", overrides))
    for word in expected:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["env=pendulum"],
            ["env.env_name='Pendulum-v1'", "discrete actions", "sac_trainer", "sac, td3, ddpg"],
        ),
        (["trainer.eps_end=0.5", "trainer.eps_init=0.2"], ["trainer.eps_end=0.5", "eps_init"]),
    ],
)
def test_dqn_on_a_continuous_env_or_a_bad_epsilon_is_one_line(args, expected, tmp_path):
    assert_user_error(run_bad("dqn", tmp_path, *args), *expected)


@pytest.mark.parametrize("algorithm", ["td3", "ddpg"])
@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["trainer.exploration_noise=uniform"], ["trainer.exploration_noise='uniform'", "ou"]),
        (["trainer.noise_std=-0.1"], ["trainer.noise_std=-0.1", ">= 0"]),
        (
            ["trainer.noise_std=0.1", "trainer.noise_std_end=0.2"],
            ["trainer.noise_std_end=0.2", "[0, trainer.noise_std=0.1]"],
        ),
        (["trainer.noise_annealing_fraction=0"], ["noise_annealing_fraction=0", "(0, 1]"]),
        (["trainer.ou_theta=0"], ["trainer.ou_theta=0", "positive"]),
        (["trainer.tau=0"], ["trainer.tau=0", "(0, 1]"]),
        (["trainer.utd_ratio=0"], ["trainer.utd_ratio=0", "positive"]),
        (
            ["trainer.learning_starts=300"],
            ["trainer.learning_starts=300", "below trainer.total_frames"],
        ),
        (["replay_buffer.batch_size=0"], ["replay_buffer.batch_size=0", "positive"]),
    ],
)
def test_bad_td3_or_ddpg_value_names_the_field(tiny_config, algorithm, overrides, expected):
    from rl_trainers.configs.validation import validate_config

    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config(algorithm, overrides))
    for word in expected:
        assert word in str(err.value)


#: every trainer a continuous-action trainer's error points to for a discrete env
DISCRETE = ["ppo_trainer/train.py", "train discrete ones with ppo, dqn, a2c or pg"]


@pytest.mark.parametrize(
    ("algorithm", "args", "expected"),
    [
        ("td3", ["env=cartpole"], ["env.env_name='CartPole-v1'", "continuous", *DISCRETE]),
        ("ddpg", ["env=acrobot"], ["env.env_name='Acrobot-v1'", "continuous", *DISCRETE]),
        ("sac", ["env=cartpole"], ["SAC needs", "continuous", *DISCRETE]),
        ("td3", ["trainer.policy_delay=0"], ["trainer.policy_delay=0", "a positive integer"]),
        ("td3", ["trainer.policy_delay=1.5"], ["trainer.policy_delay=1.5", "int"]),
        ("td3", ["trainer.exploration_noise=pink"], ["exploration_noise='pink'", "gaussian"]),
        ("ddpg", ["trainer.noise_std=-1"], ["trainer.noise_std=-1", ">= 0"]),
        ("td3", ["loss.policy_noise=-0.2"], ["loss.policy_noise=-0.2", ">= 0"]),
        ("td3", ["loss.noise_clip=-1"], ["loss.noise_clip=-1", ">= 0"]),
        ("td3", ["loss.num_qvalue_nets=0"], ["loss.num_qvalue_nets=0", "at least 1"]),
        ("ddpg", ["loss.loss_function=huber"], ["loss.loss_function='huber'", "smooth_l1"]),
    ],
)
def test_td3_and_ddpg_errors_are_one_line(algorithm, args, expected, tmp_path):
    assert_user_error(run_bad(algorithm, tmp_path, *args), *expected)


def test_unknown_checkpoint_backend_fails_before_training(tmp_path):
    env = dict(os.environ, CKPT_BACKEND="tourch")
    proc = run_bad("ppo", tmp_path, env=env)
    assert_user_error(proc, "CKPT_BACKEND='tourch'", "torch or torchsnapshot")
    assert not (tmp_path / "run" / "checkpoints").exists() or not any(
        (tmp_path / "run" / "checkpoints").iterdir()
    )


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is not None, reason="Box2D is installed")
def test_env_without_its_dependency_names_env_name_and_pip(tmp_path):
    proc = run_bad("ppo", tmp_path, "env.env_name=LunarLander-v3")
    assert_user_error(proc, "env.env_name='LunarLander-v3'", "Box2D", "pip install")


FAKE_ENVS = """
import gymnasium
from gymnasium.error import DependencyNotInstalled


class NeedsFoo(gymnasium.Env):
    def __init__(self, **kwargs):
        raise DependencyNotInstalled('foo is not installed, run `pip install "foo[env]"`')


class ImportsMissingModule(gymnasium.Env):
    def __init__(self, **kwargs):
        import no_such_module_for_rl_trainers_tests  # noqa: F401
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NeedsFoo", ['pip install "foo[env]"']),
        ("ImportsMissingModule", ["'no_such_module_for_rl_trainers_tests'", "not installed"]),
    ],
)
def test_missing_env_dependency_is_a_config_error(name, expected, tmp_path):
    (tmp_path / "fake_envs_for_errors.py").write_text(textwrap.dedent(FAKE_ENVS))
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    proc = run_bad("ppo", tmp_path, f"env.env_name=fake_envs_for_errors:{name}", env=env)
    assert_user_error(proc, f"env.env_name='fake_envs_for_errors:{name}'", *expected)


def test_resume_from_a_text_file_is_a_checkpoint_error(tmp_path):
    text = tmp_path / "config.yaml"
    text.write_text("seed: 0\nenv:\n  env_name: CartPole-v1\n")
    proc = run_bad("ppo", tmp_path, f"trainer.resume_from={text}")
    assert_user_error(proc, f"Checkpoint {text}", "not a torch file")


def test_resume_with_checkpoints_of_the_other_backend_says_which(tmp_path):
    snapshot = tmp_path / "run" / "checkpoints" / "trainer_512"
    snapshot.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "CKPT_BACKEND"}
    proc = run_bad("ppo", tmp_path, "trainer.resume=true", env=env)
    assert_user_error(proc, "trainer_512", "CKPT_BACKEND=torchsnapshot")
    assert "starting a new run" not in proc.stderr


# ----------------------------------------------------------------------------- checkpoint.py


@pytest.mark.parametrize(
    "content",
    [
        b"seed: 0\nenv:\n  env_name: CartPole-v1\n",  # Hydra's config.yaml: IndexError
        b"hello world\n",  # KeyError
        b'{"a": 1}\n',  # UnpicklingError, with torch's weights_only advice
        b"",  # EOFError
        b"e",
    ],
)
def test_load_checkpoint_of_a_non_torch_file_names_the_path(content, tmp_path, monkeypatch):
    monkeypatch.delenv("CKPT_BACKEND", raising=False)
    path = tmp_path / "not_a_checkpoint.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="not a torch file") as info:
        load_checkpoint(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert "weights_only` set to `False`" not in message


def test_latest_checkpoint_refuses_snapshots_under_the_torch_backend(tmp_path, monkeypatch):
    monkeypatch.delenv("CKPT_BACKEND", raising=False)
    (tmp_path / "trainer_512").mkdir()
    with pytest.raises(CheckpointError, match="CKPT_BACKEND=torchsnapshot") as info:
        latest_checkpoint(tmp_path / "trainer.pt")
    assert "trainer_512" in str(info.value) and str(tmp_path) in str(info.value)


def test_latest_checkpoint_refuses_torch_files_under_torchsnapshot(tmp_path, monkeypatch):
    monkeypatch.delenv("CKPT_BACKEND", raising=False)
    save_checkpoint({"format": "rl_trainers.trainer", "version": 1}, tmp_path / "trainer_256.pt")
    monkeypatch.setenv("CKPT_BACKEND", "torchsnapshot")
    with pytest.raises(CheckpointError, match="CKPT_BACKEND=torch to resume") as info:
        latest_checkpoint(tmp_path / "trainer.pt")
    assert "trainer_256.pt" in str(info.value)


def test_latest_checkpoint_of_an_empty_or_missing_directory_is_none(tmp_path, monkeypatch):
    monkeypatch.delenv("CKPT_BACKEND", raising=False)
    assert latest_checkpoint(tmp_path / "missing" / "trainer.pt") is None
    (tmp_path / "trainer_notanumber").mkdir()
    (tmp_path / ".trainer_512.tmp").mkdir()  # a leftover of an interrupted write
    assert latest_checkpoint(tmp_path / "trainer.pt") is None


def test_unknown_backend_is_a_checkpoint_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CKPT_BACKEND", "tourch")
    with pytest.raises(CheckpointError, match="CKPT_BACKEND='tourch'"):
        save_checkpoint({"x": 1}, tmp_path / "c.pt")


def test_an_accelerator_device_is_accepted_with_the_in_process_collector(monkeypatch):
    """``device=cuda:0`` trains there (the policy acts where its networks live); a collector
    device apart from it, or worker-process collectors, are refused with what to set."""
    from omegaconf import OmegaConf

    from rl_trainers.configs import validation
    from rl_trainers.errors import ConfigError

    monkeypatch.setattr(validation, "check_device", lambda field, value: None)  # "available"

    def cfg(**collector):
        return OmegaConf.create(
            {"device": "cuda:0", "env": {"device": "cpu"}, "collector": collector}
        )

    validation._check_devices(cfg())
    validation._check_devices(cfg(device="cuda"))  # cuda is cuda:0
    with pytest.raises(ConfigError, match=r"collector.device='cpu'.*acts where its networks"):
        validation._check_devices(cfg(device="cpu"))
    multi = "rl_trainers.collectors.MultiSyncDataCollector"
    with pytest.raises(ConfigError, match=r"device='cuda:0'.*use collector=sync"):
        validation._check_devices(cfg(_target_=multi))
    on_cpu = {"device": "cpu", "env": {"device": "cpu"}, "collector": {"device": "cuda"}}
    with pytest.raises(ConfigError, match=r"collector.device='cuda'.*device=cpu"):
        validation._check_devices(OmegaConf.create(on_cpu))
    validation._check_devices(OmegaConf.create({"device": "cpu", "env": {"device": "cpu"}}))


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("+trainer.num_epoch=3", ["trainer.num_epoch=3", "not a field", "trainer.num_epochs?"]),
        ("+foo=1", ["foo=1", "not a field", "ignored"]),
        ("+network.policy.num_cell=1", ["network.policy.num_cells?"]),
        ("+eval.every=5", ["eval.every=5", "not a field"]),
    ],
)
def test_a_key_added_with_plus_that_nothing_reads_is_refused(override, expected):
    """Hydra lets '+' add a key to any node; the trainer would silently ignore it."""
    from rl_trainers.configs.validation import validate_config

    from .conftest import compose_config

    with pytest.raises(ConfigError) as info:
        validate_config(compose_config("ppo", [override]))
    for word in expected:
        assert word in str(info.value)


def test_plus_keys_of_free_form_dicts_are_kept():
    from rl_trainers.configs.validation import validate_config

    from .conftest import compose_config

    validate_config(compose_config("sac", ["+env.make_kwargs.g=9.0"]))


def test_a_key_added_with_plus_stops_the_app_before_training(tmp_path):
    proc = run_bad("sac", tmp_path, "+trainer.foo=1")
    assert_user_error(proc, "trainer.foo=1", "not a field")


def test_a_new_run_in_a_used_run_directory_is_refused(tiny_config, tmp_path):
    """Re-running without trainer.resume into the same hydra.run.dir would append to the
    previous run's logs; it stops and says how to continue that run instead."""
    from rl_trainers.app.run import run

    run(tiny_config("ppo"), output_dir=tmp_path)
    scalars = tmp_path / "logs" / "ppo_CartPole-v1" / "scalars" / "loss_objective.csv"
    rows = scalars.read_text()
    with pytest.raises(ConfigError) as info:
        run(tiny_config("ppo"), output_dir=tmp_path)
    assert "hydra.run.dir" in str(info.value) and "trainer.resume=true" in str(info.value)
    assert scalars.read_text() == rows
    run(tiny_config("ppo", ["trainer.resume=true"]), output_dir=tmp_path)  # continuing is fine
