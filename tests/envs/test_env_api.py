"""EnvBase API torchrl scripts use: *_spec_unbatched, reward/action keys, append_transform."""

import torch

from rl_trainers.envs import GymEnv, SerialEnv, StepCounter, TransformedEnv


def test_unbatched_specs_of_a_batched_env():
    env = GymEnv("Pendulum-v1", num_envs=3)
    assert env.action_spec.shape == (3, 1)
    spec = env.action_spec_unbatched
    assert spec.shape == (1,)
    assert spec.space.low.tolist() == [-2.0] and spec.space.high.tolist() == [2.0]
    assert env.observation_spec_unbatched["observation"].shape == (3,)
    assert env.full_action_spec_unbatched["action"].shape == (1,)
    assert env.reward_spec_unbatched.shape == (1,)
    assert env.full_done_spec_unbatched["done"].shape == (1,)
    # the batched spec is untouched
    assert env.action_spec.space.low.shape == (3, 1)
    serial = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    assert serial.action_spec_unbatched.shape == (2,)
    assert serial.action_spec_unbatched.n == 2
    serial.close()


def test_unbatched_specs_of_a_single_env_equal_the_specs():
    env = GymEnv("Pendulum-v1")
    assert env.action_spec_unbatched == env.action_spec


def test_reward_and_action_keys():
    env = GymEnv("CartPole-v1")
    assert env.reward_keys == ["reward"] and env.action_keys == ["action"]


def test_append_transform_on_a_base_env_returns_a_transformed_env():
    env = GymEnv("Pendulum-v1").append_transform(StepCounter(max_steps=4))
    assert isinstance(env, TransformedEnv)
    td = env.rollout(10)
    assert td.batch_size == (4,) and td["next", "truncated"][-1].item()
    assert td["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4]
    assert torch.equal(td["next", "done"], td["next", "truncated"])
