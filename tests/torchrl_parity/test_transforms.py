"""torchrl's ClipTransform, SignTransform, EndOfLifeTransform and set_gym_backend, as the
sota-implementations scripts use them."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import (
    Bounded,
    ClipTransform,
    EndOfLifeTransform,
    GymEnv,
    RewardSum,
    SignTransform,
    StepCounter,
    TransformedEnv,
    check_env_specs,
    gym_backend,
    set_gym_backend,
)
from rl_trainers.envs.transforms import ClipTransform as ClipFromTransforms


# --- a tiny Atari-like env: 3 lives, one lost every 4 steps, reward +-5 ------------------
class _Ale:
    def __init__(self, env: "LivesEnv") -> None:
        self._env = env

    def lives(self) -> int:
        return self._env.remaining


class LivesEnv(gym.Env):
    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.ale = _Ale(self)
        self.remaining, self.t = 3, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.remaining, self.t = 3, 0
        return np.full(2, 8.0, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t % 4 == 0:
            self.remaining -= 1
        reward = 5.0 if self.t % 2 else -5.0
        obs = np.array([self.t, -self.t], np.float32)
        return obs, reward, self.remaining == 0, False, {}


ENV_ID = "rl_trainers_test/LivesEnv-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=LivesEnv)


# --- ClipTransform ------------------------------------------------------------------------
def test_clip_transform_clips_observation_and_bounds_its_spec():
    env = TransformedEnv(GymEnv(ENV_ID), ClipTransform(in_keys=["observation"], low=-1, high=2.5))
    spec = env.observation_spec["observation"]
    assert isinstance(spec, Bounded)
    assert spec.low.tolist() == [-1.0, -1.0] and spec.high.tolist() == [2.5, 2.5]
    td = env.rollout(6)
    assert td["observation"][0].tolist() == [2.5, 2.5]  # reset obs (8, 8) clipped too
    assert td["next", "observation"][-1].tolist() == [2.5, -1.0]  # (6, -6)
    check_env_specs(env)


def test_clip_transform_one_sided_reward_and_out_keys():
    env = TransformedEnv(
        GymEnv(ENV_ID), ClipTransform(in_keys=["reward"], out_keys=["clipped"], high=1.0)
    )
    td = env.rollout(4)
    assert td["next", "reward"].flatten().tolist() == [5.0, -5.0, 5.0, -5.0]
    assert td["next", "clipped"].flatten().tolist() == [1.0, -5.0, 1.0, -5.0]
    spec = env.full_reward_spec["clipped"]
    assert spec.high.item() == 1.0 and spec.low.item() == -float("inf")
    assert ClipFromTransforms is ClipTransform


def test_clip_transform_inverse_clips_actions():
    env = TransformedEnv(
        GymEnv("Pendulum-v1"), ClipTransform(in_keys_inv=["action"], low=-0.5, high=0.5)
    )
    seen = []
    step = env.base_env._step
    env.base_env._step = lambda td: (seen.append(td["action"].clone()), step(td))[1]
    td = env.reset()
    td["action"] = torch.tensor([2.0])
    env.step(td)
    assert seen[0].tolist() == [0.5]


def test_clip_transform_needs_a_bound_and_low_below_high():
    with pytest.raises(TypeError, match="low, high or both"):
        ClipTransform(in_keys=["observation"])
    with pytest.raises(ValueError, match="lower than high"):
        ClipTransform(in_keys=["observation"], low=1.0, high=0.0)


# --- SignTransform ------------------------------------------------------------------------
def test_sign_transform_on_reward_as_atari_scripts_do():
    env = TransformedEnv(GymEnv(ENV_ID), SignTransform(in_keys=["reward"]))
    env.append_transform(RewardSum())
    td = env.rollout(3)
    assert td["next", "reward"].flatten().tolist() == [1.0, -1.0, 1.0]
    assert td["next", "episode_reward"][-1].item() == 1.0
    spec = env.full_reward_spec["reward"]
    assert isinstance(spec, Bounded) and (spec.low.item(), spec.high.item()) == (-1.0, 1.0)
    check_env_specs(env)


def test_sign_transform_observation_spec():
    env = TransformedEnv(GymEnv(ENV_ID), SignTransform(in_keys=["observation"], out_keys=["s"]))
    td = env.rollout(2)
    assert td["next", "s"][0].tolist() == [1.0, -1.0]
    assert env.observation_spec["s"].high.tolist() == [1.0, 1.0]
    assert "observation" in env.observation_spec.keys()


# --- EndOfLifeTransform -------------------------------------------------------------------
def test_end_of_life_flags_each_lost_life_and_the_episode_end():
    env = TransformedEnv(GymEnv(ENV_ID), StepCounter())
    env.append_transform(EndOfLifeTransform())
    assert env.observation_spec["lives"].dtype == torch.int64
    assert env.observation_spec["end-of-life"].dtype == torch.bool
    td = env.rollout(20)
    assert td.batch_size == (12,)  # 3 lives x 4 steps, then done
    eol = td["next", "end-of-life"].flatten().nonzero().flatten().tolist()
    assert eol == [3, 7, 11]
    assert td["next", "done"].flatten().nonzero().flatten().tolist() == [11]
    assert td["lives"][0].item() == 3 and td["next", "lives"][3].item() == 2
    assert not td["end-of-life"][0].item()  # reset output; later ones are the previous "next"
    check_env_specs(env)


def test_end_of_life_in_batched_env_and_collector():
    env = TransformedEnv(GymEnv(ENV_ID, num_envs=2), EndOfLifeTransform())
    collector = SyncDataCollector(env, None, frames_per_batch=16, total_frames=16)
    batch = next(iter(collector))
    assert batch.batch_size == (2, 8)
    assert batch["next", "end-of-life"].shape == (2, 8, 1)
    assert batch["next", "end-of-life"][0].flatten().nonzero().flatten().tolist() == [3, 7]
    assert batch["next", "lives"][1].tolist() == [3, 3, 3, 2, 2, 2, 2, 1]
    collector.shutdown()


def test_end_of_life_register_keys_and_errors():
    class FakeLoss:
        def set_keys(self, **kw):
            self.keys = kw

    loss = FakeLoss()
    EndOfLifeTransform(eol_key="eol").register_keys(loss)
    assert loss.keys == {"done": "eol", "terminated": "eol"}
    env = TransformedEnv(GymEnv("CartPole-v1"), EndOfLifeTransform())
    with pytest.raises(AttributeError, match="eol_attribute"):
        env.reset()


# --- set_gym_backend ----------------------------------------------------------------------
def test_set_gym_backend_accepts_gymnasium_only():
    with set_gym_backend("gymnasium"):
        assert gym_backend() is gym
    with set_gym_backend(gym):
        pass

    @set_gym_backend(lambda: gym)
    def make():
        return GymEnv("CartPole-v1")

    assert make().batch_size == ()
    set_gym_backend("gymnasium").set()
    assert gym_backend("spaces") is gym.spaces
    with pytest.raises(ValueError, match="gymnasium only"):
        set_gym_backend("gym")
