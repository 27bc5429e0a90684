"""GymEnv, GymWrapper, SerialEnv/ParallelEnv: shapes, dtypes, autoreset, seeding, errors."""

import textwrap

import gymnasium as gym
import numpy as np
import pytest
import torch

from rl_trainers.envs import (
    Bounded,
    GymEnv,
    GymWrapper,
    OneHot,
    ParallelEnv,
    SerialEnv,
    check_env_specs,
    step_mdp,
)


def test_cartpole_rollout_shapes_and_dtypes():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    td = env.rollout(20, break_when_any_done=False)
    assert td.batch_size == (20,)
    assert td["observation"].shape == (20, 4) and td["observation"].dtype == torch.float32
    assert td["action"].shape == (20, 2) and td["action"].dtype == torch.bool
    assert td["next", "reward"].shape == (20, 1) and td["next", "reward"].dtype == torch.float32
    for k in ("done", "terminated", "truncated"):
        assert td["next", k].shape == (20, 1) and td["next", k].dtype == torch.bool
    assert isinstance(env.action_spec, OneHot)
    check_env_specs(env)


def test_rollout_stops_at_first_done():
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    env.set_seed(1)
    td = env.rollout(500, policy=lambda t: t.set("action", torch.tensor(1)))
    assert td["next", "done"][-1].item() and not td["next", "done"][:-1].any()
    assert td["action"].dtype == torch.int64 and td["action"].shape == (td.shape[0],)


def test_specs_carry_sizes_and_bounds_so_user_code_needs_none():
    for name, low, high in [("Pendulum-v1", -2.0, 2.0), ("HalfCheetah-v5", -1.0, 1.0)]:
        env = GymEnv(name)
        gym_space = gym.make(name).action_space
        spec = env.action_spec
        assert isinstance(spec, Bounded)
        assert spec.shape == gym_space.shape
        assert torch.equal(spec.low, torch.as_tensor(gym_space.low, dtype=torch.float32))
        assert spec.low.min() == low and spec.high.max() == high
        obs_dim = env.observation_spec["observation"].shape[-1]
        td = env.rollout(3)
        assert td["observation"].shape == (3, obs_dim)
        assert td["observation"].dtype == torch.float32  # MuJoCo float64 mapped to float32
        env.close()


def test_terminated_vs_truncated_kept_apart():
    env = GymEnv("CartPole-v1", max_episode_steps=5, categorical_action_encoding=True)
    env.set_seed(0)
    # alternate actions: the pole stays up, the time limit truncates
    actions = iter([0, 1] * 10)
    td = env.rollout(10, policy=lambda t: t.set("action", torch.tensor(next(actions))))
    assert td.shape == (5,)
    assert td["next", "truncated"][-1].item() and not td["next", "terminated"][-1].item()
    assert td["next", "done"][-1].item()
    env2 = GymEnv("CartPole-v1", categorical_action_encoding=True)
    env2.set_seed(0)
    td2 = env2.rollout(100, policy=lambda t: t.set("action", torch.tensor(1)))
    assert td2["next", "terminated"][-1].item() and not td2["next", "truncated"][-1].item()


def test_batched_autoreset_never_mixes_episodes():
    """Sub-env 0 of a batched env equals a single gym env stepped by hand with the same seed."""
    n, seed, steps = 3, 7, 40
    env = GymEnv("CartPole-v1", num_envs=n, categorical_action_encoding=True)
    env.set_seed(seed)
    td = env.reset()
    ref = gym.make("CartPole-v1")
    ref_obs, _ = ref.reset(seed=seed)
    assert np.allclose(td["observation"][0].numpy(), ref_obs)
    n_done = 0
    for _ in range(steps):
        td.set("action", torch.ones(n, dtype=torch.int64))  # always push right: short episodes
        td, nxt = env.step_and_maybe_reset(td)
        obs, rew, term, trunc, _ = ref.step(1)
        assert np.allclose(td["next", "observation"][0].numpy(), obs)  # true final observation
        assert td["next", "terminated"][0].item() == term
        if term or trunc:
            n_done += 1
            obs, _ = ref.reset()
            assert not nxt["done"][0].item()
        assert np.allclose(nxt["observation"][0].numpy(), obs)  # reset observation goes here
        td = nxt
    assert n_done >= 2


def test_sub_envs_finishing_together_are_reset_once():
    """When every sub-env ends at the same step, a TransformedEnv's reset takes the
    observations gymnasium's autoreset already made (no second reset of the vector env)."""
    from rl_trainers.envs import RewardSum, TransformedEnv

    env = TransformedEnv(GymEnv("Pendulum-v1", num_envs=3, max_episode_steps=4), RewardSum())
    env.set_seed(0)
    td = env.reset()
    vector_env = env.base_env.env
    calls = []
    original_reset = vector_env.reset
    vector_env.reset = lambda *a, **k: calls.append(1) or original_reset(*a, **k)
    for step in range(8):
        td.set("action", env.action_spec.rand())
        transition, td = env.step_and_maybe_reset(td)
        if step in (3, 7):
            assert transition["next", "truncated"].all()
            assert (td["episode_reward"] == 0).all() and not td["done"].any()
    assert calls == []


def test_batched_rollout_continues_across_resets():
    env = GymEnv("CartPole-v1", num_envs=4)
    env.set_seed(0)
    td = env.rollout(60, break_when_any_done=False)
    assert td.batch_size == (4, 60)
    done = td["next", "done"].squeeze(-1)
    assert done.any()
    # after a done step, the next root observation is a fresh reset observation (|x| small)
    b, t = torch.nonzero(done[:, :-1])[0].tolist()
    assert td["observation"][b, t + 1].abs().max() <= 0.05
    check_env_specs(env)


def test_seeding_is_deterministic():
    def run():
        env = GymEnv("Pendulum-v1")
        env.set_seed(3)
        return env.rollout(10)

    a, b = run(), run()
    assert torch.equal(a["observation"], b["observation"])
    assert torch.equal(a["action"], b["action"])


def test_serial_and_parallel_envs():
    serial = SerialEnv(2, lambda: GymEnv("Pendulum-v1"))
    assert serial.batch_size == (2,) and serial.action_spec.shape == (2, 1)
    serial.set_seed(0)
    r1 = serial.rollout(5)
    par = ParallelEnv(2, lambda: GymEnv("Pendulum-v1"))
    try:
        par.set_seed(0)
        torch.manual_seed(0)
        r2 = par.rollout(5)
        assert r2.batch_size == (2, 5)
        assert torch.allclose(r1["observation"][:, 0], r2["observation"][:, 0])
    finally:
        par.close()
    assert par.is_closed


def test_create_env_fn_returning_gym_env_and_wrapper():
    env = SerialEnv(2, lambda: gym.make("CartPole-v1"))
    assert env.rollout(3).batch_size == (2, 3)
    wrapped = GymWrapper(gym.make("MountainCarContinuous-v0"))
    assert wrapped.action_spec.shape == (1,)
    assert wrapped.rollout(2)["observation"].shape == (2, 2)
    with pytest.raises(ValueError, match="SAME_STEP"):
        GymWrapper(gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")]))


def test_custom_entry_points(tmp_path, monkeypatch):
    (tmp_path / "toy_env_mod.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            import numpy as np

            class ToyEnv(gym.Env):
                observation_space = gym.spaces.Dict(
                    {"pos": gym.spaces.Box(-10, 10, (2,), dtype=np.float64),
                     "inner": gym.spaces.Dict({"flag": gym.spaces.Discrete(3)})}
                )
                action_space = gym.spaces.Discrete(2)

                def reset(self, *, seed=None, options=None):
                    super().reset(seed=seed)
                    self.t = 0
                    return {"pos": np.zeros(2), "inner": {"flag": 0}}, {}

                def step(self, action):
                    self.t += 1
                    obs = {"pos": np.full(2, float(self.t)), "inner": {"flag": self.t % 3}}
                    return obs, 1.0, self.t >= 3, False, {}

            gym.register("ToyRegistered-v0", entry_point=ToyEnv)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = GymEnv("toy_env_mod:ToyEnv")
    td = env.rollout(10)
    assert td.shape == (3,)
    assert td["next", "pos"][-1].tolist() == [3.0, 3.0] and td["pos"].dtype == torch.float32
    assert td["next", "inner", "flag"].shape == (3, 3)  # one-hot nested key
    assert GymEnv("toy_env_mod:ToyRegistered-v0").rollout(2).shape == (2,)
    batched = GymEnv("toy_env_mod:ToyEnv", num_envs=2)
    td, nxt = batched.step_and_maybe_reset(batched.rollout(2)[:, -1].exclude("next"))
    assert td["next", "pos"][:, 0].tolist() == [3.0, 3.0]  # final obs
    assert nxt["pos"][:, 0].tolist() == [0.0, 0.0]  # reset obs


def test_unknown_env_id_suggests_close_matches():
    with pytest.raises(ValueError, match="Did you mean: CartPole-v1"):
        GymEnv("CartPol-v1")


@pytest.mark.parametrize(
    "torchrl_keywords",
    [
        {"convert_actions_to_numpy": True},
        {"allow_done_after_reset": False},
        {"allow_done_after_reset": True},  # never checked here: both values behave alike
        {"batch_size": None, "missing_obs_value": None},
        {"batch_size": []},
        {"batch_size": torch.Size([])},
    ],
)
def test_torchrl_keywords_at_values_rl_trainers_behaves_as_are_accepted(torchrl_keywords):
    env = GymEnv("CartPole-v1", **torchrl_keywords)
    assert env.rollout(3).batch_size == (3,)
    assert GymWrapper(gym.make("CartPole-v1"), **torchrl_keywords).batch_size == ()


@pytest.mark.parametrize(
    ("keyword", "value", "instead"),
    [
        ("missing_obs_value", 0.0, "no observation is missing"),
        ("convert_actions_to_numpy", False, "actions always reach gymnasium as numpy arrays"),
        ("batch_size", [4], "the batch is set by num_envs"),
    ],
)
def test_torchrl_keywords_at_other_values_are_refused_naming_them(keyword, value, instead):
    with pytest.raises(ValueError) as refused:
        GymEnv("CartPole-v1", **{keyword: value})
    message = str(refused.value)
    assert message.startswith(f"GymEnv({keyword}={value!r}): only torchrl's default")
    assert instead in message and message.endswith(f"leave {keyword} out.")


def test_bad_actions_and_missing_keys_are_reported():
    env = GymEnv("Pendulum-v1")
    td = env.reset()
    with pytest.raises(KeyError, match="keys present"):
        env.step(td)
    td.set("action", torch.zeros(3))
    with pytest.raises(ValueError, match="action spec Bounded"):
        env.step(td)
    cat = GymEnv("CartPole-v1", categorical_action_encoding=True)
    td = cat.reset().set("action", torch.tensor(5))
    with pytest.raises(ValueError, match="outside the action spec Categorical"):
        cat.step(td)


def test_fake_tensordict_rand_step_and_step_mdp():
    env = GymEnv("CartPole-v1", num_envs=2)
    fake = env.fake_tensordict()
    assert fake.batch_size == (2,) and fake["next", "reward"].shape == (2, 1)
    env.reset()
    td = env.rand_step()
    assert td["next", "observation"].shape == (2, 4)
    nxt = step_mdp(td)
    assert "next" not in nxt.keys() and "reward" not in nxt.keys()
    assert torch.equal(nxt["observation"], td["next", "observation"])


def test_from_pixels_gives_uint8_frames():
    env = GymEnv("CartPole-v1", from_pixels=True)
    td = env.rollout(2)
    assert td["pixels"].dtype == torch.uint8 and td["pixels"].shape[-1] == 3
    assert "observation" in td.keys()
    only = GymEnv("CartPole-v1", from_pixels=True, pixels_only=True)
    assert set(only.observation_spec.keys()) == {"pixels"}
