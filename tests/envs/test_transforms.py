"""Transforms: spec updates, values against hand computation, state dicts, partial resets."""

import pytest
import torch
from tensordict import TensorDict

from rl_trainers import fast
from rl_trainers.envs import (
    CatFrames,
    Compose,
    DoubleToFloat,
    FrameSkipTransform,
    GrayScale,
    GymEnv,
    InitTracker,
    NoopResetEnv,
    ObservationNorm,
    Resize,
    RewardScaling,
    RewardSum,
    StepCounter,
    ToTensorImage,
    TransformedEnv,
    VecNorm,
    check_env_specs,
)


@pytest.fixture(scope="module")
def pixel_env():
    env = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        Compose(ToTensorImage(), GrayScale(), Resize(32, 32), CatFrames(4, dim=-3)),
    )
    yield env
    env.close()


def test_pixel_transforms_shapes_follow_specs(pixel_env):
    spec = pixel_env.observation_spec["pixels"]
    assert spec.shape == (4, 32, 32) and spec.dtype == torch.float32
    td = pixel_env.rollout(3)
    assert td["pixels"].shape == (3, 4, 32, 32)
    assert td["next", "pixels"].shape == (3, 4, 32, 32)
    assert 0.0 <= td["pixels"].min() and td["pixels"].max() <= 1.0
    # frame stacking: the newest frame of step t is the second newest of step t+1
    assert torch.equal(td["next", "pixels"][0, 3], td["next", "pixels"][1, 2])
    # on reset all four frames are the reset frame
    assert torch.equal(td["pixels"][0, 0], td["pixels"][0, 3])
    check_env_specs(pixel_env)


def test_to_tensor_image_and_grayscale_values():
    img = torch.randint(0, 256, (5, 6, 3), dtype=torch.uint8)
    td = TensorDict({"pixels": img}, [])
    out = ToTensorImage()(td.clone())["pixels"]
    assert out.shape == (3, 5, 6) and torch.allclose(out[1], img[..., 1].float() / 255)
    gray = GrayScale()(TensorDict({"pixels": out}, []))["pixels"]
    expected = 0.2989 * out[0] + 0.587 * out[1] + 0.114 * out[2]
    assert gray.shape == (1, 5, 6) and torch.allclose(gray[0], expected, atol=1e-6)


def test_observation_norm_init_stats_keep_dims(pixel_env):
    env = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        Compose(
            ToTensorImage(),
            Resize(16, 16),
            CatFrames(2, dim=-3),
            ObservationNorm(in_keys=["pixels"], standard_normal=True),
        ),
    )
    norm = env.transform[-1]
    norm.init_stats(num_iter=12, reduce_dim=[-1, -2, -4], cat_dim=0, keep_dims=(-1, -2))
    assert norm.loc.shape == (6, 1, 1) and norm.scale.shape == (6, 1, 1)
    sd = norm.state_dict()
    # a new env built from the state dict normalises identically
    env2 = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        Compose(
            ToTensorImage(),
            Resize(16, 16),
            CatFrames(2, dim=-3),
            ObservationNorm(in_keys=["pixels"], **sd),
        ),
    )
    env.set_seed(0)
    env2.set_seed(0)
    assert torch.allclose(env.reset()["pixels"], env2.reset()["pixels"])


def test_observation_norm_vector_stats():
    env = TransformedEnv(GymEnv("Pendulum-v1"), ObservationNorm(standard_normal=True))
    env.set_seed(0)
    env.transform.init_stats(200)
    assert env.transform.loc.shape == (3,)
    assert (env.transform.scale > 0).all()
    env.set_seed(1)
    td = env.rollout(5, policy=lambda t: t.set("action", torch.zeros(1)))
    base = GymEnv("Pendulum-v1")
    base.set_seed(1)
    raw = base.rollout(5, policy=lambda t: t.set("action", torch.zeros(1)))
    expected = (raw["next", "observation"] - env.transform.loc) / env.transform.scale
    assert torch.allclose(td["next", "observation"], expected, atol=1e-5)
    with pytest.raises(RuntimeError, match="init_stats"):
        ObservationNorm()(TensorDict({"observation": torch.zeros(3)}, []))


def test_vecnorm_statistics_state_dict_and_freeze():
    env = TransformedEnv(GymEnv("Pendulum-v1", num_envs=2), VecNorm(decay=0.99))
    env.set_seed(0)
    env.rollout(50)
    sd = env.state_dict()
    assert sd["transform.count_0"] > 0 and sd["transform.sum_0"].shape == (3,)
    other = TransformedEnv(GymEnv("Pendulum-v1", num_envs=2), VecNorm(decay=0.99))
    other.load_state_dict(sd)
    for k, v in sd.items():
        assert torch.equal(other.state_dict()[k], v)
    frozen = env.transform.frozen_copy()
    before = frozen.state_dict()
    frozen(TensorDict({"observation": torch.randn(2, 3)}, [2]))
    assert all(torch.equal(before[k], v) for k, v in frozen.state_dict().items())
    assert not env.transform.frozen


def test_vecnorm_matches_hand_computation():
    t = VecNorm(in_keys=["obs"], decay=1.0, eps=1e-8)
    data = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    out = t(TensorDict({"obs": data}, [2]))["obs"]
    mean = data.mean(0)
    std = data.var(0, unbiased=False).sqrt()
    assert torch.allclose(out, (data - mean) / std, atol=1e-5)


def test_vecnorm_without_decay_keeps_the_exact_statistics_of_every_observation():
    """decay=1 (the app's normaliser): after many steps of observations far from zero the
    mean and std are those of all observations seen (float64 sums, no drift), and the
    normalised values are clipped to [-clip, clip]."""
    gen = torch.Generator().manual_seed(0)
    steps = [torch.randn(8, 3, generator=gen) * 0.1 + 100.0 for _ in range(2000)]
    steps.append(torch.tensor([[100.0, 100.0, 1e5]]).expand(8, 3))  # an outlier
    t = VecNorm(in_keys=["obs"], decay=1.0, eps=1e-8, clip=5.0)
    for x in steps:
        out = t(TensorDict({"obs": x}, [8]))["obs"]
    seen = torch.cat(steps).double()
    mean, std = t.mean_std()
    assert mean.dtype == std.dtype == torch.float64
    torch.testing.assert_close(mean, seen.mean(0), rtol=1e-12, atol=0)
    torch.testing.assert_close(std, seen.std(0, unbiased=False), rtol=1e-6, atol=0)
    assert out.dtype == torch.float32
    assert out[:, 2].eq(5.0).all()  # the outlier is clipped
    with pytest.raises(ValueError, match="clip must be positive"):
        VecNorm(clip=0.0)


def test_vecnorm_loads_float32_statistics():
    """A state dict with float32 statistics (as saved before they became float64) loads."""
    t = VecNorm(in_keys=["obs"], decay=1.0)
    state = {"sum_0": torch.ones(2), "ssq_0": torch.full((2,), 5.0), "count_0": torch.tensor(1.0)}
    t.load_state_dict(state)
    assert t.sum_0.dtype == torch.float64
    out = t.freeze()(TensorDict({"obs": torch.tensor([[3.0, 1.0]])}, [1]))["obs"]
    assert torch.allclose(out, torch.tensor([[1.0, 0.0]]))


def test_reward_sum_and_scaling_values():
    env = TransformedEnv(
        GymEnv("CartPole-v1"), Compose(RewardScaling(loc=0.5, scale=0.1), RewardSum())
    )
    env.set_seed(0)
    td = env.rollout(8)
    assert torch.allclose(td["next", "reward"], torch.full_like(td["next", "reward"], 0.6))
    expected = torch.cumsum(td["next", "reward"], 0)
    assert torch.allclose(td["next", "episode_reward"], expected)
    assert "episode_reward" in env.observation_spec.keys()


def test_step_counter_truncates_and_resets_per_sub_env():
    env = TransformedEnv(
        GymEnv("Pendulum-v1", num_envs=2), Compose(StepCounter(4), RewardSum(), InitTracker())
    )
    td = env.rollout(10, break_when_any_done=False)
    counts = td["next", "step_count"][0].flatten().tolist()
    assert counts == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    trunc = td["next", "truncated"][0].flatten()
    assert trunc.tolist() == [c == 4 for c in counts]
    assert not td["next", "terminated"].any()
    assert td["is_init"][0].flatten().tolist() == [c == 1 for c in counts]
    ep = td["next", "episode_reward"][0, 4, 0]
    assert torch.isclose(ep, td["next", "reward"][0, 4, 0])  # return restarted at reset


def test_double_to_float_frame_skip_noop():
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(DoubleToFloat(), FrameSkipTransform(3)))
    env.set_seed(0)
    base = GymEnv("Pendulum-v1")
    base.set_seed(0)
    td = env.rollout(2, policy=lambda t: t.set("action", torch.zeros(1)))
    ref = base.rollout(6, policy=lambda t: t.set("action", torch.zeros(1)))
    assert torch.allclose(td["next", "reward"][0], ref["next", "reward"][:3].sum(0))
    assert torch.allclose(td["next", "observation"][1], ref["next", "observation"][5])
    noop = TransformedEnv(GymEnv("Pendulum-v1"), NoopResetEnv(noops=5))
    assert noop.reset()["observation"].shape == (3,)


def test_transform_missing_key_error():
    with pytest.raises(KeyError, match="keys present"):
        Resize(8, 8, in_keys=["image"])(TensorDict({"pixels": torch.zeros(3, 4, 4)}, []))


def test_step_counter_update_done_false_keeps_done():
    # torchrl: StepCounter(max_steps, update_done=False) sets truncated but leaves done alone
    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=3, update_done=False))
    td = env.rollout(5, break_when_any_done=False)
    # no done, so no reset: the count goes on and stays past max_steps, as in torchrl
    assert td["next", "truncated"].flatten().tolist() == [False, False, True, True, True]
    assert not td["next", "done"].any()
    env.close()


def test_reward_sum_accepts_torchrl_reset_keys():
    env = TransformedEnv(GymEnv("Pendulum-v1"), RewardSum(reset_keys=["_reset"]))
    td = env.rollout(3)
    assert torch.allclose(td["next", "episode_reward"], td["next", "reward"].cumsum(0))
    env.close()
    with pytest.raises(ValueError, match="reset_keys"):
        RewardSum(reset_keys=[("agents", "_reset")])


def test_catframes_on_buffer_samples_matches_the_env():
    """torchrl's replay-buffer tutorial: stacking frames offline gives the env's stacks."""
    from tensordict import TensorDict

    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
    from rl_trainers.envs import UnsqueezeTransform

    env = TransformedEnv(
        GymEnv("CartPole-v1"),
        Compose(
            UnsqueezeTransform(-2, in_keys=["observation"], out_keys=["obs_t"]),
            CatFrames(N=3, dim=-2, in_keys=["obs_t"]),
        ),
    )
    assert env.observation_spec["obs_t"].shape == (3, 4)
    env.set_seed(0)
    collector = SyncDataCollector(env, None, frames_per_batch=40, total_frames=40)
    data = next(iter(collector))
    assert data["next", "done"].any()  # an episode boundary inside the batch
    offline = CatFrames(N=3, dim=-2, in_keys=["obs_t", ("next", "obs_t")])
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), transform=offline, batch_size=2)
    stored = data.exclude("obs_t", ("next", "obs_t"))
    stored.set("obs_t", data["observation"].unsqueeze(-2))
    stored.set(("next", "obs_t"), data["next", "observation"].unsqueeze(-2))
    rb.add(stored)
    sample = rb.sample()[0]
    assert torch.equal(sample["obs_t"], data["obs_t"])
    assert torch.equal(sample["next", "obs_t"], data["next", "obs_t"])
    # channel-wise stacking (dim inside the frame) and zero padding
    td = TensorDict({"x": torch.arange(4.0).reshape(4, 1)}, [4])
    out = CatFrames(N=2, dim=-1, in_keys=["x"], out_keys=["y"], padding="constant")(td)
    assert out["y"].tolist() == [[0.0, 0.0], [0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]


@pytest.mark.parametrize("shape", [(4, 17), (1, 3), (5,)], ids=["batch4", "batch1", "unbatched"])
@pytest.mark.parametrize("frozen_after", [None, 20])
@pytest.mark.parametrize(
    "kwargs", [{}, {"decay": 1.0, "eps": 1e-8, "clip": 1.5}], ids=["decayed", "exact_clipped"]
)
def test_vecnorm_host_maths_equal_the_tensor_maths(shape, frozen_after, kwargs, monkeypatch):
    """VecNorm computes on the host (numpy views of its buffers) for CPU tensors; the
    tensor ops it falls back to elsewhere give the same outputs and statistics, bit for bit."""
    from rl_trainers.envs import VecNorm

    gen = torch.Generator().manual_seed(0)
    steps = [torch.randn(*shape, generator=gen) * 3 + 1 for _ in range(60)]
    results = {}
    for host in (True, False):
        monkeypatch.setattr(fast, "VECNORM_ON_HOST", host)
        norm = VecNorm(in_keys=["observation"], **kwargs)
        outs = []
        for i, x in enumerate(steps):
            if i == frozen_after:
                norm.freeze()
            td = TensorDict({"observation": x.clone()}, batch_size=shape[:-1])
            outs.append(norm(td)["observation"])
        results[host] = torch.stack(outs), dict(norm.named_buffers())
    (host_out, host_stats), (torch_out, torch_stats) = results[True], results[False]
    assert host_out.dtype == torch_out.dtype == torch.float32
    assert torch.equal(host_out, torch_out)
    assert host_stats.keys() == torch_stats.keys()
    for key in host_stats:
        assert torch.equal(host_stats[key], torch_stats[key]), key
