"""DTypeCastTransform/DoubleToFloat, PermuteTransform, CenterCrop, Crop and
FlattenObservation: values, specs against rollouts, inverses, batched envs."""

import pytest
import torch
from rollout_checks import specs_hold
from tensordict import TensorDict

from rl_trainers.envs import (
    Bounded,
    CenterCrop,
    Compose,
    Composite,
    Crop,
    DoubleToFloat,
    DTypeCastTransform,
    FlattenObservation,
    GymEnv,
    PermuteTransform,
    TransformedEnv,
    UnsqueezeTransform,
    check_env_specs,
)


def test_dtype_cast_automatic_keys_and_actions():
    env = TransformedEnv(GymEnv("Pendulum-v1"), DTypeCastTransform(torch.float32, torch.float64))
    t = env.transform
    assert t.in_keys == ["observation", "reward"] and t.in_keys_inv == ["action"]
    assert env.action_spec.dtype == torch.float64 and env.full_reward_spec["reward"].dtype == (
        torch.float64
    )
    seen = []
    step = env.base_env._step
    env.base_env._step = lambda td: (seen.append(td["action"].dtype), step(td))[1]
    td = env.rollout(3)
    assert td["action"].dtype == torch.float64  # the policy side
    assert seen == [torch.float32] * 3  # what the base env received
    assert td["next", "reward"].dtype == torch.float64
    specs_hold(env, td)
    check_env_specs(env)


def test_dtype_cast_explicit_keys_inverse_and_out_keys():
    env = TransformedEnv(
        GymEnv("Pendulum-v1"),
        DTypeCastTransform(
            torch.float32,
            torch.float64,
            in_keys=["observation"],
            out_keys=["obs64"],
            in_keys_inv=["action"],
        ),
    )
    assert env.observation_spec["observation"].dtype == torch.float32
    assert env.observation_spec["obs64"].dtype == torch.float64
    assert env.action_spec.dtype == torch.float64
    td = env.rollout(3, policy=lambda td: td.set("action", torch.zeros(1, dtype=torch.float64)))
    assert torch.equal(td["obs64"], td["observation"].double())
    specs_hold(env, td)
    # in_keys given, in_keys_inv not: no inverse (torchrl's rule)
    t = DTypeCastTransform(torch.float32, torch.float64, in_keys=["observation"])
    assert t.in_keys_inv == []
    with pytest.raises(ValueError, match="out_keys needs in_keys"):
        DTypeCastTransform(torch.float32, torch.float64, out_keys=["x"])


def test_dtype_cast_outside_an_env_and_wrong_spec_dtype():
    td = TensorDict(
        {"a": torch.ones(2, dtype=torch.float64), "b": {"c": torch.ones(2, dtype=torch.float64)}},
        [],
    )
    td.set("i", torch.ones(2, dtype=torch.int64))
    out = DoubleToFloat()(td)  # automatic mode without env: every float64 entry
    assert out["a"].dtype == out["b", "c"].dtype == torch.float32
    assert out["i"].dtype == torch.int64
    only = DTypeCastTransform(torch.float64, torch.float16, in_keys=["a"])
    td = TensorDict({"a": torch.ones(2, dtype=torch.float64), "z": torch.ones(2).double()}, [])
    assert only(td)["a"].dtype == torch.float16 and td["z"].dtype == torch.float64
    with pytest.raises(KeyError, match="keys present"):
        only(TensorDict({"z": torch.ones(2)}, []))
    # a spec of a third dtype under in_keys is an error, as in torchrl
    with pytest.raises(TypeError, match="not dtype_in"):
        TransformedEnv(
            GymEnv("Pendulum-v1"),
            DTypeCastTransform(torch.float64, torch.float16, in_keys=["observation"]),
        )


def test_double_to_float_keeps_its_behaviour():
    # gymnasium float64 Boxes are float32 specs here: explicit keys are left alone
    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat(in_keys=["observation"]))
    td = env.rollout(2)
    assert td["observation"].dtype == torch.float32
    check_env_specs(env)
    t = DoubleToFloat(["observation"], None, ["action"])
    assert t.in_keys_inv == ["action"] and t.out_keys == ["observation"]
    assert t.dtype_in == torch.float64 and t.dtype_out == torch.float32
    # out_keys other than in_keys now work (torchrl's)
    t = DoubleToFloat(in_keys=["x"], out_keys=["y"])
    out = t(TensorDict({"x": torch.ones(3, dtype=torch.float64)}, []))
    assert out["y"].dtype == torch.float32 and out["x"].dtype == torch.float64


@pytest.fixture(scope="module")
def pixel_env():
    env = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True, pixels_only=True),
        Compose(
            PermuteTransform((-1, -3, -2), in_keys=["pixels"], out_keys=["chw"]),
            CenterCrop(84, 100, in_keys=["chw"], out_keys=["centre"]),
            Crop(20, 30, top=10, left=5, in_keys=["chw"], out_keys=["corner"]),
            FlattenObservation(-2, -1, in_keys=["corner"], out_keys=["flat"]),
        ),
    )
    yield env
    env.close()


def test_pixel_transforms_values(pixel_env):
    td = pixel_env.rollout(3)
    raw = td["next", "pixels"]  # [3, 400, 600, 3]
    chw = raw.permute(0, 3, 1, 2)
    assert torch.equal(td["next", "chw"], chw)
    # (400 - 84) / 2 = 158 rows and (600 - 100) / 2 = 250 columns on each side
    assert torch.equal(td["next", "centre"], chw[..., 158:242, 250:350])
    assert torch.equal(td["next", "corner"], chw[..., 10:30, 5:35])
    assert torch.equal(td["next", "flat"], chw[..., 10:30, 5:35].flatten(-2))
    assert torch.equal(td["centre"], td["chw"][..., 158:242, 250:350])  # reset frames too


def test_pixel_transforms_specs(pixel_env):
    spec = pixel_env.observation_spec
    expected = {"chw": (3, 400, 600), "centre": (3, 84, 100), "corner": (3, 20, 30)}
    expected["flat"] = (3, 600)
    for key, shape in expected.items():
        assert spec[key].shape == shape and spec[key].dtype == torch.uint8
        assert isinstance(spec[key], Bounded)
        assert spec[key].low.min() == 0 and spec[key].high.max() == 255
    td = pixel_env.rollout(2)
    specs_hold(pixel_env, td)
    check_env_specs(pixel_env)


def test_crop_pads_with_zeros_and_centre_rounding():
    img = torch.arange(1.0, 13.0).reshape(1, 3, 4)
    out = Crop(3, 3, top=-1, left=2, in_keys=["x"])(TensorDict({"x": img}, []))["x"]
    assert out[0].tolist() == [[0, 0, 0], [3, 4, 0], [7, 8, 0]]
    # centred window larger than the image: the image sits in zeros
    big = CenterCrop(5, 6, in_keys=["x"])(TensorDict({"x": img}, []))["x"]
    assert big.shape == (1, 5, 6) and big.sum() == img.sum()
    assert torch.equal(big[0, 1:4, 1:5], img[0])
    # (4 - 1) / 2 = 1.5 rounds to 2 (torchvision's round)
    odd = CenterCrop(3, 1, in_keys=["x"])(TensorDict({"x": img}, []))["x"]
    assert odd[0].flatten().tolist() == [3.0, 7.0, 11.0]
    assert CenterCrop(4).h == 4 and Crop(4, 2).in_keys == ["pixels"]
    with pytest.raises(ValueError, match="w and h must be >= 1"):
        Crop(0)


def test_permute_inverse_and_action_spec():
    t = PermuteTransform((-1, -3, -2), in_keys=["x"], in_keys_inv=["a"])
    x = torch.randn(5, 2, 3, 4)
    y = t(TensorDict({"x": x}, [5]))["x"]
    assert y.shape == (5, 4, 2, 3) and torch.equal(y, x.permute(0, 3, 1, 2))
    back = t.inv(TensorDict({"a": y}, [5]))["a"]
    assert torch.equal(back, x)
    low = torch.arange(24.0).reshape(2, 3, 4)
    spec = t.transform_action_spec(Composite(a=Bounded(low, low + 1)))["a"]
    assert spec.shape == (4, 2, 3) and torch.equal(spec.low, low.permute(2, 0, 1))
    assert torch.equal(t._inv_apply_transform(spec.low), low)
    with pytest.raises(ValueError, match="permutation"):
        PermuteTransform((-1, -2, 0))


def test_flatten_observation_dims_and_batched_env():
    with pytest.raises(ValueError, match="allow_positive_dim"):
        FlattenObservation(0, -1)
    env = TransformedEnv(
        GymEnv("Pendulum-v1", num_envs=2),
        Compose(
            UnsqueezeTransform(-1, in_keys=["observation"], out_keys=["col"]),
            FlattenObservation(0, 1, in_keys=["col"], out_keys=["flat"], allow_positive_dim=True),
        ),
    )
    assert env.observation_spec["col"].shape == (2, 3, 1)
    assert env.observation_spec["flat"].shape == (2, 3)
    td = env.rollout(3)
    assert td["flat"].shape == (2, 3, 3) and torch.equal(td["flat"], td["observation"])
    specs_hold(env, td)
    # forward on a [B, T] batch: positive dims count after its batch dims
    data = TensorDict({"pixels": torch.randn(4, 5, 2, 3, 6)}, [4, 5])
    out = FlattenObservation(0, 1, allow_positive_dim=True)(data)
    assert out["pixels"].shape == (4, 5, 6, 6)
