"""The reward, observation and target transforms at torchrl's module paths, and torchrl's
usage snippet for them."""

import torch
from envs.rollout_checks import specs_hold as _specs_hold  # tests/ is on sys.path

from rl_trainers.envs import (
    Compose,
    DoubleToFloat,
    DTypeCastTransform,
    GymEnv,
    RewardClipping,
    TransformedEnv,
    check_env_specs,
)

NEW = [
    "RewardClipping",
    "BinarizeReward",
    "Crop",
    "CenterCrop",
    "PermuteTransform",
    "FlattenObservation",
    "DTypeCastTransform",
    "TargetReturn",
    "Reward2GoTransform",
    "TrajCounter",
]


def _seeded(env, seed=0):
    env.set_seed(seed)
    torch.manual_seed(seed)
    return env


def _zero_policy(td):
    return td.set("action", torch.zeros(td.batch_size + (1,)))


def test_new_transforms_reachable_from_torchrl_paths():
    import rl_trainers.envs as envs
    import rl_trainers.envs.transforms as transforms
    import rl_trainers.envs.transforms.transforms as module

    for name in NEW:
        cls = getattr(envs, name)
        assert getattr(transforms, name) is cls and getattr(module, name) is cls
        assert name in envs.__all__ and name in transforms.__all__
    assert issubclass(DoubleToFloat, DTypeCastTransform)


def test_torchrl_style_snippet():
    env = TransformedEnv(
        GymEnv("Pendulum-v1"),
        Compose(
            RewardClipping(-1, 1),
            DTypeCastTransform(torch.float32, torch.float64, in_keys=["observation"]),
        ),
    )
    base = _seeded(GymEnv("Pendulum-v1"))
    _seeded(env)
    td = env.rollout(5, policy=_zero_policy)
    ref = base.rollout(5, policy=_zero_policy)
    assert td["observation"].dtype == td["next", "observation"].dtype == torch.float64
    assert torch.equal(td["next", "observation"], ref["next", "observation"].double())
    assert torch.equal(td["next", "reward"], ref["next", "reward"].clamp(-1, 1))
    assert (ref["next", "reward"] < -1).any()  # the clipping did something
    obs_spec = env.observation_spec["observation"]
    assert obs_spec.dtype == torch.float64 and obs_spec.high.tolist() == [1.0, 1.0, 8.0]
    _specs_hold(env, td)
    check_env_specs(env)
