"""RewardClipping, BinarizeReward, TargetReturn, Reward2GoTransform and TrajCounter: values
on real envs, specs against rollouts, resets, batched envs, offline data."""

import pytest
import torch
from rollout_checks import specs_hold
from tensordict import TensorDict

from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.envs import (
    BinarizeReward,
    Binary,
    Bounded,
    Compose,
    GymEnv,
    Reward2GoTransform,
    RewardClipping,
    RewardSum,
    StepCounter,
    TargetReturn,
    TrajCounter,
    TransformedEnv,
    check_env_specs,
)
from rl_trainers.objectives.value.functional import reward2go


def _seeded(env, seed=0):
    env.set_seed(seed)
    torch.manual_seed(seed)
    return env


def _zero_policy(td):
    return td.set("action", torch.zeros(td.batch_size + (1,)))


def test_reward_clipping_values_and_spec():
    env = _seeded(TransformedEnv(GymEnv("Pendulum-v1"), RewardClipping(-0.5, 0.25)))
    base = _seeded(GymEnv("Pendulum-v1"))
    td = env.rollout(6, policy=_zero_policy)
    ref = base.rollout(6, policy=_zero_policy)
    assert torch.equal(td["next", "reward"], ref["next", "reward"].clamp(-0.5, 0.25))
    spec = env.full_reward_spec["reward"]
    assert isinstance(spec, Bounded) and (spec.low.item(), spec.high.item()) == (-0.5, 0.25)
    assert spec.shape == (1,) and spec.dtype == torch.float32
    assert env.transform.clamp_min == -0.5 and env.transform.clamp_max == 0.25
    specs_hold(env, td)


def test_reward_clipping_one_sided_out_key_batched():
    env = TransformedEnv(
        GymEnv("Pendulum-v1", num_envs=2), RewardClipping(clamp_min=-1.0, out_keys=["clipped"])
    )
    td = env.rollout(5)
    assert td.batch_size == (2, 5)
    assert torch.equal(td["next", "clipped"], td["next", "reward"].clamp_min(-1.0))
    spec = env.full_reward_spec["clipped"]
    assert spec.shape == (2, 1)
    assert (spec.low == -1).all() and torch.isinf(spec.high).all()
    assert env.full_reward_spec["reward"].shape == (2, 1)  # the raw reward is kept
    specs_hold(env, td)
    check_env_specs(env)


def test_reward_clipping_arguments():
    with pytest.raises(TypeError, match="clamp_min, clamp_max or both"):
        RewardClipping()
    with pytest.raises(ValueError, match="clamp_min must be lower than clamp_max"):
        RewardClipping(1.0, -1.0)
    with pytest.raises(TypeError, match="RewardClipping: clamp_max must be a scalar"):
        RewardClipping(0.0, torch.ones(2))


def test_binarize_reward_values_spec_and_reward_sum():
    env = TransformedEnv(GymEnv("CartPole-v1"), Compose(BinarizeReward(), RewardSum()))
    td = env.rollout(4)
    assert td["next", "reward"].dtype == torch.int8
    assert td["next", "reward"].flatten().tolist() == [1, 1, 1, 1]
    assert td["next", "episode_reward"].flatten().tolist() == [1.0, 2.0, 3.0, 4.0]
    spec = env.full_reward_spec["reward"]
    assert isinstance(spec, Binary) and spec.shape == (1,) and spec.dtype == torch.int8
    specs_hold(env, td)
    check_env_specs(env)
    # negative rewards map to 0 (Pendulum's are all <= 0)
    pend = TransformedEnv(GymEnv("Pendulum-v1"), BinarizeReward(out_keys=["hit"]))
    td = pend.rollout(3)
    assert td["next", "hit"].flatten().tolist() == [0, 0, 0]
    assert td["next", "reward"].dtype == torch.float32


def test_binarize_reward_batched_and_shape_check():
    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=2), BinarizeReward())
    td = env.rollout(3)
    assert td["next", "reward"].shape == (2, 3, 1)
    assert td["next", "reward"].eq(1).all()
    assert env.full_reward_spec["reward"].shape == (2, 1)
    specs_hold(env, td)
    t = BinarizeReward()
    out = t(TensorDict({"reward": torch.tensor([[0.5], [0.0], [-2.0]])}, [3]))
    assert out["reward"].flatten().tolist() == [1, 0, 0]
    with pytest.raises(RuntimeError, match="singleton"):
        t(TensorDict({"reward": torch.zeros(3, 2)}, [3]))


def test_target_return_reduce_and_constant():
    env = _seeded(TransformedEnv(GymEnv("CartPole-v1"), TargetReturn(10.0, mode="reduce")))
    td = env.rollout(5)
    assert td["target_return"].flatten().tolist() == [10.0, 9.0, 8.0, 7.0, 6.0]
    assert td["next", "target_return"].flatten().tolist() == [9.0, 8.0, 7.0, 6.0, 5.0]
    spec = env.observation_spec["target_return"]
    assert spec.shape == (1,) and spec.dtype == torch.float32
    specs_hold(env, td)
    check_env_specs(env)
    const = TransformedEnv(GymEnv("CartPole-v1"), TargetReturn(3.0, mode="constant"))
    td = const.rollout(4)
    assert td["next", "target_return"].eq(3.0).all() and td["target_return"].eq(3.0).all()


def test_target_return_restarts_at_reset_and_per_sub_env():
    env = TransformedEnv(
        GymEnv("Pendulum-v1"), Compose(StepCounter(3), TargetReturn(0.0, out_keys=["rtg"]))
    )
    td = env.rollout(6, break_when_any_done=False)
    r = td["next", "reward"].flatten()
    rtg = td["rtg"].flatten()
    # the episode restarts after step 3: its first input holds the target again
    assert rtg[0] == 0 and rtg[3] == 0
    assert torch.allclose(rtg[1:3], -r[:2].cumsum(0))
    assert torch.allclose(td["next", "rtg"].flatten()[3:], -r[3:].cumsum(0))
    # batched: a partial reset restarts the flagged sub-env only
    benv = TransformedEnv(GymEnv("Pendulum-v1", num_envs=2), TargetReturn(5.0))
    state = benv.rand_step(benv.reset())
    nxt = state["next"].clone()
    assert torch.allclose(nxt["target_return"], 5.0 - nxt["reward"])
    nxt.set("_reset", torch.tensor([[True], [False]]))
    out = benv.reset(nxt)
    assert out["target_return"][0].item() == 5.0
    assert out["target_return"][1] == nxt["target_return"][1]
    td = benv.rollout(4)
    assert td["target_return"].shape == (2, 4, 1)
    specs_hold(benv, td)


def test_target_return_arguments():
    with pytest.raises(ValueError, match="'reduce' or 'constant'"):
        TargetReturn(1.0, mode="sum")
    with pytest.raises(ValueError, match="reset_key"):
        TargetReturn(1.0, reset_key=("agents", "_reset"))
    assert TargetReturn(1.0, in_keys=[("agents", "reward")]).out_keys == [
        ("agents", "target_return")
    ]
    with pytest.raises(NotImplementedError, match="cannot be called independently"):
        TargetReturn(1.0)(TensorDict({"reward": torch.ones(1)}, []))


def test_reward2go_in_a_replay_buffer_as_torchrl_doc():
    done = torch.zeros(4, 5, 1, dtype=torch.bool)
    done[:, -1] = True
    done[0, 1] = True
    data = TensorDict({"next": {"done": done, "reward": torch.ones(4, 5, 1)}}, [4, 5])
    r2g = Reward2GoTransform(gamma=0.99, out_keys=["reward_to_go"])
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), transform=r2g, batch_size=4)
    rb.extend(data)
    sample = rb[1:2]
    expected = [4.90099, 3.940399, 2.9701, 1.99, 1.0]
    assert torch.allclose(sample["reward_to_go"].flatten(), torch.tensor(expected))
    assert sample["next", "reward"].eq(1).all()  # written elsewhere: the rewards stay
    first = rb[0:1]["reward_to_go"].flatten()  # trajectory 0 ends at t=1, then 3 steps
    assert torch.allclose(first, torch.tensor([1.99, 1.0, 2.9701, 1.99, 1.0]))


def test_reward2go_inv_on_collected_data():
    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(4))
    data = env.rollout(12, break_when_any_done=False)
    r2g = Reward2GoTransform(gamma=0.9, out_keys=["rtg"])
    out = r2g.inv(data.clone())
    reward, done = data["next", "reward"], data["next", "done"]
    assert torch.allclose(out["rtg"], reward2go(reward, done, 0.9))
    # by hand on the first episode (steps 0..3)
    r = reward.flatten()[:4]
    assert torch.isclose(out["rtg"][0, 0], r[0] + 0.9 * r[1] + 0.81 * r[2] + 0.729 * r[3])
    assert torch.isclose(out["rtg"][3, 0], r[3])
    # in place by default
    inplace = Reward2GoTransform(gamma=0.9).inv(data.clone())
    assert torch.allclose(inplace["next", "reward"], out["rtg"])


def test_reward2go_refuses_envs_and_unfinished_data():
    with pytest.raises(ValueError, match="not inside an env"):
        TransformedEnv(GymEnv("Pendulum-v1"), Reward2GoTransform())
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(Reward2GoTransform()))
    with pytest.raises(ValueError, match="not inside an env"):
        env.reset()
    data = TensorDict(
        {"next": {"done": torch.zeros(2, 3, 1, dtype=torch.bool), "reward": torch.ones(2, 3, 1)}},
        [2, 3],
    )
    with pytest.raises(RuntimeError, match="no end"):
        Reward2GoTransform().inv(data)
    data["next", "done"][:, -1] = True
    with pytest.raises(KeyError, match="none of the reward keys"):
        Reward2GoTransform(in_keys=["missing"]).inv(data)
    assert float(Reward2GoTransform(0.5).state_dict()["gamma"]) == 0.5


def test_traj_counter_as_torchrl_example():
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(StepCounter(6), TrajCounter()))
    r = env.rollout(18, break_when_any_done=False)
    assert r["next", "traj_count"].flatten().tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert torch.equal(r["traj_count"], r["next", "traj_count"])
    spec = env.observation_spec["traj_count"]
    assert spec.dtype == torch.int64 and spec.shape == (1,)
    specs_hold(env, r)
    check_env_specs(env)


def test_traj_counter_batched_state_dict_and_clones():
    counter = TrajCounter()
    env = TransformedEnv(GymEnv("Pendulum-v1", num_envs=2), Compose(StepCounter(2), counter))
    r = env.rollout(5, break_when_any_done=False)
    assert r["next", "traj_count"].squeeze(-1).tolist() == [[0, 0, 2, 2, 4], [1, 1, 3, 3, 5]]
    sd = env.state_dict()
    assert int(sd["transform.transforms.1.traj_count"]) == 6  # the last step reset both
    other = TransformedEnv(
        GymEnv("Pendulum-v1", num_envs=2), Compose(StepCounter(2), TrajCounter())
    )
    other.load_state_dict(sd)
    assert other.reset()["traj_count"].flatten().tolist() == [6, 7]
    # clones share the counter: two envs never hand out the same id
    copy = counter.clone()
    one = TransformedEnv(GymEnv("CartPole-v1"), copy)
    assert one.reset()["traj_count"].item() == 6 and int(counter.traj_count) == 7
    fresh = TrajCounter()
    fresh.load_state_dict({"traj_count": 3})
    assert int(fresh.traj_count) == 3
    with pytest.raises(RuntimeError, match="within an env step or reset"):
        fresh(TensorDict({}, []))
