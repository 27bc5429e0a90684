"""Every recipe in configs/ runs for a few hundred frames, through compose and through train.py.

The options of a group (every env of an algorithm, every experiment preset) run once, in one
``train.py -m`` multirun per group (:func:`sweeps`); a test per option checks its run's summary.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rl_trainers.app import RECIPES_DIR
from rl_trainers.app.run import run

from .conftest import DISCRETE_ENV_OPTIONS, ENV_OPTIONS, PIXELS, TINY, train

PPO_ENVS = ENV_OPTIONS
SAC_ENVS = [e for e in ENV_OPTIONS if e not in DISCRETE_ENV_OPTIONS]
DQN_ENVS = DISCRETE_ENV_OPTIONS
A2C_ENVS = ENV_OPTIONS
PG_ENVS = ENV_OPTIONS
LOGGERS = ["csv", "tensorboard", "wandb", "mlflow"]
EXPERIMENTS = sorted(p.stem for p in (Path(RECIPES_DIR) / "experiment").glob("*.yaml"))
#: algorithm -> its experiment presets (one multirun each).
EXPERIMENTS_OF = {
    a: [e for e in EXPERIMENTS if e.split("_", 1)[0] == a]
    for a in sorted({e.split("_", 1)[0] for e in EXPERIMENTS})
}


def _check_summary(out, frames: int) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] >= frames
    for key in (
        "frames",
        "wall_time_s",
        "train_time_s",
        "fps",
        "eval_return_mean",
        "eval_return_std",
        "eval_episodes",
    ):
        assert key in summary
    assert summary["eval_episodes"] == len(summary["eval_returns"]) == 2
    mean = sum(summary["eval_returns"]) / 2
    assert abs(mean - summary["eval_return_mean"]) < 1e-2  # the episodes the mean is over
    assert 0 < summary["train_time_s"] <= summary["wall_time_s"]  # training within the run
    return summary


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """``sweeps(algorithm, group, options, extra)``: the finished ``train.py -m
    group=<options> <TINY> <extra>`` multirun, run on first use: ``(process, sweep_dir)``."""
    done = {}

    def sweep(algorithm: str, group: str, options: list[str], extra: list[str] = ()):
        key = (algorithm, group, tuple(options), tuple(extra))
        if key not in done:
            cwd = tmp_path_factory.mktemp(f"{algorithm}_{group}")
            proc = train(
                algorithm,
                "-m",
                f"{group}={','.join(options)}",
                *TINY[algorithm],
                *extra,
                f"hydra.sweep.dir={cwd}/sweep",
                cwd=cwd,
            )
            done[key] = proc, cwd / "sweep"
        return done[key]

    return sweep


def _job_dir(sweep: tuple[subprocess.CompletedProcess, Path], group: str, option: str) -> Path:
    """The run directory of the sweep's job with ``group=option``."""
    proc, sweep_dir = sweep
    jobs = [
        p.parent.parent
        for p in sweep_dir.glob("*/.hydra/overrides.yaml")
        if f"- {group}={option}\n" in p.read_text()
    ]
    assert len(jobs) == 1, proc.stderr[-3000:]
    return jobs[0]


@pytest.mark.parametrize("env", PPO_ENVS)
def test_ppo_env_recipe(sweeps, env):
    _check_summary(_job_dir(sweeps("ppo", "env", PPO_ENVS), "env", env), 256)


@pytest.mark.parametrize("env", SAC_ENVS)
def test_sac_env_recipe(sweeps, env):
    _check_summary(_job_dir(sweeps("sac", "env", SAC_ENVS), "env", env), 200)


@pytest.mark.parametrize("algorithm", ["td3", "ddpg"])
@pytest.mark.parametrize("noise", ["gaussian", "ou"])
def test_td3_and_ddpg_recipes(tiny_config, algorithm, noise, tmp_path):
    run(tiny_config(algorithm, [f"trainer.exploration_noise={noise}"]), output_dir=tmp_path)
    _check_summary(tmp_path, 200)


@pytest.mark.parametrize("env", DQN_ENVS)
def test_dqn_env_recipe(sweeps, env):
    _check_summary(_job_dir(sweeps("dqn", "env", DQN_ENVS), "env", env), 256)


@pytest.mark.parametrize("env", A2C_ENVS)
def test_a2c_env_recipe(sweeps, env):
    _check_summary(_job_dir(sweeps("a2c", "env", A2C_ENVS), "env", env), 256)


@pytest.mark.parametrize("env", PG_ENVS)
def test_pg_env_recipe(sweeps, env):
    _check_summary(_job_dir(sweeps("pg", "env", PG_ENVS), "env", env), 256)


@pytest.mark.parametrize("env", ["cartpole", "pendulum"])
def test_pg_without_a_baseline(tiny_config, env, tmp_path):
    run(tiny_config("pg", [f"env={env}", "loss.baseline=false"]), output_dir=tmp_path)
    _check_summary(tmp_path, 256)


def test_dqn_trainer_explores_updates_and_copies_its_target(tiny_config, tmp_path):
    """Every frame enters the buffer; updates start at learning_starts; epsilon falls by
    frames_per_batch / annealing frames per batch; the target is a copy of the online
    Q-network right after every target_update_interval-th update."""
    import torch

    from rl_trainers.algorithms import build_trainer
    from rl_trainers.algorithms.build import close_trainer

    trainer = build_trainer(tiny_config("dqn", ["trainer.exploration_fraction=0.5"]), tmp_path)
    loss = trainer.loss_module
    eps, copies = [], []

    def check_target() -> None:
        if trainer._optim_count % 4 == 0:
            srcs, tgts = loss.target_pairs()
            copies.append(all(torch.equal(s, t) for s, t in zip(srcs, tgts)))

    trainer.register_op("post_steps", lambda: eps.append(float(trainer.exploration.eps)))
    trainer.register_op("post_optim", check_target)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert len(trainer.replay_buffer) == trainer.collected_frames == 256
    assert trainer._optim_count == 6 * 8  # batches 3..8 (64 frames first), 8 updates each
    assert copies and all(copies)
    assert eps == pytest.approx([max(0.04, 1 - 0.96 * 32 * k / 128) for k in range(1, 9)])


def test_sac_on_disk_buffer(tiny_config, tmp_path):
    """The policy's outputs join the stored batches after the random warm-up frames."""
    scratch = tmp_path / "buffer"
    overrides = ["replay_buffer.storage=lazy_memmap", f"replay_buffer.scratch_dir={scratch}"]
    run(tiny_config("sac", overrides), output_dir=tmp_path / "run")
    _check_summary(tmp_path / "run", 200)
    assert (scratch / "data" / "loc.memmap").exists()


def test_sac_on_a_list_buffer(tiny_config, tmp_path):
    """Samples mix warm-up steps (random actions) and policy steps (more entries)."""
    overrides = ["replay_buffer.storage=list", "replay_buffer.sampler=prioritized"]
    run(tiny_config("sac", overrides), output_dir=tmp_path)
    _check_summary(tmp_path, 200)


def test_sac_trainer_stores_transitions(tiny_config, tmp_path):
    """The collector's ``[num_envs, T]`` batches enter SAC's buffer as transitions (a
    default storage alone would keep ``num_envs`` trajectories per batch)."""
    from rl_trainers.algorithms import build_trainer
    from rl_trainers.algorithms.build import close_trainer

    trainer = build_trainer(tiny_config("sac", ["env.num_envs=2"]), tmp_path)
    try:
        trainer.train()
        buffer = trainer.replay_buffer
        assert buffer.storage.ndim == 1
        assert len(buffer) == trainer.collected_frames == 200
        assert buffer.sample(4).batch_size == (4,)
    finally:
        close_trainer(trainer)


@pytest.mark.parametrize("algorithm", ["ppo", "sac", "dqn", "a2c", "td3", "ddpg"])
def test_pixel_recipe(tiny_config, algorithm, tmp_path):
    """``env.from_pixels=true network=convnet``: PPO, DQN and A2C on CartPole, SAC, TD3 and
    DDPG on Pendulum frames."""
    run(tiny_config(algorithm, PIXELS[algorithm]), output_dir=tmp_path)
    _check_summary(tmp_path, 200)


@pytest.mark.parametrize("logger", LOGGERS)
def test_logger_recipe(tiny_config, logger, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.chdir(tmp_path)  # MLflow's default store is created in the working directory
    run(tiny_config("ppo", [f"logger={logger}"]), output_dir=tmp_path)
    _check_summary(tmp_path, 256)
    assert any(tmp_path.iterdir())
    # no backend's own chatter ("Creating initial MLflow database tables...") on the console
    assert " INFO " not in capfd.readouterr().err


def test_mlflow_logs_to_mlflow_tracking_uri_unless_the_config_sets_one(
    tiny_config, tmp_path, monkeypatch
):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    store = f"sqlite:///{tmp_path / 'shared.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)  # where an MLflow user keeps every run
    run(tiny_config("ppo", ["logger=mlflow"]), output_dir=tmp_path / "run")
    client = MlflowClient(tracking_uri=store)
    (experiment,) = [e for e in client.search_experiments() if e.name == "ppo_CartPole-v1"]
    (logged,) = client.search_runs([experiment.experiment_id])
    assert logged.data.metrics and logged.data.params
    assert not (tmp_path / "run" / "mlruns").exists()
    # logger.tracking_uri, when given, wins: a directory is in the run directory
    run(tiny_config("ppo", ["logger=mlflow", "logger.tracking_uri=mlruns"]), tmp_path / "own")
    assert (tmp_path / "own" / "mlruns" / "mlflow.db").is_file()
    assert len(client.search_runs([experiment.experiment_id])) == 1


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_recipe(sweeps, experiment):
    algorithm = experiment.split("_", 1)[0]
    sweep = sweeps(algorithm, "experiment", EXPERIMENTS_OF[algorithm])
    _check_summary(_job_dir(sweep, "experiment", experiment), 200)


def _without(overrides: list[str], group: str) -> list[str]:
    return [o for o in overrides if not o.startswith(f"{group}=")]


@pytest.mark.parametrize(
    ("algorithm", "group", "options", "extra"),
    [
        ("ppo", "env", PPO_ENVS, []),
        ("sac", "env", SAC_ENVS, []),
        ("ppo", "logger", LOGGERS, []),
        ("dqn", "env", DQN_ENVS, []),
        ("td3", "env", SAC_ENVS, []),  # every continuous env, one override each
        ("ddpg", "env", SAC_ENVS, []),
        ("a2c", "env", A2C_ENVS, []),
        ("pg", "env", PG_ENVS, []),
        *[(a, "experiment", experiments, []) for a, experiments in EXPERIMENTS_OF.items()],
        ("ppo", "network", ["convnet"], _without(PIXELS["ppo"], "network")),
        ("sac", "network", ["convnet"], _without(PIXELS["sac"], "network")),
    ],
)
def test_recipes_through_train_py(sweeps, algorithm, group, options, extra):
    """One multirun process runs every option of a group through the real entry point."""
    proc, sweep_dir = sweeps(algorithm, group, options, extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = sorted(sweep_dir.glob("*/summary.json"))
    assert len(summaries) == len(options)


@pytest.mark.parametrize("env_name", ["FrozenLake-v1", "Taxi-v4", "Blackjack-v1"])
def test_ppo_on_discrete_observations(tiny_config, env_name, tmp_path):
    """Discrete observation spaces (one-hot observations) train like any other env, a Tuple
    of them (Blackjack) too: its parts are concatenated into one observation."""
    run(tiny_config("ppo", [f"env.env_name={env_name}"]), output_dir=tmp_path)
    _check_summary(tmp_path, 256)


def test_tuple_observations_are_concatenated_in_order(tiny_config):
    from hydra.utils import instantiate

    env = instantiate(tiny_config("ppo", ["env.env_name=Blackjack-v1"]).env)
    try:
        td = env.reset()
    finally:
        env.close()
    obs = td["observation"]
    assert obs.shape == (4, 32 + 11 + 2)
    # one one-hot block per part, in the Tuple's order (player sum, dealer card, usable ace)
    assert (obs[:, :32].sum(-1) == 1).all() and (obs[:, 32:43].sum(-1) == 1).all()
    assert (obs[:, 43:].sum(-1) == 1).all()
    assert "observation_0" not in td.keys()


def test_ppo_clip_range_anneals_in_the_losss_buffer(tiny_config, tmp_path):
    """trainer.anneal_clip_epsilon sets the loss's clip_epsilon buffer in place each batch."""
    import torch

    from rl_trainers.algorithms import build_trainer
    from rl_trainers.algorithms.build import close_trainer

    trainer = build_trainer(tiny_config("ppo", ["trainer.anneal_clip_epsilon=true"]), tmp_path)
    seen = []
    trainer.register_op("post_steps", lambda: seen.append(float(trainer.loss_module.clip_epsilon)))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert isinstance(trainer.loss_module.clip_epsilon, torch.Tensor)
    assert seen == pytest.approx([0.2 * (1 - f / 256) for f in (64, 128, 192, 256)])
