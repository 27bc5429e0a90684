"""Tuple observations (Blackjack) and the key transforms: CatTensors, Exclude/Select/Rename."""

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import (
    CatTensors,
    Compose,
    ExcludeTransform,
    GymEnv,
    RenameTransform,
    RewardSum,
    SelectTransform,
    TransformedEnv,
    check_env_specs,
)

BLACKJACK_KEYS = ["observation_0", "observation_1", "observation_2"]


def test_tuple_observation_gets_observation_i_keys():
    env = GymEnv("Blackjack-v1")
    assert sorted(env.observation_spec.keys()) == BLACKJACK_KEYS
    assert [env.observation_spec[k].shape[-1] for k in BLACKJACK_KEYS] == [32, 11, 2]
    env.set_seed(0)
    td = env.rollout(3)
    for k in BLACKJACK_KEYS:
        assert td[k].sum(-1).eq(1).all() and td["next", k].sum(-1).eq(1).all()
    check_env_specs(env)


def test_batched_tuple_observation_keeps_final_observation():
    env = GymEnv("Blackjack-v1", num_envs=3)
    env.set_seed(1)
    td = env.rollout(12, break_when_any_done=False)
    assert td.batch_size == (3, 12)
    assert td["next", "done"].any()
    for k in BLACKJACK_KEYS:
        assert td["next", k].sum(-1).eq(1).all()


def test_cattensors_joins_blackjack_observation_for_a_collector():
    env = TransformedEnv(
        GymEnv("Blackjack-v1", num_envs=2), CatTensors(BLACKJACK_KEYS, out_key="observation")
    )
    assert list(env.observation_spec.keys()) == ["observation"]
    assert env.observation_spec["observation"].shape == (2, 45)
    check_env_specs(env)
    collector = SyncDataCollector(env, None, frames_per_batch=8, total_frames=8)
    batch = next(iter(collector))
    collector.shutdown()
    assert batch["observation"].shape == (2, 4, 45)
    assert batch["next", "observation"].sum(-1).eq(3).all()
    assert "observation_0" not in batch.keys(True)


def test_cattensors_documented_example_and_options():
    t = CatTensors(in_keys=["key1", "key2"])
    td = TensorDict({"key1": torch.zeros(1, 1), "key2": torch.ones(1, 1)}, [1])
    out = t(td)
    assert out["observation_vector"].tolist() == [[0.0, 1.0]]
    assert "key1" not in out.keys()
    # sort=False keeps the given order, del_keys=False keeps the inputs
    t = CatTensors(["b", "a"], "v", sort=False, del_keys=False)
    td = TensorDict({"a": torch.zeros(2, 1), "b": torch.ones(2, 2)}, [2])
    assert t(td)["v"][0].tolist() == [1.0, 1.0, 0.0] and "a" in td.keys()
    t = CatTensors(["a", "s"], "v", unsqueeze_if_oor=True)
    td = TensorDict({"a": torch.zeros(2, 2), "s": torch.ones(2)}, [2])
    assert t(td)["v"].shape == (2, 3)


def test_cattensors_without_in_keys_takes_every_observation():
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(RewardSum(), CatTensors()))
    assert list(env.observation_spec.keys()) == ["observation_vector"]
    assert env.observation_spec["observation_vector"].shape == (4,)
    td = env.rollout(3)
    assert td["next", "observation_vector"].shape == (3, 4)


def test_cattensors_unknown_key_names_the_observations():
    with pytest.raises(KeyError, match="observation_0"):
        TransformedEnv(GymEnv("Blackjack-v1"), CatTensors(["observation"], "obs"))


def test_exclude_select_rename_outputs_and_specs():
    base = "Pendulum-v1"
    env = TransformedEnv(
        GymEnv(base),
        Compose(CatTensors(["observation"], "copy", del_keys=False), ExcludeTransform("copy")),
    )
    td = env.rollout(2)
    assert "copy" not in td.keys(True, True) and "copy" not in env.observation_spec.keys()
    check_env_specs(env)

    env = TransformedEnv(
        GymEnv(base),
        Compose(CatTensors(["observation"], "copy", del_keys=False), SelectTransform("copy")),
    )
    td = env.rollout(2)
    assert "observation" not in td.keys() and ("next", "copy") in td.keys(True)
    assert ("next", "reward") in td.keys(True)
    check_env_specs(env)

    env = TransformedEnv(GymEnv(base), RenameTransform(["observation"], ["obs"]))
    td = env.rollout(2)
    assert td["obs"].shape == (2, 3) and "observation" not in td.keys()
    assert list(env.observation_spec.keys()) == ["obs"]
    check_env_specs(env)


def test_done_flags_cannot_be_excluded():
    with pytest.raises(ValueError, match="done"):
        ExcludeTransform("done")
