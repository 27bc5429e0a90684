"""``rl-trainers <algorithm> ...`` (here ``python -m rl_trainers``) is the algorithm's
``train.py``: the same config, help, sweeps, torchrl names and one-line errors; the commands
on trained runs live in the same command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import TINY
from .test_cli import train


def rl_trainers(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rl_trainers", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_help_lists_every_algorithm_and_command(tmp_path):
    proc = rl_trainers("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for command in ("ppo", "a2c", "pg", "sac", "td3", "ddpg", "dqn"):
        assert command in proc.stdout
    for command in ("eval RUN_DIR", "enjoy RUN_DIR", "export RUN_DIR OUT", "results DIR"):
        assert command in proc.stdout


@pytest.mark.parametrize(("typed", "meant"), [("ppx", "ppo"), ("PPO", "ppo"), ("evl", "eval")])
def test_an_unknown_command_is_one_error_line(typed, meant, tmp_path):
    proc = rl_trainers(typed, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: unknown command '{typed}': did you mean {meant}?")


def test_version(tmp_path):
    from rl_trainers import __version__

    proc = rl_trainers("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"rl_trainers {__version__}"


@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_the_composed_config_is_the_scripts(algorithm, tmp_path):
    args = ["--cfg", "job", "seed=3", "training_env.num_workers=2"]
    command = rl_trainers(algorithm, *args, cwd=tmp_path)
    script = train(algorithm, *args, cwd=tmp_path)
    assert command.returncode == 0, command.stderr
    assert command.stdout == script.stdout
    assert "num_envs: 2" in command.stdout


def test_algorithm_help_lists_its_groups(tmp_path):
    proc = rl_trainers("sac", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: rl-trainers sac [group=option] [field=value]" in proc.stdout
    assert "== Config groups (group=option) ==" in proc.stdout
    assert "sac_halfcheetah" in proc.stdout and "ppo_pendulum" not in proc.stdout


def test_a_config_mistake_is_one_line_and_status_2(tmp_path):
    proc = rl_trainers("ppo", "optimizer.lrr=1e-3", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: optimizer.lrr is not a field: did you mean optimizer.lr?")
    assert "python -m rl_trainers ppo --help" in proc.stderr and "Traceback" not in proc.stderr


def test_another_algorithms_preset_names_its_command(tmp_path):
    proc = rl_trainers("ppo", "experiment=sac_halfcheetah", cwd=tmp_path)
    assert proc.returncode == 2
    assert "run it with python -m rl_trainers sac experiment=sac_halfcheetah" in proc.stderr


def test_a_sweep_runs_each_job(tmp_path):
    proc = rl_trainers(
        "ppo", "-m", "seed=0,1", *TINY["ppo"], f"hydra.sweep.dir={tmp_path}/sweep", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [
        json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/summary.json"))
    ]
    assert sorted(s["seed"] for s in summaries) == [0, 1]


def test_the_commands_on_runs_answer_in_the_same_command(tmp_path):
    proc = rl_trainers("eval", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and "not a run directory" in proc.stderr
    proc = rl_trainers("results", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "rl-trainers results" in proc.stdout
