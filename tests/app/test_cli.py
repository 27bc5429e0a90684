"""The command line as a user meets it: help, printed config, sweeps, and short errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import DISCRETE_ENV_OPTIONS, ENV_OPTIONS, REPO, TINY, train

CONTINUOUS = [e for e in ENV_OPTIONS if e not in DISCRETE_ENV_OPTIONS]


#: Runs a train.py in this interpreter, then prints which heavy modules it loaded.
_LOADED_BY = """
import contextlib, io, runpy, sys
script, sys.argv, code = sys.argv[1], sys.argv[1:], 0
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
print(code, *[m for m in ("torch", "tensordict", "gymnasium") if m in sys.modules])
"""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--help"], 0),
        (["--cfg", "job", "experiment=ppo_halfcheetah", "env=hopper"], 0),
        (["env=pendlum"], 2),  # a composition error
        (["experiment=sac_halfcheetah"], 2),  # another algorithm's preset
    ],
)
def test_the_app_answers_without_importing_torch(args, code, tmp_path):
    """--help, --cfg job and composition errors print without loading torch, tensordict or
    gymnasium (about a second, where torch alone takes two or more)."""
    script = REPO / "sota-implementations" / "ppo_trainer" / "train.py"
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_BY, str(script), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(code)]


@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_help_lists_groups_options_and_fields(algorithm, help_page):
    proc = help_page(algorithm)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for group, option in [
        ("env", "halfcheetah"),
        ("logger", "tensorboard"),
        ("optimizer", "rmsprop"),
        ("collector", "multi_async"),
    ]:
        assert group in text and option in text
    assert "network: mlp, convnet" in text
    assert "model/policy: auto, tanh_normal, normal" in text
    assert "network.encoder.kernel_sizes" in text and "model.policy.state_dependent_scale" in text
    assert "optimizer.lr" in text and "learning rate" in text
    assert "trainer.total_frames" in text and "environment frames to train for" in text
    assert "env.env_name" in text and "gymnasium id" in text


def _group_lines(text: str) -> list[str]:
    """The ``== Config groups`` section of a ``--help`` page."""
    lines = text.splitlines()
    start = lines.index("== Config groups (group=option) ==") + 1
    return lines[start : lines.index("", start)]


@pytest.mark.parametrize(
    ("algorithm", "listed", "note"),
    [
        ("ppo", ENV_OPTIONS, None),
        ("a2c", ENV_OPTIONS, None),
        ("pg", ENV_OPTIONS, None),
        ("sac", CONTINUOUS, "envs with discrete actions are not listed: SAC needs continuous"),
        ("td3", CONTINUOUS, "envs with discrete actions are not listed: TD3 needs continuous"),
        ("ddpg", CONTINUOUS, "envs with discrete actions are not listed: DDPG needs continuous"),
        ("dqn", DISCRETE_ENV_OPTIONS, "envs with continuous actions are not listed: DQN"),
    ],
)
def test_help_lists_only_the_envs_the_algorithm_can_run(algorithm, listed, note, help_page):
    proc = help_page(algorithm)
    assert proc.returncode == 0, proc.stderr
    groups = _group_lines(proc.stdout)
    env = [i for i, line in enumerate(groups) if line.startswith("  env: ")]
    assert len(env) == 1, groups
    assert groups[env[0]].removeprefix("  env: ").split(", ") == listed
    if note is None:
        assert "not listed" not in proc.stdout
    else:
        assert note in groups[env[0] + 1], groups


@pytest.mark.parametrize(
    ("algorithm", "policies"),
    [("ppo", "auto, tanh_normal, normal, categorical"), ("sac", "auto, tanh_normal, normal")],
)
def test_help_lists_only_the_policies_the_algorithm_can_run(algorithm, policies, help_page):
    """SAC refuses a categorical policy: its help does not offer one."""
    proc = help_page(algorithm)
    assert f"  model/policy: {policies}" in _group_lines(proc.stdout), proc.stdout


def test_dqn_help_lists_its_groups_and_fields(help_page):
    proc = help_page("dqn")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "dqn_trainer: train DQN" in text and "experiment: dqn_acrobot" in text
    assert "network: mlp, convnet" in text and "optimizer: adam" in text
    assert "model/policy" not in text  # DQN acts greedily on its Q-values: no policy group
    for field in (
        "model.qvalue",
        "loss.double_dqn",
        "loss.loss_function",
        "replay_buffer.batch_size",
        "trainer.utd_ratio",
        "trainer.learning_starts",
        "trainer.target_update_interval",
        "trainer.tau",
        "trainer.eps_init",
        "trainer.eps_end",
        "trainer.exploration_fraction",
    ):
        assert field in text, field
    assert "env_name: CartPole-v1" in text and "lr: 0.001" in text


@pytest.mark.parametrize(
    ("algorithm", "experiment", "fields"),
    [
        (
            "td3",
            "td3_halfcheetah",
            ["trainer.policy_delay", "loss.policy_noise", "loss.noise_clip"],
        ),
        ("ddpg", "ddpg_mountaincar", ["loss.delay_value"]),
    ],
)
def test_td3_and_ddpg_help_list_their_groups_and_fields(algorithm, experiment, fields, help_page):
    proc = help_page(algorithm)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert f"{algorithm}_trainer: train {algorithm.upper()}" in text
    assert f"experiment: {experiment}" in text
    assert "network: mlp, convnet" in text and "optimizer: adam" in text
    assert "model/policy" not in text  # a deterministic actor: no stochastic policy group
    for field in (
        *fields,
        "model.actor",
        "model.critic",
        "loss.loss_function",
        "loss.delay_actor",
        "replay_buffer.batch_size",
        "trainer.utd_ratio",
        "trainer.learning_starts",
        "trainer.tau",
        "trainer.exploration_noise",
        "trainer.noise_std",
        "trainer.noise_std_end",
        "trainer.ou_theta",
    ):
        assert field in text, field
    assert "env_name: Pendulum-v1" in text and "- 400" in text
    if algorithm == "ddpg":
        assert "policy_delay" not in text and "policy_noise" not in text


@pytest.mark.parametrize(
    ("algorithm", "fields", "values"),
    [
        (
            "a2c",
            ["loss.critic_coef", "loss.entropy_coef", "loss.lmbda", "loss.loss_critic_type"],
            ["lr: 0.0007", "eps: 1.0e-05", "frames_per_batch: 40"],
        ),
        (
            "pg",
            ["loss.baseline", "loss.normalize_advantage", "loss.lmbda", "loss.critic_coef"],
            ["lr: 0.001", "frames_per_batch: 1024", "baseline: true"],
        ),
    ],
)
def test_a2c_and_pg_help_list_their_groups_and_fields(algorithm, fields, values, help_page):
    proc = help_page(algorithm)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert f"{algorithm}_trainer: train {algorithm.upper()}" in text
    assert "model/policy: auto, tanh_normal, normal, categorical" in text
    assert "network: mlp, convnet" in text and "rmsprop_sb3" in text
    assert "env: acrobot" in text and "halfcheetah" in text
    assert "model.critic" in text and "trainer.clip_norm" in text
    assert "replay_buffer.batch_size" not in text  # on-policy: no replay buffer
    if algorithm == "a2c":
        assert "experiment: a2c_pendulum" in text
    else:  # no preset: no empty experiment line
        assert "REINFORCE" in text.splitlines()[0] and "  experiment:" not in text
    for field in fields:
        assert field in text, field
    for value in values:
        assert value in text, value
    assert "env_name: CartPole-v1" in text


def test_cfg_job_prints_the_composed_config(tmp_path):
    proc = train("ppo", "--cfg", "job", "env=pendulum", "optimizer.lr=3e-4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "env_name: Pendulum-v1" in proc.stdout
    assert "lr: 0.0003" in proc.stdout


def test_torchrl_override_names_set_our_fields(tmp_path):
    """The override names of torchrl's trainer docs work as they are written there."""
    proc = train(
        "sac",
        "--cfg",
        "job",
        "training_env.create_env_fn.base_env.env_name=MountainCarContinuous-v0",
        "training_env.num_workers=2",
        "networks.policy_network.num_cells=[32,16]",
        "networks.qvalue_network.num_cells=[24]",
        "replay_buffer.storage.max_size=5000",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(proc.stdout)
    assert cfg.env.env_name == "MountainCarContinuous-v0" and cfg.env.num_envs == 2
    assert list(cfg.network.policy.num_cells) == [32, 16]
    assert list(cfg.network.value.num_cells) == [24]
    assert cfg.replay_buffer.size == 5000


def test_default_run_writes_outputs_and_summary(tmp_path):
    proc = train("ppo", *TINY["ppo"], f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "run"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["frames"] == 256 and summary["eval_episodes"] == 2
    assert (run_dir / ".hydra" / "config.yaml").exists()
    assert list((run_dir / "logs").rglob("*.csv")), "the CSV logger wrote nothing"
    assert (run_dir / "checkpoints" / "trainer.pt").exists()


def test_multirun_sweep_lands_each_run_in_its_own_directory(tmp_path):
    proc = train(
        "ppo",
        "-m",
        "seed=0,1",
        "optimizer.lr=1e-3,3e-4",
        *TINY["ppo"],
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [
        json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/summary.json"))
    ]
    assert len(summaries) == 4
    assert sorted(s["seed"] for s in summaries) == [0, 0, 1, 1]
    assert len({s["output_dir"] for s in summaries}) == 4


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["env.env_name=CartPol-v1"], ["env", "CartPol-v1", "CartPole-v1"]),
        (["env=cartpol"], ["cartpol", "cartpole"]),
        (["optimizer.lrr=1e-3"], ["lrr"]),
        (["optimizer.lr=abc"], ["optimizer.lr", "abc"]),
        (["trainer.total_frames=0"], ["trainer.total_frames", "0", "positive"]),
        (["trainer.total_frames=-5"], ["trainer.total_frames", "-5", "positive"]),
        (
            ["collector.frames_per_batch=100"],
            ["collector.frames_per_batch", "100", "multiple of env.num_envs (8)"],
        ),
        (["logger=nosuchlogger"], ["nosuchlogger", "csv"]),
        (
            ["env=pendulum", "model/policy=categorical"],
            ["model.policy='categorical'", "continuous actions", "tanh_normal"],
        ),
        (["env.from_pixels=true"], ["env.from_pixels=True", "network=convnet"]),
        (["network=mlpp"], ["mlpp", "convnet"]),
        (
            ["model.policy.return_log_prob=false"],
            ["model.policy.return_log_prob=False", "log-probability"],
        ),
    ],
)
def test_bad_input_gives_a_short_message(args, expected, tmp_path):
    proc = train("ppo", *args, f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert proc.returncode != 0
    err = proc.stderr
    for word in expected:
        assert word in err, err
    assert "Traceback" not in err, err
    assert len(err.splitlines()) < 25, err


def test_full_traceback_with_hydra_full_error(tmp_path):
    import os

    env = dict(os.environ, HYDRA_FULL_ERROR="1")
    proc = train(
        "ppo", "trainer.total_frames=0", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, env=env
    )
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_sac_refuses_discrete_actions(tmp_path):
    proc = train("sac", "env=cartpole", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert proc.returncode != 0
    assert "continuous" in proc.stderr and "Traceback" not in proc.stderr


def test_stop_message_repeats_the_runs_own_overrides(tmp_path, monkeypatch):
    """The 'Continue with:' line of an interrupted run is a command that resumes the same
    config (not the recipe's defaults): the run's overrides, then resume and run dir."""
    import shlex

    from hydra.core.hydra_config import HydraConfig

    from rl_trainers.app.resume import resume_command

    from .conftest import RECIPES_DIR, compose, initialize_config_dir

    overrides = ["trainer.total_frames=2048", "network.policy.num_cells=[32,32]"]
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(
            "ppo_trainer", overrides=[*overrides, "trainer.resume=true"], return_hydra_config=True
        )
    monkeypatch.setattr(sys, "argv", ["sota-implementations/ppo_trainer/train.py"])
    HydraConfig.instance().set_config(cfg)
    try:
        words = shlex.split(resume_command(tmp_path))
    finally:
        HydraConfig.instance().cfg = None
    assert words == [
        "python",
        "sota-implementations/ppo_trainer/train.py",
        *overrides,
        "trainer.resume=true",
        f"hydra.run.dir={tmp_path}",
    ]


def test_resume_from_is_relative_to_the_launch_directory_with_chdir(tmp_path, monkeypatch):
    """With ``hydra.job.chdir=true`` the working directory is the run directory; a relative
    ``trainer.resume_from`` typed on the command line still means the launch directory."""
    from hydra.core.hydra_config import HydraConfig

    from rl_trainers.algorithms.build import resume_checkpoint

    from .conftest import RECIPES_DIR, compose, initialize_config_dir

    launch, run_dir = tmp_path / "launch", tmp_path / "run"
    (launch / "old" / "checkpoints").mkdir(parents=True)
    run_dir.mkdir()
    ckpt = launch / "old" / "checkpoints" / "trainer_64.pt"
    ckpt.write_bytes(b"")
    monkeypatch.chdir(launch)
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(
            "sac_trainer",
            overrides=["trainer.resume_from=old/checkpoints/trainer_64.pt"],
            return_hydra_config=True,
        )
    monkeypatch.chdir(run_dir)  # what hydra.job.chdir=true does
    HydraConfig.instance().set_config(cfg)
    try:
        found = resume_checkpoint(cfg, run_dir)
    finally:
        HydraConfig.instance().cfg = None
    assert found is not None and found.resolve() == ckpt.resolve()
