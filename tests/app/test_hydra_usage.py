"""Hydra used as its documentation describes, through train.py: sweeps over the env land in
one sweep directory, mistakes in interpolations are one ``Error:`` line, and ``--help`` lists
the options of a config directory of the user's own."""

from __future__ import annotations

import json

import yaml

from .conftest import TINY, train


def test_a_sweep_over_envs_keeps_every_job_in_one_sweep_directory(tmp_path):
    """``-m env=pendulum,acrobot``: both jobs in ``<sweep dir>/0`` and ``/1``, beside the
    sweep's ``multirun.yaml`` (the sweep directory names no env of the default recipe)."""
    proc = train("ppo", "-m", "env=pendulum,acrobot", *TINY["ppo"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
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
