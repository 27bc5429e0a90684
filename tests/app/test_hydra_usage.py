"""Hydra used as its documentation describes, through train.py: sweeps over the env land in
one sweep directory, mistakes in interpolations are one ``Error:`` line, and ``--help`` lists
the options of a config directory of the user's own."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from .conftest import TINY, train


def test_a_sweep_over_envs_keeps_every_job_in_one_sweep_directory(tmp_path):
    """``-m env=pendulum,acrobot``: both jobs in ``<sweep dir>/0`` and ``/1``, beside the
    sweep's ``multirun.yaml`` (the sweep directory names no env of the default recipe)."""
    proc = train(
        "ppo",
        "-m",
        "env=pendulum,acrobot",
        *TINY["ppo"],
        "logger.exp_name=job_${hydra:job.num}",  # resolvable in a job only
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Warning" not in proc.stderr
    sweeps = list((tmp_path / "multirun" / "ppo").iterdir())
    assert [s.name for s in sweeps] == ["env_sweep"]
    (sweep,) = sweeps[0].iterdir()
    assert (sweep / "multirun.yaml").is_file()
    envs = {
        job: json.loads((sweep / job / "summary.json").read_text())["env"] for job in ("0", "1")
    }
    assert envs == {"0": "Pendulum-v1", "1": "Acrobot-v1"}
    for job, option in (("0", "pendulum"), ("1", "acrobot")):
        overrides = yaml.safe_load((sweep / job / ".hydra" / "overrides.yaml").read_text())
        assert f"env={option}" in overrides


def test_a_sweep_over_envs_set_in_the_sweepers_params_keeps_one_directory(tmp_path):
    """The same with the sweep written in an experiment file of one's own
    (``hydra.sweeper.params``, Hydra's way of keeping a sweep in a config)."""
    (tmp_path / "mine" / "experiment").mkdir(parents=True)
    (tmp_path / "mine" / "experiment" / "envs.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      env: pendulum,acrobot\n"
    )
    proc = train("ppo", "-m", "--config-dir", "mine", "experiment=envs", *TINY["ppo"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (tmp_path / "multirun" / "ppo" / "env_sweep").iterdir()
    envs = sorted(json.loads(p.read_text())["env"] for p in sweep.glob("*/summary.json"))
    assert envs == ["Acrobot-v1", "Pendulum-v1"]
    assert (sweep / "multirun.yaml").is_file()


def test_an_interpolation_that_does_not_resolve_is_one_error_line(tmp_path):
    """A misspelt key in ``${...}`` names the key meant; an unset ``oc.env`` variable says
    how to give a default. One ``Error:`` line each, exit status 2, no traceback."""
    env = {k: v for k, v in os.environ.items() if k != "RL_TRAINERS_TEST_SEED"}
    for override, line in (
        (
            "optimizer.lr=${loss.gama}",
            "Error: optimizer.lr='${loss.gama}' is invalid: the interpolation's key loss.gama "
            "is not in the config: did you mean ${loss.gamma}?",
        ),
        (
            "seed=${oc.env:RL_TRAINERS_TEST_SEED}",
            "Error: seed='${oc.env:RL_TRAINERS_TEST_SEED}' is invalid: the environment variable "
            "RL_TRAINERS_TEST_SEED is not set: set it, or give a default, "
            "${oc.env:RL_TRAINERS_TEST_SEED,<default>}",
        ),
    ):
        proc = train(
            "ppo",
            override,
            *TINY["ppo"],
            f"hydra.run.dir={tmp_path / 'run'}",
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert proc.stderr.splitlines()[0] == line
        assert "Traceback" not in proc.stderr


def test_an_interpolation_reaches_the_run(tmp_path):
    """``seed=${oc.env:VAR,default}`` is what the run uses: the check leaves it as it is."""
    env = {**os.environ, "RL_TRAINERS_TEST_SEED": "5"}
    proc = train(
        "ppo",
        "seed=${oc.env:RL_TRAINERS_TEST_SEED,3}",
        *TINY["ppo"],
        "hydra.run.dir=run",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["seed"] == 5


def _group_line(text: str, group: str) -> list[str]:
    """The options ``--help`` lists for ``group``, in its ``== Config groups`` section."""
    lines = text.splitlines()
    start = lines.index("== Config groups (group=option) ==") + 1
    section = lines[start : lines.index("", start)]
    (line,) = [line for line in section if line.startswith(f"  {group}: ")]
    return line.split(": ", 1)[1].split(", ")


def test_help_lists_the_options_of_a_config_directory_of_ones_own(tmp_path):
    """``--config-dir`` and ``hydra.searchpath`` add group options (docs/configuration.md):
    ``--help`` lists them after the shipped ones, as the run accepts them."""
    (tmp_path / "mine" / "env").mkdir(parents=True)
    (tmp_path / "mine" / "experiment").mkdir()
    (tmp_path / "mine" / "env" / "corridor.yaml").write_text("env_name: Pendulum-v1\n")
    (tmp_path / "mine" / "experiment" / "my_pendulum.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /env: pendulum\n"
    )
    for where in (["--config-dir", "mine"], ["hydra.searchpath=[file://mine]"]):
        proc = train("ppo", *where, "--help", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert _group_line(proc.stdout, "env")[-1] == "corridor"
        assert _group_line(proc.stdout, "experiment")[-1] == "my_pendulum"
        assert "ppo_pendulum" in _group_line(proc.stdout, "experiment")
    shipped = train("ppo", "--help", cwd=tmp_path)
    assert "corridor" not in _group_line(shipped.stdout, "env")


def _experiment(tmp_path, name: str, defaults: str) -> None:
    """``mine/experiment/<name>.yaml``, a ``_global_`` preset with that defaults entry."""
    (tmp_path / "mine" / "experiment").mkdir(parents=True, exist_ok=True)
    (tmp_path / "mine" / "experiment" / f"{name}.yaml").write_text(
        f"# @package _global_\ndefaults:\n  - {defaults}\n"
    )


def test_a_group_chosen_twice_or_a_field_deleted_is_one_error_line_saying_what_to_write(
    tmp_path,
):
    """``+env=...`` (the recipe's defaults choose env), an experiment file of one's own whose
    defaults list picks a group without ``override`` or relative to its own group, and
    ``~field`` of a schema field: one ``Error:`` line, exit status 2."""
    _experiment(tmp_path, "relative", "env: pendulum")
    _experiment(tmp_path, "twice", "/env: pendulum")
    _experiment(tmp_path, "good", "override /env: pendulum")
    cases = [
        (
            ["+experiment=ppo_pendulum"],
            "Error: +experiment='ppo_pendulum' is invalid: the recipe's defaults choose "
            "experiment already: write experiment=ppo_pendulum (without '+')",
        ),
        (
            ["--config-dir", "mine", "experiment=twice"],
            "Error: env='pendulum' is invalid: chosen twice: the recipe's defaults choose env "
            "already; in your config's defaults list write '- override /env: pendulum'",
        ),
        (
            ["--config-dir", "mine", "experiment=relative"],
            "Error: experiment/env='pendulum' is invalid: in the defaults list of a file of "
            "experiment/, 'env: pendulum' names experiment/env: write "
            "'- override /env: pendulum' there",
        ),
        (
            ["~trainer.target_kl"],  # a field whose value is null: Hydra said it did not exist
            "Error: ~trainer.target_kl is not allowed: trainer.target_kl is a field of the "
            "schema, which cannot be deleted; set it instead (trainer.target_kl=<value>, or "
            "null where the field takes null)",
        ),
        (
            ["~optimizer.betas"],
            "Error: ~optimizer.betas is not allowed: optimizer.betas is a field of the schema, "
            "which cannot be deleted; set it instead (optimizer.betas=<value>, or null where "
            "the field takes null)",
        ),
    ]
    for args, line in cases:
        proc = train("ppo", *args, "--cfg", "job", cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr[-3000:])
        assert proc.stderr.splitlines()[0] == line
    good = train("ppo", "--config-dir", "mine", "experiment=good", "--cfg", "job", cwd=tmp_path)
    assert good.returncode == 0, good.stderr[-3000:]
    assert yaml.safe_load(good.stdout)["env"]["env_name"] == "Pendulum-v1"


def test_an_optuna_study_left_to_minimise_the_return_says_so_once(tmp_path):
    """``hydra/sweeper=optuna`` keeps the plugin's ``direction: minimize`` unless told:
    the study would look for the lowest return, so one ``Warning:`` line says how to
    maximise; with ``hydra.sweeper.direction=maximize`` there is none."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    study = [
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=1",
        "hydra.sweeper.n_jobs=1",
        "optimizer.lr=interval(1e-4,1e-3)",
        *TINY["ppo"],
    ]
    warning = (
        "Warning: hydra.sweeper.direction=minimize: each trial returns its final mean return "
        "(eval_return_mean), so the study looks for the lowest; add "
        "hydra.sweeper.direction=maximize to look for the best"
    )
    proc = train("ppo", *study, "hydra.sweep.dir=min", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.splitlines().count(warning) == 1
    proc = train(
        "ppo", *study, "hydra.sweeper.direction=maximize", "hydra.sweep.dir=max", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "hydra.sweeper.direction" not in proc.stderr


def test_a_glob_sweeps_the_options_one_can_choose(tmp_path):
    """``optimizer=glob(adam*)`` runs adam and adamw once each (not the typed nodes the YAML
    options extend, a second copy of each); ``experiment=glob(*_pendulum)`` under PPO runs
    PPO's preset, where it stopped with a traceback."""
    proc = train(
        "ppo", "-m", "optimizer=glob(adam*)", *TINY["ppo"], "hydra.sweep.dir=opt", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    targets = sorted(
        yaml.safe_load(p.read_text())["optimizer"]["_target_"]
        for p in (tmp_path / "opt").glob("*/.hydra/config.yaml")
    )
    assert targets == ["torch.optim.Adam", "torch.optim.AdamW"]
    proc = train(
        "ppo",
        "-m",
        "experiment=glob(*_pendulum)",
        *TINY["ppo"],
        "hydra.sweep.dir=exp",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (job,) = (tmp_path / "exp").glob("*/.hydra/overrides.yaml")
    assert "experiment=ppo_pendulum" in yaml.safe_load(job.read_text())
    summary = json.loads((job.parent.parent / "summary.json").read_text())
    assert summary["env"] == "Pendulum-v1"


def test_interval_given_to_the_basic_sweeper_is_one_error_line(tmp_path):
    """``interval()`` is Optuna's: with Hydra's basic sweeper it is one ``Error:`` line
    naming the sweeper to add or the values to list (it was a traceback), and no job runs."""
    proc = train(
        "ppo",
        "-m",
        "loss.gamma=interval(0.9,0.99)",
        *TINY["ppo"],
        "hydra.sweep.dir=s",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.splitlines()[0] == (
        "Error: loss.gamma='interval(0.9,0.99)' is invalid: interval() is a range for the "
        "Optuna sweeper: add hydra/sweeper=optuna hydra.sweeper.direction=maximize "
        "(docs/scaling.md), or list the values for Hydra's basic sweeper (loss.gamma=0.9,0.99)"
    )
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "s").exists()


def test_a_sweep_without_multirun_is_one_error_line_saying_to_add_it(tmp_path):
    """``seed=0,1`` and ``seed=range(3)`` without ``-m`` (with ``--help`` too, where Hydra
    printed a traceback): one ``Error:`` line with the command to run instead."""
    command = "python sota-implementations/ppo_trainer/train.py"
    for args, line in (
        (
            ["seed=0,1"],
            f"Error: seed=0,1 is a sweep, which runs with -m: {command} -m seed=0,1 (or, for "
            "one string value, quote it: seed='0,1')",
        ),
        (
            ["--help", "seed=range(3)"],
            f"Error: seed=range(3) is a sweep, which runs with -m: {command} -m seed=range(3)",
        ),
    ):
        proc = train("ppo", *args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert proc.stderr.splitlines()[0] == line
    quoted = train("ppo", "logger.exp_name='a,b'", "--cfg", "job", cwd=tmp_path)
    assert quoted.returncode == 0, quoted.stderr[-3000:]
    assert yaml.safe_load(quoted.stdout)["logger"]["exp_name"] == "a,b"


def test_hydras_options_between_overrides(tmp_path):
    """``env=pendulum --cfg job optimizer=adamw``: the overrides after the option apply too
    (argparse refused them: ``unrecognized arguments``); ``--info`` without a topic among
    overrides shows Hydra's information."""
    proc = train("ppo", "env=pendulum", "--cfg", "job", "optimizer=adamw", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["env"]["env_name"] == "Pendulum-v1"
    assert cfg["optimizer"]["_target_"] == "torch.optim.AdamW"
    proc = train("ppo", "env=pendulum", "--info", "optimizer=adamw", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Installed Hydra Plugins" in proc.stdout
