"""A user's own environment and networks, in a module of their own: trained through
train.py, then used with load_policy, make_env, eval and enjoy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import rl_trainers

from .conftest import REPO, env_with_package

OWN_MODULE = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    import torch
    from gymnasium import spaces
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torch import nn

    from rl_trainers.modules import ProbabilisticActor, TanhNormal


    class DictObs(gym.Env):
        '''Reward 1 when the action is the sign of pos[0]; no render_mode argument.'''

        def __init__(self):
            self.observation_space = spaces.Dict(
                {"pos": spaces.Box(-1, 1, (2,), np.float32), "flag": spaces.Discrete(3)}
            )
            self.action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.observation_space.seed(seed)
            self.t = 0
            self.obs = self.observation_space.sample()
            return self.obs, {}

        def step(self, action):
            self.t += 1
            reward = float(int(action) == int(self.obs["pos"][0] > 0))
            self.obs = self.observation_space.sample()
            return self.obs, reward, False, self.t >= 10, {}


    class Asymmetric(gym.Env):
        '''Box actions within low=[0, -2], high=[1, 5]; float64 observations.'''

        def __init__(self):
            self.observation_space = spaces.Box(-1.0, 1.0, (3,), np.float64)
            self.action_space = spaces.Box(
                np.array([0.0, -2.0], np.float32), np.array([1.0, 5.0], np.float32)
            )

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return self.np_random.uniform(-1, 1, 3), {}

        def step(self, action):
            self.t += 1
            reward = -float(((np.asarray(action) - np.array([0.8, 4.0])) ** 2).sum())
            return self.np_random.uniform(-1, 1, 3), reward, False, self.t >= 10, {}


    class DiscreteObs(gym.Env):
        '''Discrete observations (ints); reward 1 when the action is the observation's parity.'''

        def __init__(self):
            self.observation_space = spaces.Discrete(4)
            self.action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            self.obs = int(self.np_random.integers(4))
            return self.obs, {}

        def step(self, action):
            self.t += 1
            reward = float(int(action) == self.obs % 2)
            self.obs = int(self.np_random.integers(4))
            return self.obs, reward, False, self.t >= 10, {}


    gym.register("OwnDict-v0", entry_point="own_module:DictObs")


    def make_policy(observation_spec, action_spec, network, return_log_prob=True, hidden=8):
        '''A TanhNormal policy over a network of the user's own, with one hidden layer.'''
        n_obs = observation_spec["observation"].shape[-1]
        n_act = action_spec.shape[-1]
        low = action_spec.space.low.reshape(-1, n_act)[0]
        high = action_spec.space.high.reshape(-1, n_act)[0]
        net = nn.Sequential(
            nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, 2 * n_act), NormalParamExtractor()
        )
        module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
        return ProbabilisticActor(
            module,
            in_keys=["loc", "scale"],
            spec=action_spec,
            distribution_class=TanhNormal,
            distribution_kwargs={"low": low, "high": high},
            return_log_prob=return_log_prob,
        )
    """
)

PPO_TINY = [
    "trainer.total_frames=256",
    "collector.frames_per_batch=128",
    "env.num_envs=2",
    "trainer.num_epochs=1",
    "trainer.minibatch_size=64",
    "eval.episodes=2",
    "trainer.progress_bar=false",
]


@pytest.fixture(scope="module")
def own_module(tmp_path_factory):
    """A directory holding ``own_module.py``, put on ``sys.path`` and ``PYTHONPATH``."""
    folder = tmp_path_factory.mktemp("own")
    (folder / "own_module.py").write_text(OWN_MODULE)
    sys.path.insert(0, str(folder))
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), before]))
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("own_module", None)
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before


def _train(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    script = REPO / "sota-implementations" / "ppo_trainer" / "train.py"
    return subprocess.run(
        [sys.executable, str(script), *PPO_TINY, *overrides, f"hydra.run.dir={run_dir}"],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def dict_run(own_module, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "dict"
    done = _train(run_dir, "env.env_name=own_module:OwnDict-v0")
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir


def test_a_dict_observation_policy_acts_on_the_envs_own_observations(dict_run):
    """``act`` takes the gymnasium env's Dict observations, one or a batch, and joins their
    entries as the training env did: in the space's order, a Discrete entry one-hot."""
    policy = rl_trainers.load_policy(dict_run)
    env = rl_trainers.make_env(dict_run)
    observations = [env.reset(seed=0)[0]]
    for _ in range(9):
        observations.append(env.step(env.action_space.sample())[0])
    assert list(env.observation_space.keys()) == ["flag", "pos"]  # gymnasium sorts them
    joined = np.stack(
        [np.concatenate([np.eye(3, dtype=np.float32)[o["flag"]], o["pos"]]) for o in observations]
    )
    expected = policy.act(joined)
    for o, action in zip(observations, expected, strict=True):
        assert policy.act(o) == action
        assert isinstance(policy.act(o), int)
    batch = {
        "pos": np.stack([o["pos"] for o in observations]),
        "flag": np.array([o["flag"] for o in observations]),
    }
    np.testing.assert_array_equal(policy.act(batch), expected)
    assert policy.predict(observations[0], deterministic=True)[0] == expected[0]


def test_a_discrete_observation_policy_acts_on_the_envs_ints(own_module, tmp_path):
    """``act`` takes a Discrete env's int observations (one, or an array of them), one-hot
    as the training env encodes them, and a plain gymnasium episode plays as evaluate()'s."""
    run_dir = tmp_path / "discrete"
    done = _train(run_dir, "env.env_name=own_module:DiscreteObs")
    assert done.returncode == 0, done.stderr[-3000:]
    policy = rl_trainers.load_policy(run_dir)
    env = rl_trainers.make_env(run_dir)
    actions = [policy.act(i) for i in range(4)]
    assert all(isinstance(a, int) for a in actions)
    np.testing.assert_array_equal(policy.act(np.arange(4)), actions)
    evaluation = rl_trainers.evaluate(policy, episodes=1)
    obs, _ = env.reset(seed=evaluation.seed)
    total, steps, over = 0.0, 0, False
    while not over:
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        total, steps, over = total + reward, steps + 1, terminated or truncated
    assert (total, steps) == (evaluation.returns[0], evaluation.lengths[0])


def test_enjoy_of_an_env_that_cannot_render_says_what_to_add(dict_run, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_trainers.enjoy",
            str(dict_run),
            "--video",
            str(tmp_path / "a.gif"),
        ],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: own_module:OwnDict-v0 cannot render: its constructor takes no render_mode "
        "argument; to watch it, give the env's __init__ a render_mode=None argument, "
        "metadata = {'render_modes': ['rgb_array']} and a render() returning an RGB array "
        f"(rl-trainers eval {dict_run} plays it without rendering)"
    ]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "a.gif").exists()


def test_a_policy_builder_of_the_users_own_takes_its_own_arguments(own_module, tmp_path):
    """``model.policy._target_`` names the user's builder; a key added with ``+`` reaches it
    as an argument (not refused as a key nothing reads), and the run's policy loads,
    evaluates and acts within the env's asymmetric bounds."""
    run_dir = tmp_path / "own_policy"
    done = _train(
        run_dir,
        "env.env_name=own_module:Asymmetric",
        "model.policy._target_=own_module.make_policy",
        "+model.policy.hidden=5",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    policy = rl_trainers.load_policy(run_dir)
    shapes = [tuple(p.shape) for p in policy.actor.parameters()]
    assert shapes == [(5, 3), (5,), (4, 5), (4,)]  # hidden=5 reached the builder
    env = rl_trainers.make_env(run_dir)
    obs, _ = env.reset(seed=0)
    actions = np.stack([policy.act(obs, deterministic=False) for _ in range(200)])
    assert (actions >= env.action_space.low).all() and (actions <= env.action_space.high).all()
    done = subprocess.run(
        [sys.executable, "-m", "rl_trainers.eval", str(run_dir), "--episodes", "2"],
        env=env_with_package(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_misspelt_argument_of_the_users_own_builder_is_one_error_line(own_module, tmp_path):
    done = _train(
        tmp_path / "run",
        "env.env_name=own_module:Asymmetric",
        "model.policy._target_=own_module.make_policy",
        "+model.policy.hiden=5",
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: could not build 'model.policy': make_policy() got an unexpected keyword "
        "argument 'hiden'"
    ]


def test_a_key_added_to_an_app_builders_node_is_still_refused(own_module, tmp_path):
    done = _train(tmp_path / "run", "env.env_name=own_module:Asymmetric", "+model.policy.hidden=5")
    assert done.returncode == 2
    assert "model.policy.hidden=5 is invalid: not a field" in done.stderr
