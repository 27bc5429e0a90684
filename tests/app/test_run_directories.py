"""Run directories and sweeps: a used directory is refused, trainers built in the same second
get their own, a sweep job's stop message continues the whole sweep."""

from __future__ import annotations

import sys

import pytest

from rl_trainers.app.run import run
from rl_trainers.errors import ConfigError


def test_stop_message_of_a_sweep_job_continues_the_whole_sweep(tmp_path, monkeypatch):
    """Following the 'Continue with:' line of a job stopped in a sweep resumes that job
    and runs the sweep's other jobs, in the same sweep directory."""
    import shlex

    from hydra.core.hydra_config import HydraConfig

    from rl_trainers.app.resume import resume_command

    from .conftest import RECIPES_DIR, compose, initialize_config_dir

    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
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


def test_a_used_run_directory_says_it_holds_a_previous_run(tiny_config, tmp_path):
    """A run directory holding a previous run is refused with a message saying so."""
    run(tiny_config("ppo"), output_dir=tmp_path)
    with pytest.raises(ConfigError) as err:
        run(tiny_config("ppo"), output_dir=tmp_path)
    assert f"hydra.run.dir='{tmp_path}' is invalid: it holds a previous run (checkpoints/" in (
        str(err.value)
    )
    assert "add trainer.resume=true to continue that run" in str(err.value)


def _hydra_files(run_dir) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / ".hydra").iterdir())}


@pytest.mark.parametrize("mode", ["run", "sweep"])
def test_a_refused_launch_leaves_the_previous_runs_config(mode, tmp_path):
    """Hydra writes a launch's config into .hydra/ before the app looks at the directory: a
    launch refused there (a new run over a previous one, a resume whose checkpoint was made
    by another setup) leaves the previous run's .hydra/ as it was, so its agent still loads
    and its evaluation is reproduced."""
    import json

    import rl_trainers

    from .conftest import TINY
    from .test_cli import train

    if mode == "run":
        where, run_dir, sweep = [f"hydra.run.dir={tmp_path}/run"], tmp_path / "run", []
    else:
        where, run_dir, sweep = [f"hydra.sweep.dir={tmp_path}/sweep"], tmp_path / "sweep/0", ["-m"]
    first = train("ppo", *sweep, *TINY["ppo"], "env=pendulum", *where, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    before = _hydra_files(run_dir)
    paths = {p for p in run_dir.rglob("*") if p.name != "train.log"}
    other_env = [*TINY["ppo"], "env=cartpole", *where]
    refusals = [[*other_env, "trainer.resume=true"], other_env]
    for refused in refusals:
        proc = train("ppo", *sweep, *refused, cwd=tmp_path)
        assert proc.returncode != 0 and "Error: " in proc.stderr, proc.stderr[-3000:]
        assert _hydra_files(run_dir) == before
        # nothing of the refused launch is left (its logger's directory would be plotted)
        assert {p for p in run_dir.rglob("*") if p.name != "train.log"} - paths == set()
        if "trainer.resume=true" not in refused:  # the setting to change is the one used
            key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
            assert f"or choose another {key}" in proc.stderr
        if "trainer.resume=true" in refused:  # the fix: the previous run's own overrides
            assert "the run there was launched with: " in proc.stderr
            assert "env=pendulum" in proc.stderr.split("launched with: ")[1].splitlines()[0]
    summary = json.loads((run_dir / "summary.json").read_text())
    policy = rl_trainers.load_policy(run_dir)
    assert rl_trainers.evaluate(policy).summary()["eval_return_mean"] == summary["eval_return_mean"]


def test_a_run_directory_in_use_by_a_training_run_is_refused(tmp_path):
    """A second launch on the directory of a run still training (a second terminal, a
    requeued job while the first one lives) stops with one Error line instead of training
    into the same checkpoints and logs; once the first is gone, even by SIGKILL, the
    directory is free."""
    import socket
    import subprocess
    import time

    from .conftest import REPO, TINY
    from .test_cli import train

    run_dir = tmp_path / "run"
    where = [f"hydra.run.dir={run_dir}", "trainer.resume=true"]
    script = REPO / "sota-implementations" / "ppo_trainer" / "train.py"
    first = subprocess.Popen(
        [sys.executable, str(script), "trainer.total_frames=10000000", *where],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        lock = run_dir / ".lock"
        deadline = time.monotonic() + 120
        while not (lock.is_file() and lock.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        second = train("ppo", *TINY["ppo"], *where, cwd=tmp_path)
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2
    line = second.stderr.strip().splitlines()[0]
    assert line == (
        f"Error: hydra.run.dir='{run_dir}' is invalid: a run is training in it (pid "
        f"{first.pid} on {socket.gethostname()}): wait for it to end, or stop "
        "it (SIGTERM or Ctrl-C saves a checkpoint) and resume with trainer.resume=true"
    )
    third = train("ppo", *TINY["ppo"], *where, cwd=tmp_path)
    assert third.returncode == 0, third.stderr[-3000:]
