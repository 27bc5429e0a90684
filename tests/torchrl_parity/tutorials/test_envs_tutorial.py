"""The "TorchRL envs" tutorial, ported by replacing ``torchrl`` with ``rl_trainers``.

Each test is one section of the tutorial, its user code kept as written (shorter rollouts),
followed by checks of what the tutorial prints or states. The tutorial's Atari
(``ALE/Pong-v5``, ``ALE/AirRaid-v5``) and DeepMind Control (``DMControlEnv``) environments
are not used: Atari needs ``ale_py`` (its constructor is skipped without it), and
rl_trainers wraps gymnasium only, with no ``DMControlEnv`` (checked below). Those sections run
on the same code with gymnasium's classic-control envs (pixels rendered by pygame).
"""

from __future__ import annotations

import importlib.util
from uuid import uuid1

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.envs import (
    CatTensors,
    Compose,
    EnvCreator,
    GrayScale,
    ParallelEnv,
    Resize,
    ToTensorImage,
    TransformedEnv,
    VecNorm,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import step_mdp

needs_pygame = pytest.mark.skipif(
    importlib.util.find_spec("pygame") is None, reason="pixel rendering needs pygame"
)


def test_gym_env_specs_and_available_envs():
    env = GymEnv("Pendulum-v1")
    names = GymEnv.available_envs[:10]
    assert len(names) == 10 and all(isinstance(n, str) for n in names)
    assert "Pendulum-v1" in GymEnv.available_envs

    assert "observation" in env.observation_spec.keys()
    assert env.action_spec.shape == (1,)
    assert env.reward_spec.shape == (1,)
    assert set(env.done_spec.keys()) == {"done", "terminated", "truncated"}

    action = torch.ones(1) * 3
    assert not bool(env.action_spec.is_in(action))  # "action is in bounds?" False
    assert env.action_spec.project(action) == 2.0  # "projected action"
    assert env.action_spec.is_in(env.action_spec.rand())  # "random action"
    assert "full_action_spec" in env.input_spec.keys()


def test_seeding_resetting_and_steps():
    env = GymEnv("Pendulum-v1")
    torch.manual_seed(0)  # make sure that all torch code is also reproductible
    env.set_seed(0)
    tensordict = env.reset()
    assert tensordict["observation"].shape == (3,)

    def policy(tensordict, env=env):
        tensordict.set("action", env.action_spec.rand())
        return tensordict

    policy(tensordict)
    tensordict_out = env.step(tensordict)
    # By default, the tensordict returned by ``step`` is the same as the input...
    assert tensordict_out is tensordict
    # ... but with new keys
    assert ("next", "observation") in tensordict.keys(True)
    assert ("next", "reward") in tensordict.keys(True)

    out = env.rand_step()
    assert ("next", "observation") in out.keys(True)

    tensordict.set("some other key", torch.randn(1))
    tensordict_tprime = step_mdp(tensordict)
    assert (tensordict_tprime.get("observation") == tensordict.get(("next", "observation"))).all()
    assert "some other key" in tensordict_tprime.keys()  # kept: not time-dependent
    assert "next" not in tensordict_tprime.keys() and "action" not in tensordict_tprime.keys()

    tensordict = TensorDict({}, [])
    assert env.reset(tensordict) is tensordict
    assert "observation" in tensordict.keys()

    # same seed, same reset
    env.set_seed(0)
    again = env.reset()
    env.set_seed(0)
    torch.testing.assert_close(env.reset()["observation"], again["observation"])


def test_rollouts():
    env = GymEnv("Pendulum-v1")

    def policy(tensordict, env=env):
        tensordict.set("action", env.action_spec.rand())
        return tensordict

    tensordict_rollout = env.rollout(max_steps=20, policy=policy)
    assert tensordict_rollout.batch_size == (20,)
    assert (
        tensordict_rollout.get("observation")[1:]
        == tensordict_rollout.get(("next", "observation"))[:-1]
    ).all()


def test_frame_skip_sums_rewards():
    env = GymEnv("Pendulum-v1", frame_skip=4)
    env.reset()
    plain = GymEnv("Pendulum-v1")
    env.set_seed(1)
    plain.set_seed(1)
    td, td_plain = env.reset(), plain.reset()
    torch.testing.assert_close(td["observation"], td_plain["observation"])
    action = torch.full((1,), 0.5)
    td["action"] = action
    out = env.step(td)
    reward = 0.0
    for _ in range(4):
        td_plain["action"] = action
        td_plain = plain.step(td_plain)
        reward = reward + td_plain["next", "reward"]
        td_plain = step_mdp(td_plain)
    torch.testing.assert_close(out["next", "reward"], reward)
    torch.testing.assert_close(out["next", "observation"], td_plain["observation"])


@needs_pygame
def test_rendering_from_pixels():
    env = GymEnv("Pendulum-v1", from_pixels=True)
    tensordict = env.reset()
    env.close()
    pixels = tensordict.get("pixels")
    assert pixels.ndim == 3 and pixels.shape[-1] == 3 and pixels.dtype == torch.uint8
    assert "observation" in tensordict.keys()  # the state is kept next to the pixels

    env = GymEnv("Pendulum-v1", from_pixels=True, pixels_only=True)
    td = env.reset()
    env.close()
    assert "pixels" in td.keys() and "observation" not in td.keys()


@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ALE needs ale_py")
def test_image_only_atari_env():
    env = GymEnv("ALE/Pong-v5")
    assert env.reset()["pixels"].ndim == 3
    env.close()


def test_dm_control_env_is_not_provided():
    """rl_trainers wraps no DeepMind Control env (docs/porting.md lists it as missing): the
    name imports from ``rl_trainers.envs`` and torchrl's ``envs.libs.dm_control`` (scripts
    choosing their library at run time import it), building one raises, and the tutorial's DeepMind Control sections run on
    gymnasium envs (``test_transforming_envs``)."""
    from rl_trainers.envs import DMControlEnv
    from rl_trainers.envs.libs.dm_control import DMControlEnv as at_torchrls_path

    assert at_torchrls_path is DMControlEnv
    with pytest.raises(NotImplementedError, match="rl_trainers wraps gymnasium environments"):
        DMControlEnv("acrobot", "swingup", from_pixels=True, pixels_only=True)


@needs_pygame
def test_transforming_envs():
    # the tutorial's DMControlEnv("acrobot", "swingup", from_pixels=True, pixels_only=True)
    def make_pixel_env():
        return GymEnv("Pendulum-v1", from_pixels=True, pixels_only=True)

    # ToTensorImage transforms a numpy-like image into a tensor one,
    env = make_pixel_env()
    before = env.reset()["pixels"]
    env = TransformedEnv(env, ToTensorImage())
    after = env.reset()["pixels"]
    env.close()
    assert before.dtype == torch.uint8 and before.shape[-1] == 3
    assert after.dtype == torch.float32 and after.shape == (3, *before.shape[:2])
    assert 0 <= after.min() and after.max() <= 1

    env = make_pixel_env()
    env = TransformedEnv(env, Compose(ToTensorImage(), Resize(32, 32)))
    assert env.reset()["pixels"].shape == (3, 32, 32)

    env.append_transform(GrayScale())
    assert env.reset()["pixels"].shape == (1, 32, 32)
    # As expected, the metadata get updated too:
    assert env.base_env.observation_spec["pixels"].shape[-1] == 3
    assert env.observation_spec["pixels"].shape == (1, 32, 32)
    env.close()


@needs_pygame
def test_concatenating_and_parent_envs():
    # the tutorial's DMControl acrobot has "orientations" and "velocity" entries; Pendulum
    # with pixels has "observation" and "pixels": the CatTensors call is the same
    env = GymEnv("Pendulum-v1")
    env = TransformedEnv(env, CatTensors(in_keys=["observation"], out_key="observation_vector"))
    td = env.reset()
    assert td["observation_vector"].shape == (3,) and "observation" not in td.keys()

    env = GymEnv("Pendulum-v1", from_pixels=True)
    env = TransformedEnv(env)
    env.append_transform(CatTensors(in_keys=["observation"], out_key="observation_vector"))
    env.append_transform(Compose(ToTensorImage(), GrayScale()))
    assert "TransformedEnv" in repr(env)
    grayscale_parent = env.transform[1].parent
    cat_parent = env.transform[0].parent
    # the parent of a transform: the base env plus the transforms before it
    assert "observation_vector" in grayscale_parent.observation_spec.keys()
    assert grayscale_parent.observation_spec["pixels"].shape[-1] == 3
    assert "observation_vector" not in cat_parent.observation_spec.keys()
    env.close()


def env_make():
    return GymEnv("Pendulum-v1")


def test_running_environments_in_parallel():
    parallel_env = ParallelEnv(3, env_make)  # -> creates 3 envs in parallel
    parallel_env.close()
    parallel_env = ParallelEnv(3, [env_make, env_make, env_make])  # similar
    try:
        td = parallel_env.reset()
        assert td.batch_size == (3,)
        rollout = parallel_env.rollout(max_steps=20)
        # the first part of the batch_size is the batch, the second the time frame
        assert rollout.batch_size == (3, 20)
    finally:
        parallel_env.close()
    # seeding a closed env restarts it; the seed chain goes on from the returned seed
    out_seed = parallel_env.set_seed(10)
    assert isinstance(out_seed, int) and out_seed != 10
    first = parallel_env.reset()["observation"]
    assert not torch.equal(first[0], first[1])  # each sub-env has its own seed
    parallel_env.set_seed(10)
    torch.testing.assert_close(parallel_env.reset()["observation"], first)
    parallel_env.close()
    del parallel_env


def env_make_with_attributes():
    env = GymEnv("Pendulum-v1")
    env._env.foo = f"bar_{uuid1()}"
    env._env.get_something = lambda r: r + 1
    return env


def test_accessing_environment_attributes():
    env = env_make_with_attributes()
    # Goes through env._env
    assert env.foo.startswith("bar_")
    assert env.get_something(1) == 2

    parallel_env = ParallelEnv(3, env_make_with_attributes)  # -> creates 3 envs in parallel
    try:
        parallel_env.start()
        foo_list = parallel_env.foo
        foo_list = list(foo_list)
        assert len(foo_list) == 3 and all(f.startswith("bar_") for f in foo_list)
        something = parallel_env.get_something(0)
        assert list(something) == [1, 1, 1]
    finally:
        parallel_env.close()


def env_make_by_name(env_name):
    env = TransformedEnv(
        GymEnv(env_name, from_pixels=True, pixels_only=True),
        Compose(ToTensorImage(), Resize(64, 64)),
    )  # transforms on remote processes
    return env


@needs_pygame
def test_kwargs_and_transforms_for_parallel_environments():
    # the tutorial's [{"env_name": "ALE/AirRaid-v5"}, {"env_name": "ALE/Pong-v5"}]
    parallel_env = ParallelEnv(
        2,
        [env_make_by_name, env_make_by_name],
        [{"env_name": "CartPole-v1"}, {"env_name": "CartPole-v1"}],
    )
    try:
        tensordict = parallel_env.reset()
        assert tensordict.batch_size == (2,)
        assert tensordict[0].get("pixels").shape == (3, 64, 64)
    finally:
        parallel_env.close()
    del parallel_env

    parallel_env = ParallelEnv(
        2,
        [env_make_by_name, env_make_by_name],
        [{"env_name": "CartPole-v1"}, {"env_name": "CartPole-v1"}],
    )
    parallel_env = TransformedEnv(parallel_env, GrayScale())  # transforms on main process
    try:
        tensordict = parallel_env.reset()
        assert tensordict[0].get("pixels").shape == (1, 64, 64)
        assert tensordict[1].get("pixels").permute(1, 2, 0).shape == (64, 64, 1)
    finally:
        parallel_env.close()
    del parallel_env


def test_vecnorm():
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("Pendulum-v1"), VecNorm())
    env.set_seed(0)
    tensordict = env.rollout(max_steps=100)
    mean = tensordict.get("observation").mean(0)  # Approx 0
    std = tensordict.get("observation").std(0)  # Approx 1
    assert mean.abs().max() < 0.6
    assert (std - 1).abs().max() < 0.6
    raw = GymEnv("Pendulum-v1")
    raw.set_seed(0)
    raw_obs = raw.rollout(max_steps=100)["observation"]
    # the normalised observations are closer to (0, 1) than the raw ones (velocity ~ 8)
    assert (std - 1).abs().sum() < (raw_obs.std(0) - 1).abs().sum()


def test_vecnorm_in_parallel_envs_with_env_creator():
    make_env = EnvCreator(lambda: TransformedEnv(GymEnv("CartPole-v1"), VecNorm(decay=1.0)))
    env = ParallelEnv(3, make_env)
    try:
        tensordict = env.rollout(max_steps=5)
        assert tensordict.batch_size == (3, 5)
        obs = tensordict.get("observation").view(-1, 4)
        assert torch.isfinite(obs.mean(0)).all() and torch.isfinite(obs.std(0)).all()
    finally:
        env.close()
    del env
