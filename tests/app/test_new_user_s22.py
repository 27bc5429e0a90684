"""Session 22's new-user audit: the mistakes and environments a first hour of the app met.

Each mistake below crashed with a traceback or a message naming the wrong thing (a
component's internals, torch's or gymnasium's wording) before; now it is one ``Error:`` line
naming the field. Dict-observation environments, refused with an internal message, train.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from rl_trainers.envs.libs.gym import resolve_env_id
from rl_trainers.trainers.algorithms.app import run
from rl_trainers.trainers.algorithms.compose_errors import suggest_field
from rl_trainers.trainers.algorithms.errors import ConfigError, ConfigWarning
from rl_trainers.trainers.algorithms.validation import validate_config
from rl_trainers.trainers.helpers.components import make_sac_loss

from .test_cli import train
from .test_config_errors import assert_user_error, run_bad


@pytest.mark.parametrize(
    "algorithm, overrides, expected",
    [
        # a ZeroDivisionError traceback before
        ("ppo", ["collector=multi_sync", "collector.num_workers=0"], "collector.num_workers=0"),
        # "num_workers=-1 does not match the 0 env factories" before
        ("ppo", ["collector=multi_sync", "collector.num_workers=-1"], "collector.num_workers=-1"),
        # "could not build 'env': frame_skip must be >= 1" before
        ("ppo", ["env.frame_skip=0"], "env.frame_skip=0"),
        # gymnasium's "Expect the `max_episode_steps` to be positive" before; -1 trained
        ("ppo", ["env.max_episode_steps=0"], "env.max_episode_steps=0"),
        ("ppo", ["env.max_episode_steps=-1"], "env.max_episode_steps=-1"),
        # trained on zero rewards before
        ("ppo", ["env.reward_scale=0"], "env.reward_scale=0.0"),
        # torch's "Invalid learning rate: -1.0" under 'optimizer' before; lr=0 trained nothing
        ("ppo", ["optimizer.lr=-1"], "optimizer.lr=-1.0"),
        ("ppo", ["optimizer.lr=0"], "optimizer.lr=0.0"),
        ("ppo", ["optimizer.eps=-1"], "optimizer.eps=-1.0"),
        ("ppo", ["optimizer=sgd", "optimizer.momentum=-1"], "optimizer.momentum=-1.0"),
        # a ValueError traceback from the Trainer before
        ("ppo", ["trainer.clip_norm=0"], "trainer.clip_norm=0.0"),
        ("sac", ["trainer.clip_norm=-1"], "trainer.clip_norm=-1.0"),
        # a ValueError traceback from SoftUpdate before (DQN, TD3 and DDPG checked it)
        ("sac", ["trainer.tau=0"], "trainer.tau=0.0"),
        ("sac", ["trainer.tau=-1"], "trainer.tau=-1.0"),
        ("dqn", ["trainer.tau=1.5"], "trainer.tau=1.5"),
        # trained as if 0 before
        ("sac", ["collector.init_random_frames=-5"], "collector.init_random_frames=-5"),
        ("dqn", ["collector.init_random_frames=-5"], "collector.init_random_frames=-5"),
        # "could not build 'model.policy': unknown activation 'relu6'" before
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
    """``math domain error`` under 'loss' before."""
    with pytest.raises(ConfigError, match=rf"loss.alpha_init={alpha_init} is invalid"):
        make_sac_loss(None, None, alpha_init=alpha_init)


def test_learning_starts_past_the_run_suggests_a_value(tiny_config):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("sac", ["trainer.learning_starts=1000"]))
    assert "e.g. trainer.learning_starts=50" in str(err.value)


def test_a_module_outside_the_path_says_to_put_it_on_pythonpath():
    with pytest.raises(ValueError) as err:
        resolve_env_id("my_local_envs_s22:MyEnv")
    message = str(err.value)
    assert "No module named 'my_local_envs_s22'" in message
    assert "PYTHONPATH" in message


DICT_ENVS = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces


    class DictObs(gym.Env):
        '''The reward is 1 when the action equals the sign of pos[0]: learnable only from
        the observation's entries.'''

        def __init__(self, render_mode=None):
            self.observation_space = spaces.Dict(
                {"pos": spaces.Box(-1, 1, (2,), np.float32), "flag": spaces.Discrete(3)}
            )
            self.action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            self.obs = self.observation_space.sample()
            return self.obs, {}

        def step(self, action):
            self.t += 1
            reward = float(int(action) == int(self.obs["pos"][0] > 0))
            self.obs = self.observation_space.sample()
            return self.obs, reward, False, self.t >= 10, {}


    class ImageInDict(DictObs):
        def __init__(self, render_mode=None):
            super().__init__()
            self.observation_space = spaces.Dict(
                {"pos": spaces.Box(-1, 1, (2,), np.float32),
                 "camera": spaces.Box(0, 255, (8, 8, 3), np.uint8)}
            )
    """
)


@pytest.fixture
def dict_envs(tmp_path, monkeypatch):
    (tmp_path / "dict_envs_s22.py").write_text(DICT_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "dict_envs_s22"


def test_a_dict_observation_env_trains(tiny_config, dict_envs, tmp_path):
    """Its vector entries are joined into one 'observation' (as a Tuple's are); before:
    "could not build 'model.policy': observation key 'observation' not in the spec"."""
    cfg = tiny_config("ppo", [f"env.env_name={dict_envs}:DictObs"])
    run(cfg, output_dir=tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["frames"] == 256
    assert 0 <= summary["eval_return_mean"] <= 10


def test_a_dict_observation_with_an_image_names_the_entries(tiny_config, dict_envs, tmp_path):
    cfg = tiny_config("ppo", [f"env.env_name={dict_envs}:ImageInDict"])
    with pytest.raises(ConfigError) as err:
        run(cfg, output_dir=tmp_path / "run")
    message = str(err.value)
    assert message.startswith(f"env.env_name='{dict_envs}:ImageInDict' is invalid")
    assert "['camera'] are not vectors" in message
    assert "FlattenObservation" in message


@pytest.mark.parametrize("field", ["loss.critic_coef", "loss.entropy_coef"])
def test_ppo_negative_loss_weights_are_refused_as_a2c_refuses_them(tiny_config, field, tmp_path):
    """PPO trained with a negative critic or entropy weight before (A2C refused them)."""
    cfg = tiny_config("ppo", [f"{field}=-1"])
    with pytest.raises(ConfigError, match=rf"^{field}=-1.0 is invalid: a non-negative weight"):
        run(cfg, output_dir=tmp_path / "run")


def test_an_unknown_added_key_does_not_suggest_its_own_node(tmp_path):
    """``+trainer.foo=1`` read "did you mean trainer?" before."""
    proc = run_bad("ppo", tmp_path, "+trainer.foo=1")
    assert_user_error(proc, "trainer.foo=1 is invalid: not a field")
    assert "did you mean" not in proc.stderr


def test_a_used_run_directory_says_it_holds_a_previous_run(tiny_config, tmp_path):
    """Read "is invalid: a directory without a previous run (it holds ...)" before."""
    run(tiny_config("ppo"), output_dir=tmp_path)
    with pytest.raises(ConfigError) as err:
        run(tiny_config("ppo"), output_dir=tmp_path)
    assert f"hydra.run.dir='{tmp_path}' is invalid: it holds a previous run (checkpoints/" in (
        str(err.value)
    )
    assert "add trainer.resume=true to continue that run" in str(err.value)


def test_an_unknown_make_kwarg_names_env_make_kwargs(tmp_path):
    proc = run_bad("ppo", tmp_path, "env.make_kwargs={foo: 1}")
    assert_user_error(
        proc, "env.make_kwargs={'foo': 1} is invalid", "unexpected keyword argument 'foo'"
    )


def test_an_id_of_an_unimported_namespace_names_the_package_and_the_module_form():
    """'Unknown environment id' alone before: ALE's ids exist once ale_py is imported."""
    with pytest.raises(ValueError) as err:
        resolve_env_id("ALE/Pong-v5")
    assert "install ale-py" in str(err.value)
    assert "'ale_py:ALE/Pong-v5'" in str(err.value)


def test_mujoco_model_warnings_are_shown_once_per_process(tmp_path):
    """MuJoCo 4 warns about gymnasium's half_cheetah.xml at each model load: 18 lines on
    stderr in an app run before (one per sub-env and evaluation env)."""
    pytest.importorskip("mujoco")
    script = (
        "from rl_trainers.envs import GymEnv\n"
        "env = GymEnv('HalfCheetah-v5', num_envs=3)\n"
        "GymEnv('HalfCheetah-v5').reset()\n"
        "print(env.reset()['observation'].shape)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "torch.Size([3, 17])"
    if "settotalmass" in proc.stderr:  # the installed MuJoCo warns about this model file
        assert proc.stderr.count("settotalmass") == 1, proc.stderr


def test_a_logger_that_is_not_a_logger_is_refused_when_the_trainer_is_built():
    """``Trainer(logger="csv")`` failed at the first log with "'str' object has no attribute
    'log_scalar'" before."""
    import torch

    from rl_trainers.trainers import Trainer

    loss = torch.nn.Linear(2, 1)
    with pytest.raises(TypeError, match=r"logger must be a Logger .* got 'csv'.*get_logger"):
        Trainer(
            collector=[],
            total_frames=10,
            loss_module=loss,
            optimizer=torch.optim.SGD(loss.parameters(), lr=0.1),
            logger="csv",
        )


def test_a_config_warning_is_one_warning_line(tmp_path):
    """Printed with Python's file:line prefix and the source line
    (``validate_config(cfg)``) below it before."""
    proc = run_bad("ppo", tmp_path, "trainer.log_interval=100000")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "trainer.log_interval" in line]
    assert lines == [
        "Warning: trainer.log_interval=100000 is more than the 256 frames this run collects "
        "(trainer.total_frames=256): no training scalar will be logged; set "
        "trainer.log_interval=256 or less"
    ], proc.stderr
    assert "UserWarning" not in proc.stderr and "validate_config(cfg)" not in proc.stderr


def test_another_algorithms_preset_names_it_in_good_english(tmp_path):
    """Read "a A2C preset" before."""
    proc = run_bad("pg", tmp_path, "experiment=a2c_pendulum")
    assert_user_error(
        proc,
        "experiment='a2c_pendulum' is invalid: a preset of A2C: run it with",
        "a2c_trainer/train.py experiment=a2c_pendulum",
    )


def test_a_dict_observation_joined_by_the_users_own_transform_trains(
    tiny_config, dict_envs, tmp_path
):
    """The way a Dict env trained before: env.transforms joins its entries; the app's own
    joining steps aside."""
    cfg = tiny_config(
        "ppo",
        [
            f"env.env_name={dict_envs}:DictObs",
            "env.transforms=[{_target_: rl_trainers.envs.CatTensors, "
            "in_keys: [flag, pos], out_key: observation}]",
        ],
    )
    run(cfg, output_dir=tmp_path / "run")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["frames"] == 256


def test_wandb_online_without_an_api_key_stops_before_training(tmp_path):
    """A 37-line traceback before, after the training had started (W&B opens its run at the
    first log; closing the logger then tried again and masked the first failure)."""
    pytest.importorskip("wandb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env["HOME"] = str(tmp_path)  # no ~/.netrc holding a key
    env["WANDB_CONFIG_DIR"] = str(tmp_path / "wandb_config")
    proc = run_bad("ppo", tmp_path, "logger=wandb", "logger.offline=false", env=env)
    assert_user_error(proc, "logger.offline=False is invalid", "wandb login", "WANDB_API_KEY")
    assert not list((tmp_path / "run").glob("checkpoints/*.pt"))  # nothing trained


def test_an_mlflow_server_that_is_down_stops_before_training(tmp_path):
    """MLflow's client retried for minutes (urllib3 warnings), then failed mid-run."""
    pytest.importorskip("mlflow")
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run_bad("ppo", tmp_path, "logger=mlflow", f"logger.tracking_uri=http://127.0.0.1:{port}")
    assert_user_error(
        proc,
        f"logger.tracking_uri='http://127.0.0.1:{port}' is invalid: no server answers",
        "logger.tracking_uri=mlruns",
    )
    assert "Retrying" not in proc.stderr


def test_torchsnapshot_checkpoints_do_not_print_the_scheduler_table(tmp_path):
    """About 15 INFO lines of torchsnapshot's scheduler at every save before."""
    pytest.importorskip("torchsnapshot")
    env = {**os.environ, "CKPT_BACKEND": "torchsnapshot"}
    proc = run_bad("ppo", tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "run" / "checkpoints").glob("trainer_*"))
    assert "torchsnapshot.scheduler" not in proc.stdout + proc.stderr


def test_a_tuple_observation_is_still_joined_before_a_transform_reading_it(tiny_config, tmp_path):
    """A user transform that reads and rewrites 'observation' does not replace the join."""
    cfg = tiny_config(
        "ppo",
        [
            "env.env_name=Blackjack-v1",
            "env.transforms=[{_target_: rl_trainers.envs.RewardScaling, loc: 0, scale: 1, "
            "in_keys: [observation], out_keys: [observation]}]",
        ],
    )
    run(cfg, output_dir=tmp_path / "run")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["frames"] == 256


def test_total_frames_rounded_up_to_whole_batches_is_one_warning_line(tmp_path):
    """300 frames in 64-frame batches trained 320, silently, before."""
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


UNSUPPORTED_ACTION_ENVS = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces


    class Acting(gym.Env):
        action_space = spaces.MultiDiscrete([3, 2])

        def __init__(self, render_mode=None):
            self.observation_space = spaces.Box(-1, 1, (3,), np.float32)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, True, {}


    class MultiBinaryActions(Acting):
        action_space = spaces.MultiBinary(4)


    class TupleActions(Acting):
        action_space = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)])
    """
)


@pytest.mark.parametrize(
    "algorithm, env_class, space, supported",
    [
        ("ppo", "Acting", "MultiDiscrete([3 2])", "Discrete (a categorical policy) and Box"),
        ("sac", "Acting", "MultiDiscrete([3 2])", "Box (a tanh_normal policy)"),
        ("dqn", "MultiBinaryActions", "MultiBinary(4)", "Discrete (one Q-value per action)"),
        ("td3", "TupleActions", "Tuple(Discrete(2), Discrete(3))", "Box"),
    ],
)
def test_an_unsupported_action_space_names_the_env_its_space_and_what_is_supported(
    tiny_config, tmp_path, monkeypatch, algorithm, env_class, space, supported
):
    """ "could not build 'model.policy': action spec MultiCategorical is not supported by
    the actors" (PPO) or a ValueError traceback (SAC, DQN, TD3) before."""
    (tmp_path / "action_envs_s22.py").write_text(UNSUPPORTED_ACTION_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env_name = f"action_envs_s22:{env_class}"
    with pytest.raises(ConfigError) as err:
        run(tiny_config(algorithm, [f"env.env_name={env_name}"]), output_dir=tmp_path / "run")
    assert str(err.value).startswith(
        f"env.env_name='{env_name}' is invalid: its action space {space} is not supported: "
        f"{algorithm.upper()} acts in {supported}"
    )


@pytest.mark.parametrize(
    "algorithm, key, meant",
    [
        ("ppo", "optimizer.learning_rate", "optimizer.lr"),  # no suggestion before
        ("sac", "learning_rate", "optimizer.lr"),
        ("ppo", "optimizer.learningRate", "optimizer.lr"),
        ("ppo", "batch_size", "trainer.minibatch_size"),
        ("sac", "batch_size", "replay_buffer.batch_size"),  # a field of that name comes first
        ("ppo", "loss.gae_lambda", "loss.lmbda"),
        ("ppo", "ent_coef", "loss.entropy_coef"),
        ("sac", "buffer_size", "replay_buffer.size"),
        ("ppo", "trainer.lr", "optimizer.lr"),
        ("ppo", "trainer.gamma", "loss.gamma"),
        ("ppo", "env.name", "env.env_name"),
    ],
)
def test_another_librarys_name_of_a_field_suggests_the_field(algorithm, key, meant):
    assert suggest_field(algorithm, key) == meant


def test_an_alias_of_a_field_the_algorithm_lacks_suggests_nothing():
    assert suggest_field("a2c", "batch_size") is None  # A2C has no minibatches


def test_a_misspelled_learning_rate_says_did_you_mean_optimizer_lr(tmp_path):
    proc = train("ppo", "--cfg", "job", "optimizer.learning_rate=1e-3", cwd=tmp_path)
    assert_user_error(proc, "optimizer.learning_rate is not a field: did you mean optimizer.lr?")
