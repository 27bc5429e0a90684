"""rl-zoo's command line (``python train.py --algo sac --env Hopper-v5 -n 300000``) typed at
this app: one ``Error:`` line naming the command to type here, and that command runs the
settings rl-zoo's would."""

from __future__ import annotations

import shlex

import pytest
import yaml

from rl_trainers.app.rl_zoo import (
    command_here,
    option_overrides,
    split_options,
    without_counterpart,
)

from .test_cli import train
from .test_rl_trainers_command import rl_trainers


def test_options_split_with_their_words():
    args = ["--env", "Pendulum-v1", "--env-kwargs", "g:9.81", "m:2", "-n", "-5", "--track"]
    assert split_options([*args, "seed=3", "--eval-freq=100"]) == [
        ("--env", "env", ["Pendulum-v1"]),
        ("--env-kwargs", "env-kwargs", ["g:9.81", "m:2"]),
        ("-n", "n-timesteps", ["-5"]),  # a negative number is a value
        ("--track", "track", []),
        ("--eval-freq=100", "eval-freq", ["100"]),
    ]


@pytest.mark.parametrize(
    ("algorithm", "name", "values", "overrides"),
    [
        ("sac", "env", ["Hopper-v5"], "experiment=sac_halfcheetah env=hopper"),  # tuned settings
        ("sac", "env", ["HalfCheetah-v5"], "experiment=sac_halfcheetah"),
        ("ppo", "env", ["CartPole-v1"], "env=cartpole"),
        ("ppo", "env", ["LunarLander-v3"], "env.env_name=LunarLander-v3"),
        ("ppo", "n-timesteps", ["200000"], "trainer.total_frames=200000"),
        ("ppo", "eval-freq", ["-1"], "eval.interval=0"),  # rl-zoo's "no evaluation"
        ("ppo", "save-freq", ["5000"], "trainer.save_trainer_interval=5000"),
        ("ppo", "n-envs", ["4"], "env.num_envs=4"),  # named after a field
        ("ppo", "vec-env", ["subproc"], "env.vectorization=async"),
        ("ppo", "tensorboard-log", ["tb/"], "logger=tensorboard"),
        ("ppo", "wandb-project-name", ["mine"], "logger=wandb logger.project=mine"),
        ("ppo", "env-kwargs", ["g:9.81", "m:2"], "+env.make_kwargs.g=9.81 +env.make_kwargs.m=2"),
        (
            "ppo",
            "hyperparams",
            ["learning_rate:0.001", "n_epochs:5"],
            "optimizer.lr=0.001 trainer.num_epochs=5",
        ),
        (  # SB3's n_steps is per env, a batch here holds every env's steps
            "a2c",
            "hyperparams",
            ["n_steps:5", "n_envs:8"],
            "collector.frames_per_batch=40 env.num_envs=8",
        ),
        (  # rl-zoo's linear schedules
            "ppo",
            "hyperparams",
            ["learning_rate:lin_3e-4", "clip_range:lin_0.2", "n_timesteps:1e6"],
            "optimizer.lr=3e-4 lr_scheduler.kind=linear loss.clip_epsilon=0.2 "
            "trainer.anneal_clip_epsilon=true trainer.total_frames=1000000",
        ),
        (
            "sac",
            "hyperparams",
            ["learning_starts:1000", "train_freq:4", "gradient_steps:2", "ent_coef:auto_0.1"],
            "collector.init_random_frames=1000 trainer.learning_starts=1000 "
            "collector.frames_per_batch=4 trainer.utd_ratio=0.5 loss.alpha_init=0.1",
        ),
        ("sac", "hyperparams", ["ent_coef:0.2"], "loss.fixed_alpha=true loss.alpha_init=0.2"),
        ("td3", "hyperparams", ["noise_type:normal"], "trainer.exploration_noise=gaussian"),
        (  # older SB3's net_arch: a list holding the dict
            "ppo",
            "hyperparams",
            ["policy_kwargs:dict(net_arch=[dict(pi=[256], vf=[128])])"],
            "network.policy.num_cells=[256] network.value.num_cells=[128]",
        ),
        (
            "dqn",
            "hyperparams",
            ["policy_kwargs:dict(net_arch=[64])"],
            "network.value.num_cells=[64]",
        ),
        ("ppo", "n-timesteps", ["1e6"], "trainer.total_frames=1000000"),  # an int field
        ("ppo", "optimize", [], "-m +hparams_search=<study>"),  # argparse's abbreviation
        (  # the app's layout under the folder: where eval --algo ... -f looks for the run
            "ppo",
            "log-folder",
            ["logs/"],
            "'hydra.run.dir=logs/${algorithm}/${env.env_name}/${now:%Y-%m-%d_%H-%M-%S}'",
        ),
        ("ppo", "algo", ["ppo"], ""),  # this app already
        ("ppo", "save-replay-buffer", [], ""),  # checkpoints hold it already
        ("ppo", "verbose", ["0"], None),  # no counterpart
    ],
)
def test_each_option_stands_for_its_overrides(algorithm, name, values, overrides):
    assert option_overrides(algorithm, name, values) == overrides


def test_what_has_no_counterpart_is_named():
    args = ["--env", "Pendulum-v1", "--n-eval-envs", "5", "-params", "target_update_interval:10"]
    assert without_counterpart("dqn", args) == ["--n-eval-envs", "target_update_interval"]
    assert command_here("dqn", args, "rl-trainers dqn") == "rl-trainers dqn env=pendulum"


def test_another_algorithm_names_its_command():
    whole = command_here("ppo", ["--algo", "td3", "-n", "1000"], "rl-trainers ppo")
    assert whole == "rl-trainers td3 trainer.total_frames=1000"
    script = "python sota-implementations/ppo_trainer/train.py"
    assert command_here("ppo", ["--algo", "sac"], script) == script.replace("ppo", "sac")
    assert command_here("ppo", ["--algo", "tqc"], script) is None  # no such algorithm here


def named_command(stderr: str) -> list[str]:
    """The words of the command an ``Error:`` line names after its marker."""
    line = stderr.splitlines()[0]
    assert line.startswith("Error: "), stderr
    for marker in ("rl-zoo's command line here: ", "the algorithm is the command: "):
        if marker in line:
            return shlex.split(line.split(marker, 1)[1].split(";")[0])
    raise AssertionError(f"no command in {line!r}")


def test_an_rl_zoo_command_line_names_the_command_that_runs_its_settings(tmp_path):
    """The command the error names composes, with rl-zoo's settings in their fields."""
    zoo = [
        "--algo", "sac", "--env", "Hopper-v5", "-n", "300000", "--seed", "1",
        "--eval-freq", "10000", "--eval-episodes", "5", "-params", "learning_rate:0.001",
    ]  # fmt: skip
    proc = rl_trainers("train", *zoo, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("Error: unknown command 'train': the algorithm is the command")
    words = named_command(proc.stderr)
    assert words[:4] == ["python", "-m", "rl_trainers", "sac"]  # as this one was started
    composed = rl_trainers(*words[3:], "--cfg", "job", cwd=tmp_path)
    assert composed.returncode == 0, composed.stderr
    cfg = yaml.safe_load(composed.stdout)
    assert cfg["env"]["env_name"] == "Hopper-v5"
    assert cfg["trainer"]["total_frames"] == 300000
    assert cfg["seed"] == 1
    assert cfg["eval"] == {**cfg["eval"], "interval": 10000, "episodes": 5}
    assert cfg["optimizer"]["lr"] == 0.001
    assert cfg["replay_buffer"]["batch_size"] == 256  # the MuJoCo preset: rl-zoo's tuned entry

    # the same line given to a train.py script names that algorithm's script
    proc = train("ppo", *zoo, cwd=tmp_path)
    assert proc.returncode == 2
    assert "--algo is not an option" in proc.stderr
    words = named_command(proc.stderr)
    assert words[:2] == ["python", "sota-implementations/sac_trainer/train.py"]
    script = train("sac", *words[2:], "--cfg", "job", cwd=tmp_path)
    assert script.returncode == 0, script.stderr
    assert yaml.safe_load(script.stdout) == cfg


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-i", "logs/sac/Hopper-v5_1/Hopper-v5.zip"], "not an SB3 .zip"),  # not Hydra's --info
        (["--vec-env", "subproc", "--n-envs", "4"], "env.vectorization=async env.num_envs=4"),
        (["--track", "--wandb-project-name", "p"], "here: python sota-implementations/sac"),
        (["-optimize", "--n-trials", "10"], "-m +hparams_search=<study>"),
        (["--algo", "tqc"], "no tqc here: the algorithms are a2c, ddpg"),
        (["--env", "Pendulum-v1", "--n-eval-envs", "5"], "; no counterpart here: --n-eval-envs;"),
    ],
)
def test_one_rl_zoo_option_is_one_error_line(args, expected, tmp_path):
    proc = train("sac", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {args[0]} is not an option"), proc.stderr
    assert expected in proc.stderr.splitlines()[0]
    assert "usage:" not in proc.stderr


def test_hydras_info_flag_still_works(tmp_path):
    proc = train("ppo", "-i", "defaults", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Defaults List" in proc.stdout


def test_both_forms_of_an_rl_zoo_command_line_name_the_command_and_what_it_leaves_out(tmp_path):
    """``rl-trainers train --algo td3 ...`` and ``rl-trainers td3 --algo td3 ...`` name the
    same command, with the env's preset, and list the options it leaves out."""
    zoo = ["--algo", "td3", "--env", "Hopper-v5", "--verbose", "1"]
    hints = []
    for command in ("train", "td3"):
        proc = rl_trainers(command, *zoo, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        line = proc.stderr.splitlines()[0]
        assert "no counterpart here: --verbose;" in line
        hints.append(line[line.index("; rl-zoo's command line here: ") :].rsplit(";", 1)[0])
        words = named_command(proc.stderr)
        assert words[3:] == ["td3", "experiment=td3_halfcheetah", "env=hopper"]
    assert hints[0] == hints[1]


@pytest.mark.parametrize(
    ("algorithm", "hyperparams", "fields", "missing"),
    [
        (
            "sac",
            ["policy_kwargs:dict(net_arch=[400, 300], log_std_init=-2)"],
            {"network.policy.num_cells": [400, 300], "network.value.num_cells": [400, 300]},
            "policy_kwargs.log_std_init",
        ),
        (
            "ppo",
            ["policy_kwargs:dict(net_arch=dict(pi=[64], vf=[32]), activation_fn=nn.ReLU)"],
            {
                "network.policy.num_cells": [64],
                "network.value.num_cells": [32],
                "network.policy.activation": "relu",
                "network.value.activation": "relu",
            },
            None,
        ),
        (
            "td3",
            ["noise_type:normal", "normalize:true", "ent_coef:0.1"],
            {
                "trainer.exploration_noise": "gaussian",
                "env.normalize_observations": True,
                "env.normalize_rewards": True,
            },
            "ent_coef",  # SAC's temperature: TD3 has none
        ),
        (
            "ppo",
            ["normalize:{'norm_obs': True, 'norm_reward': False}"],
            {"env.normalize_observations": True, "env.normalize_rewards": False},
            None,
        ),
    ],
)
def test_rl_zoo_hyperparams_name_their_fields(algorithm, hyperparams, fields, missing, tmp_path):
    """rl-zoo's ``policy_kwargs`` and ``normalize`` become this app's fields in the command
    the error names; what has no counterpart is listed, never pasted into it."""
    zoo = ["--algo", algorithm, "--env", "Hopper-v5", "--hyperparams", *hyperparams]
    proc = rl_trainers("train", *zoo, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.splitlines()[0]
    if missing:
        assert f"; no counterpart here: {missing};" in line
    else:
        assert "no counterpart" not in line
    words = named_command(proc.stderr)
    assert not [word for word in words if ":" in word.partition("=")[0]]  # no key:value words
    composed = rl_trainers(*words[3:], "--cfg", "job", cwd=tmp_path)
    assert composed.returncode == 0, composed.stderr
    cfg = yaml.safe_load(composed.stdout)
    for field, value in fields.items():
        group, *path = field.split(".")
        found = cfg[group]
        for key in path:
            found = found[key]
        assert found == value, field
