"""EnvBase API torchrl scripts use: *_spec_unbatched, reward/action keys, append_transform."""

import torch

from rl_trainers.envs import Compose, GymEnv, SerialEnv, StepCounter, TransformedEnv


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


def test_torchrls_former_single_spec_names_read_the_unbatched_specs():
    """torchrl's older scripts read ``single_action_spec`` (now ``action_spec_unbatched``)."""
    from rl_trainers.envs import InitTracker, ParallelEnv

    env = TransformedEnv(
        ParallelEnv(2, lambda: GymEnv("Pendulum-v1"), serial_for_single=True), InitTracker()
    )
    assert env.batch_size == (2,)
    assert env.single_action_spec == env.action_spec_unbatched
    assert env.single_action_spec.shape == (1,)
    assert env.single_observation_spec == env.observation_spec_unbatched
    assert env.single_reward_spec == env.reward_spec_unbatched
    assert env.single_done_spec == env.done_spec_unbatched
    env.close()


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


def test_transform_signatures_as_torchrl():
    from rl_trainers.envs import DoubleToFloat, RewardScaling

    env = TransformedEnv(
        GymEnv("CartPole-v1"), RewardScaling(0.5, 2.0, ["reward"], ["scaled_reward"])
    )
    td = env.rollout(3)
    assert td["next", "reward"].tolist() == [[1.0]] * 3
    assert td["next", "scaled_reward"].tolist() == [[2.5]] * 3
    assert "scaled_reward" in env.full_reward_spec.keys()
    t = DoubleToFloat(["observation"], None, ["action"])
    assert t.in_keys_inv == ["action"] and t.out_keys == ["observation"]


def _custom_env_class():
    from tensordict import TensorDict

    from rl_trainers.data import Bounded, Composite, Unbounded
    from rl_trainers.envs import EnvBase

    class FiveSteps(EnvBase):
        """Written as torchrl's custom-env tutorial does: specs set by assignment, only
        "done" written by _step, no done flags from _reset."""

        batch_locked = False

        def __init__(self, seed=None, device="cpu"):
            super().__init__(device=device, batch_size=[])
            self.observation_spec = Composite(observation=Unbounded(shape=(3,)), shape=())
            self.state_spec = Composite(shape=())
            self.action_spec = Bounded(low=-1, high=1, shape=(1,))
            self.reward_spec = Unbounded(shape=(1,))
            self.t = 0

        def _reset(self, tensordict):
            self.t = 0
            return TensorDict({"observation": torch.zeros(3)}, [])

        def _step(self, tensordict):
            self.t += 1
            return TensorDict(
                {
                    "observation": torch.full((3,), float(self.t)),
                    "reward": -tensordict["action"].abs(),
                    "done": torch.tensor([self.t >= 5]),
                },
                [],
            )

        def _set_seed(self, seed):
            torch.manual_seed(seed)

    return FiveSteps


def test_custom_env_written_as_torchrl_tutorials_do():
    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.envs import check_env_specs

    env_cls = _custom_env_class()
    env = env_cls()
    assert env.reset()["done"].tolist() == [False]
    td = env.rollout(10)
    assert td.batch_size == (5,)
    assert torch.equal(td["next", "terminated"], td["next", "done"])
    assert not td["next", "truncated"].any()
    check_env_specs(env)
    counted = TransformedEnv(env_cls(), StepCounter()).rollout(10)
    assert counted["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4, 5]
    batch = next(iter(SyncDataCollector(env_cls(), None, frames_per_batch=12, total_frames=12)))
    assert batch["collector", "traj_ids"].tolist() == [0] * 5 + [1] * 5 + [2] * 2


def test_user_transform_with_apply_to_composite():
    from rl_trainers.data import Bounded
    from rl_trainers.envs.transforms.transforms import Transform, _apply_to_composite

    class SinTransform(Transform):
        def _apply_transform(self, obs):
            return obs.sin()

        def _reset(self, tensordict, tensordict_reset):
            return self._call(tensordict_reset)

        @_apply_to_composite
        def transform_observation_spec(self, observation_spec):
            return Bounded(-1.0, 1.0, shape=observation_spec.shape, device=observation_spec.device)

    env = TransformedEnv(
        GymEnv("Pendulum-v1"), SinTransform(in_keys=["observation"], out_keys=["sin"])
    )
    assert env.observation_spec["sin"].space.high.tolist() == [1.0, 1.0, 1.0]
    td = env.rollout(3)
    assert torch.allclose(td["sin"], td["observation"].sin())
    assert torch.allclose(td["next", "sin"], td["next", "observation"].sin())


def test_batched_env_of_a_transformed_env_factory():
    from rl_trainers.envs import ParallelEnv, RewardSum, check_env_specs

    def make_env():
        return TransformedEnv(GymEnv("Pendulum-v1"), Compose(StepCounter(max_steps=5), RewardSum()))

    for cls in (SerialEnv, ParallelEnv):
        env = cls(2, make_env)
        try:
            assert isinstance(env, TransformedEnv) and isinstance(env.base_env, cls)
            assert env.batch_size == (2,)
            check_env_specs(env)
            td = env.rollout(7, break_when_any_done=False)
            assert td["next", "step_count"][0].squeeze(-1).tolist() == [1, 2, 3, 4, 5, 1, 2]
            assert td["next", "episode_reward"].shape == (2, 7, 1)
        finally:
            env.close()


def test_unsqueeze_and_squeeze_transforms():
    from rl_trainers.envs import SqueezeTransform, UnsqueezeTransform, check_env_specs

    env = TransformedEnv(GymEnv("Pendulum-v1"), UnsqueezeTransform(-1, in_keys=["observation"]))
    assert env.observation_spec["observation"].shape == (3, 1)
    assert env.observation_spec["observation"].space.high.shape == (3, 1)
    assert env.rollout(2)["next", "observation"].shape == (2, 3, 1)
    check_env_specs(env)
    env.append_transform(SqueezeTransform(-1, in_keys=["observation"]))
    assert env.observation_spec["observation"].shape == (3,)
    check_env_specs(env)


def test_rollout_set_truncated_marks_the_last_step():
    env = GymEnv("Pendulum-v1", num_envs=2)
    td = env.rollout(4, set_truncated=True, break_when_any_done=False, trust_policy=True)
    assert td["next", "truncated"].squeeze(-1).tolist() == [[False, False, False, True]] * 2
    assert torch.equal(td["next", "done"], td["next", "truncated"])
    assert not td["next", "terminated"].any()
