"""Sweeps through Hydra's own engines, run through train.py as a user runs them: the joblib
and submitit-local launchers, the Slurm example config, and the Optuna sweeper with the
``hparams_search`` recipes (docs/scaling.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from rl_trainers.app import RECIPES_DIR

from .conftest import TINY
from .test_cli import train

pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")

#: Every Optuna recipe, run by :func:`test_hparams_search_recipe` (its prefix names the algorithm).
HPARAMS_SEARCHES = sorted(p.stem for p in (Path(RECIPES_DIR) / "hparams_search").glob("*.yaml"))


def _summaries(sweep: Path) -> dict[str, dict]:
    """Job directory name -> its summary.json."""
    return {p.parent.name: json.loads(p.read_text()) for p in sweep.glob("*/summary.json")}


def _tiny(algorithm: str, without: str) -> list[str]:
    """:data:`TINY` less its setting of ``without`` (set by the test instead)."""
    return [o for o in TINY[algorithm] if not o.startswith(f"{without}=")]


def _plain_env() -> dict[str, str]:
    """The environment without OMP_NUM_THREADS, so the launcher decides the threads."""
    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


# ----------------------------------------------------------------------------- joblib


def test_joblib_runs_each_seed_in_its_own_directory_on_one_thread(tmp_path):
    """Two parallel jobs, one thread each. The sweep lands where the recipe's
    hydra.sweep.dir puts it (docs/scaling.md)."""
    proc = train(
        "sac",
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "seed=0,1",
        *TINY["sac"],
        cwd=tmp_path,
        env=_plain_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in proc.stdout + proc.stderr
    sweeps = list((tmp_path / "multirun" / "sac" / "Pendulum-v1").iterdir())
    assert len(sweeps) == 1, sweeps
    sweep = sweeps[0]
    assert (sweep / "multirun.yaml").exists()
    summaries = _summaries(sweep)
    assert sorted(summaries) == ["0", "1"]
    assert [summaries[j]["seed"] for j in ("0", "1")] == [0, 1]
    for job, summary in summaries.items():
        assert summary["output_dir"] == str(sweep / job)
        assert summary["frames"] == 200
        assert summary["num_threads"] == 1  # the default: jobs beside each other do not stall
        assert (sweep / job / ".hydra" / "config.yaml").exists()
        assert (sweep / job / "train.log").exists()
        assert list((sweep / job / "logs").rglob("*.csv"))
    # different seeds, different runs
    assert summaries["0"]["eval_return_mean"] != summaries["1"]["eval_return_mean"]


def test_joblib_job_error_is_one_line_and_the_other_jobs_finish(tmp_path):
    proc = train(
        "ppo",
        "-m",
        "hydra/launcher=joblib",
        *_tiny("ppo", "trainer.total_frames"),
        "trainer.total_frames=256,-5",
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    err = proc.stderr
    assert "Traceback" not in err, err
    assert "Error: trainer.total_frames=-5 is invalid: a positive number" in err
    failed = [line for line in err.splitlines() if "Error executing job with overrides" in line]
    assert len(failed) == 1 and "'trainer.total_frames=-5'" in failed[0], err
    assert sorted(_summaries(tmp_path / "sweep")) == ["0"]  # the good job was not killed


def test_basic_sweep_runs_the_jobs_after_a_failed_one(tmp_path):
    """The default launcher, one job after another: the first job's Error: line does not
    keep the second from running; the sweep still ends with status 2."""
    proc = train(
        "ppo",
        "-m",
        *_tiny("ppo", "trainer.total_frames"),
        "trainer.total_frames=-5,256",
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == ["Error: trainer.total_frames=-5 is invalid: a positive number"] * 2
    assert sorted(_summaries(tmp_path / "sweep")) == ["1"]


# ----------------------------------------------------------------------------- submitit


def test_submitit_local_runs_the_sweep_in_separate_processes(tmp_path):
    """Every job of submitit's local executor starts at once: one thread each."""
    proc = train(
        "sac",
        "-m",
        "hydra/launcher=submitit_local",
        "seed=0,1",
        *TINY["sac"],
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
        env=_plain_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "sweep"
    summaries = _summaries(sweep)
    assert sorted(summaries) == ["0", "1"]
    assert {s["seed"] for s in summaries.values()} == {0, 1}
    assert all(s["num_threads"] == 1 for s in summaries.values())
    # each job's printed output is in its submitit log
    logs = list((sweep / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 2
    assert all('"eval_return_mean"' in log.read_text() for log in logs)


def test_submitit_local_job_error_is_reported_by_the_launching_process(tmp_path):
    """The job's stderr goes to its log file: the sweep repeats its Error: line."""
    proc = train(
        "ppo",
        "-m",
        "hydra/launcher=submitit_local",
        *_tiny("ppo", "trainer.total_frames"),
        "trainer.total_frames=-5",
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Error: trainer.total_frames=-5 is invalid" in proc.stderr
    (log,) = (tmp_path / "sweep" / ".submitit").glob("*/*_log.err")
    assert "Error: trainer.total_frames=-5 is invalid" in log.read_text()


def test_slurm_example_config_makes_a_valid_sbatch_script(tmp_path, monkeypatch):
    """configs/hydra/launcher/slurm.yaml composes, and submitit accepts its parameters and
    writes the sbatch script from them (the launcher's own mapping). Submitting it needs a
    Slurm cluster, which this machine has not."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from omegaconf import OmegaConf

    proc = train(
        "sac",
        "hydra/launcher=slurm",
        "hydra.launcher.partition=gpu",
        "--cfg",
        "hydra",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    cfg = OmegaConf.create(proc.stdout)
    cfg.hydra.launcher.name = "sac"  # ${hydra.job.name}: set when a job runs
    cfg.hydra.launcher.submitit_folder = str(tmp_path / "submitit")
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert params["_target_"].endswith("SlurmLauncher")
    # submitit looks for srun before it makes a Slurm executor
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    executor = submitit.AutoExecutor(
        cluster="slurm",
        folder=params.pop("submitit_folder"),
        slurm_max_num_timeout=params.pop("max_num_timeout"),
    )
    params.pop("_target_")
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
    script = executor._executor._make_submission_file_text("python -m submitit.core._submit", "u")
    for line in (
        "#SBATCH --partition=gpu",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --time=720",
        "#SBATCH --mem=8GB",
        "export OMP_NUM_THREADS=2",
    ):
        assert line in script, script


# ----------------------------------------------------------------------------- Optuna


def _search_space(preset: str) -> dict[str, str]:
    recipe = yaml.safe_load((Path(RECIPES_DIR) / "hparams_search" / f"{preset}.yaml").read_text())
    return recipe["hydra"]["sweeper"]["params"]


@pytest.mark.parametrize("preset", HPARAMS_SEARCHES)
def test_hparams_search_recipe(preset, tmp_path):
    """A tiny study (3 trials, 2 at a time on the joblib launcher): Optuna's results file
    holds the best trial's parameters and its evaluation mean, the best of the trials."""
    algorithm = preset.split("_", 1)[0]
    sweep = tmp_path / "sweep"
    proc = train(
        algorithm,
        "-m",
        f"+hparams_search={preset}",
        "hydra/launcher=joblib",
        "hydra.sweeper.n_trials=3",
        *TINY[algorithm],
        "trainer.num_threads=1",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = _summaries(sweep)
    assert sorted(summaries) == ["0", "1", "2"]
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    fixed = {o.partition("=")[0] for o in TINY[algorithm]}
    searched = set(_search_space(preset)) - fixed
    assert set(results["best_params"]) == searched
    best = max(summaries.values(), key=lambda s: s["eval_return_mean"])
    assert results["best_value"] == best["eval_return_mean"]
    # the best parameters are those the best trial ran with
    job = Path(best["output_dir"])
    overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
    ran = dict(o.split("=", 1) for o in overrides)
    for name, value in results["best_params"].items():
        assert yaml.safe_load(ran[name]) == pytest.approx(value), name


def test_failed_trial_is_skipped_and_the_study_goes_on(tmp_path):
    """One of a batch's two trials samples a value the config refuses: it is recorded as
    failed (its Error: line on stderr) and the study ends with the other's result."""
    sweep = tmp_path / "sweep"
    proc = train(
        "ppo",
        "-m",
        "+hparams_search=ppo_cartpole",
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.sampler.seed=0",  # with this seed, trial 0 samples -5, trial 1 256
        *_tiny("ppo", "trainer.total_frames"),
        "trainer.total_frames=choice(256,-5)",
        "trainer.num_threads=1",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Error: trainer.total_frames=-5 is invalid" in proc.stderr
    assert "Failed experiment: Error: trainer.total_frames=-5" in proc.stdout + proc.stderr
    summaries = _summaries(sweep)
    assert len(summaries) == 1
    (summary,) = summaries.values()
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert results["best_value"] == summary["eval_return_mean"]
    assert results["best_params"]["trainer.total_frames"] == 256


def test_study_stops_when_every_trial_of_a_batch_fails(tmp_path):
    sweep = tmp_path / "sweep"
    proc = train(
        "ppo",
        "-m",
        "+hparams_search=ppo_cartpole",
        "hydra.sweeper.n_trials=4",
        *_tiny("ppo", "trainer.total_frames"),
        "trainer.total_frames=-5",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Error: trainer.total_frames=-5 is invalid" in proc.stderr
    assert not (sweep / "optimization_results.yaml").exists()
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]  # one batch


def test_study_in_a_database_resumes_or_is_refused_in_one_line(tmp_path):
    """``hydra.sweeper.storage=sqlite:///<file>`` keeps the study: a second command with the
    same study name adds its trials to it. Optuna 2 (the sweeper's pin) cannot use a
    database with SQLAlchemy 2: then the app says so before the sweep starts."""
    from importlib.metadata import version

    def study(*args: str):
        return train(
            "ppo",
            "-m",
            "+hparams_search=ppo_cartpole",
            "hydra.sweeper.n_trials=1",
            "hydra.sweeper.storage=sqlite:///study.db",
            *TINY["ppo"],
            "trainer.num_threads=1",
            *args,
            cwd=tmp_path,
        )

    if int(version("sqlalchemy").split(".")[0]) >= 2:
        proc = study()
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Error: hydra.sweeper.storage='sqlite:///study.db' is invalid" in proc.stderr
        assert "sqlalchemy<2" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "study.db").exists()
        return
    import optuna

    for sweep in ("first", "second"):
        proc = study(f"hydra.sweep.dir={tmp_path}/{sweep}")
        assert proc.returncode == 0, proc.stderr[-3000:]
    kept = optuna.load_study(study_name="ppo_cartpole", storage=f"sqlite:///{tmp_path}/study.db")
    assert len(kept.trials) == 2
    results = yaml.safe_load((tmp_path / "second" / "optimization_results.yaml").read_text())
    assert results["best_value"] == kept.best_value


@pytest.mark.parametrize(
    ("algorithm", "args", "expected"),
    [
        (
            "sac",
            ["+hparams_search=ppo_cartpole"],
            ["a preset of PPO", "+hparams_search=ppo_cartpole"],
        ),
        ("ppo", ["hparams_search=ppo_cartpole"], ["use +hparams_search=ppo_cartpole"]),
        ("ppo", ["+hparams_search=ppo_cartpol"], ["did you mean hparams_search=ppo_cartpole?"]),
        (  # composed in joblib's worker processes, not in train.py's
            "ppo",
            [
                "+hparams_search=ppo_cartpole",
                "hydra/launcher=joblib",
                "hydra.sweeper.n_trials=2",
                "optimizer.lrr=interval(0.1,0.2)",
            ],
            ["optimizer.lrr is not a field: did you mean optimizer.lr?"],
        ),
    ],
)
def test_hparams_search_mistakes_are_one_line(algorithm, args, expected, tmp_path):
    proc = train(algorithm, "-m", *args, f"hydra.sweep.dir={tmp_path}/sweep", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, proc.stderr
    for word in expected:
        assert word in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_lists_the_algorithms_own_hparams_searches(help_page):
    ppo = help_page("ppo").stdout
    sac = help_page("sac").stdout
    assert "+hparams_search: ppo_cartpole\n" in ppo
    assert "+hparams_search: sac_pendulum\n" in sac
    assert "hydra/launcher=joblib" in ppo


@pytest.mark.parametrize(
    ("args", "plugin"),
    [
        (["hydra/launcher=joblib", "seed=0,1"], "hydra-joblib-launcher"),
        (["hydra/launcher=slurm", "seed=0"], "hydra-submitit-launcher"),
        (["+hparams_search=ppo_cartpole"], "hydra-optuna-sweeper"),
    ],
)
def test_a_missing_plugin_says_what_to_install(args, plugin, tmp_path):
    """Without the sweep extra (its plugins hidden behind a plain ``hydra_plugins``
    package), choosing a launcher or the Optuna recipe names the plugin to install."""
    hide = tmp_path / "hide" / "hydra_plugins"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("")
    path = os.pathsep.join(p for p in (str(hide.parent), os.environ.get("PYTHONPATH")) if p)
    proc = train("ppo", "-m", *args, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=path))
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, proc.stderr
    assert f"the {plugin} plugin, which is not installed" in lines[0]
    assert "pip install -e '.[sweep]'" in lines[0]
