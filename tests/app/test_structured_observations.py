"""Dict and Tuple observation spaces: their parts joined into one ``observation`` in order,
images named, a user's own transform reading the parts."""

from __future__ import annotations

import json
import textwrap

import pytest

from rl_trainers.algorithms.components import make_env
from rl_trainers.app.run import run
from rl_trainers.envs.libs.gym import tuple_observation_keys
from rl_trainers.envs.specs import Composite, Unbounded
from rl_trainers.errors import ConfigError

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
    (tmp_path / "dict_observation_envs.py").write_text(DICT_ENVS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "dict_observation_envs"


def test_a_dict_observation_env_trains(tiny_config, dict_envs, tmp_path):
    """Its vector entries are joined into one 'observation' (as a Tuple's are) and it trains."""
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


def test_a_dict_observation_joined_by_the_users_own_transform_trains(
    tiny_config, dict_envs, tmp_path
):
    """When ``env.transforms`` joins a Dict env's entries itself, the app's own joining
    steps aside."""
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


def test_tuple_observation_keys_in_tuple_order():
    order = [7, 0, 11, 3, 10, 1, 2, 9, 4, 8, 5, 6]
    spec = Composite({f"observation_{i}": Unbounded((1,)) for i in order})
    assert tuple_observation_keys(spec) == [f"observation_{i}" for i in range(12)]
    spec["observation"] = Unbounded((3,))
    assert tuple_observation_keys(spec) == []
    assert tuple_observation_keys(Composite({"pixels": Unbounded((3,))})) == []


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_tuple_observation_parts_become_one_observation(vectorization):
    env = make_env("Blackjack-v1", num_envs=2, vectorization=vectorization)
    try:
        td = env.reset()
    finally:
        env.close()
    obs = td["observation"]
    assert obs.shape == (2, 32 + 11 + 2)
    for block in (obs[:, :32], obs[:, 32:43], obs[:, 43:]):  # one-hot parts, in order
        assert (block.sum(-1) == 1).all()
    assert not any(str(k).startswith("observation_") for k in td.keys())
