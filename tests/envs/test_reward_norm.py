"""RewardNorm: rewards divided by the running std of the discounted return (SB3's
VecNormalize ``norm_reward``), checked against the same maths done by hand with numpy."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_trainers.algorithms.components import make_env
from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import (
    Compose,
    GymEnv,
    InitTracker,
    RewardNorm,
    RewardSum,
    TransformedEnv,
)


class RampEnv(gym.Env):
    """Reward ``t + 3 * action`` at step ``t`` of the episode (1, 2, ...). Action 1 from step
    2 on terminates; the time limit (``max_episode_steps``) truncates."""

    observation_space = gym.spaces.Box(-100.0, 100.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = float(self.t + 3 * int(action))
        terminated = bool(action) and self.t >= 2
        return np.array([self.t], np.float32), reward, terminated, False, {}


ENV_ID = "rl_trainers_test/RampEnv-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=RampEnv)


def _env(norm: RewardNorm, *more, num_envs: int = 3) -> TransformedEnv:
    env = TransformedEnv(
        GymEnv(ENV_ID, num_envs=num_envs, max_episode_steps=4),
        Compose(RewardSum(), norm, *more),
    )
    env.set_seed(0)
    return env


def _by_hand(reward, done, gamma, clip=10.0, eps=1e-8, reset=True):
    """Normalised rewards [B, T] and the final running returns, from raw rewards and done
    flags [B, T], as SB3's VecNormalize computes them (but with empty initial statistics)."""
    returns = np.zeros(reward.shape[0])
    seen: list[float] = []
    out = np.empty_like(reward)
    for t in range(reward.shape[1]):
        returns = gamma * returns + reward[:, t]
        seen.extend(returns)
        out[:, t] = np.clip(reward[:, t] / np.sqrt(np.var(seen) + eps), -clip, clip)
        if reset:
            returns[done[:, t]] = 0.0
    return out, returns


def _rollout(env, steps=40):
    torch.manual_seed(0)
    td = env.rollout(steps, break_when_any_done=False)
    raw = td["next", "reward"][..., 0].double().numpy()
    done = td["next", "done"][..., 0].numpy()
    return td, raw, done


def test_normalised_reward_is_divided_by_the_running_std_of_discounted_returns():
    norm = RewardNorm(gamma=0.9, out_keys=["norm_reward"])
    td, raw, done = _rollout(_env(norm))
    # the data holds both kinds of episode end
    assert td["next", "terminated"].any() and td["next", "truncated"].any()
    expected, returns = _by_hand(raw, done, gamma=0.9)
    got = td["next", "norm_reward"][..., 0].double().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # the statistics are those of every discounted return seen (B * T of them)
    assert norm.count.item() == raw.size
    np.testing.assert_allclose(norm.returns[:, 0].numpy(), returns, rtol=1e-12)


def test_running_returns_restart_where_an_episode_ended():
    norm = RewardNorm(gamma=0.99, out_keys=["norm_reward"])
    env = _env(norm, num_envs=2)
    td, raw, done = _rollout(env, steps=12)
    with_resets, returns = _by_hand(raw, done, gamma=0.99)
    without, _ = _by_hand(raw, done, gamma=0.99, reset=False)
    got = td["next", "norm_reward"][..., 0].double().numpy()
    np.testing.assert_allclose(got, with_resets, rtol=1e-6)
    assert not np.allclose(got, without, rtol=1e-3)
    np.testing.assert_allclose(norm.returns[:, 0].numpy(), returns, rtol=1e-12)
    # a reset of one sub-env (a collector's reset(index=0)) zeroes its running return only
    norm.returns.fill_(5.0)
    env.reset(TensorDict({"_reset": torch.tensor([[True], [False]])}, batch_size=[2]))
    assert norm.returns[:, 0].tolist() == [0.0, 5.0]
    env.reset()
    assert norm.returns[:, 0].tolist() == [0.0, 0.0]


def test_clip_bounds_the_normalised_reward():
    norm = RewardNorm(gamma=0.9, clip=0.8, out_keys=["norm_reward"])
    td, raw, done = _rollout(_env(norm))
    expected, _ = _by_hand(raw, done, gamma=0.9, clip=0.8)
    got = td["next", "norm_reward"][..., 0].double().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert np.abs(got).max() == pytest.approx(0.8)
    assert (np.abs(got) < 0.79).any()  # not everything is clipped


def test_episode_return_stays_raw_and_only_the_training_reward_is_scaled():
    td, raw, _ = _rollout(_env(RewardNorm(gamma=0.9)))
    reference, raw_ref, _ = _rollout(_env(RewardNorm(gamma=0.9, out_keys=["other"])))
    assert torch.equal(td["next", "episode_reward"], reference["next", "episode_reward"])
    assert not torch.equal(td["next", "reward"], reference["next", "reward"])


def test_whole_batch_path_equals_the_step_by_step_path():
    """Collectors replay the transforms on a whole batch when they all can (GymEnv's array
    path); with InitTracker (step by step only) they step. Both give the same bits."""
    batches, norms = [], []
    for more in ((), (InitTracker(),)):
        norm = RewardNorm(gamma=0.95)
        env = _env(norm, *more)
        torch.manual_seed(1)
        collector = SyncDataCollector(env, None, frames_per_batch=30, total_frames=90)
        batches.append(torch.cat([b["next", "reward"] for b in collector], -2))
        norms.append(norm.state_dict())
        collector.shutdown()
    assert torch.equal(*batches)
    for key in norms[0]:
        assert torch.equal(norms[0][key], norms[1][key]), key


def test_statistics_and_returns_are_state_and_round_trip():
    norm = RewardNorm(gamma=0.9)
    env = _env(norm)
    _rollout(env, steps=10)
    state = {k: v.clone() for k, v in env.state_dict().items()}
    (prefix,) = {k[: -len("returns")] for k in state if k.endswith(".returns")}
    names = {"count", "mean", "var", "returns", "merged_count", "merged_mean", "merged_var"}
    assert {k[len(prefix) :] for k in state if k.startswith(prefix)} == names
    fresh = RewardNorm(gamma=0.9)
    fresh.load_state_dict({name: state[prefix + name] for name in names})
    for name in ("count", "mean", "var", "returns"):
        assert torch.equal(getattr(fresh, name), getattr(norm, name)), name


def test_frozen_copy_keeps_its_statistics():
    norm = RewardNorm(gamma=0.9)
    _rollout(_env(norm), steps=10)
    frozen = norm.frozen_copy()
    env = _env(frozen)
    before = frozen.var.clone()
    _rollout(env, steps=10)
    assert torch.equal(frozen.var, before) and frozen.count == norm.count
    assert not norm.frozen


def test_merging_pending_statistics_of_several_processes_is_exact():
    """What data-parallel training does after every batch: each rank's normaliser reports
    what it saw since the last merge, the reports are summed, and every rank ends with the
    statistics of all ranks' returns, as if one normaliser had seen them all."""
    rng = np.random.default_rng(0)
    shared = rng.normal(3.0, 2.0, (5, 4))
    ranks = [RewardNorm(gamma=0.5), RewardNorm(gamma=0.5)]
    for norm in ranks:  # the same history on both (merged before)
        for row in shared:
            norm._update(torch.from_numpy(row))
        norm.merge_statistics_(torch.zeros(3, dtype=torch.float64))
    own = [rng.normal(-1.0, 5.0, (6, 4)), rng.normal(10.0, 0.5, (3, 4))]
    for norm, data in zip(ranks, own):
        for row in data:
            norm._update(torch.from_numpy(row))
    total = sum(norm.pending_statistics() for norm in ranks)
    for norm in ranks:
        norm.merge_statistics_(total)
    every = np.concatenate([shared.ravel(), *(d.ravel() for d in own)])
    for norm in ranks:
        assert norm.count.item() == every.size
        assert norm.mean.item() == pytest.approx(every.mean(), rel=1e-12)
        assert norm.var.item() == pytest.approx(every.var(), rel=1e-12)
    # averaging the two ranks' statistics would be wrong
    assert ranks[0].var.item() != pytest.approx((shared.var() + every.var()) / 2, rel=1e-3)


def test_make_env_puts_it_after_reward_sum_with_its_discount_and_clip():
    env = make_env(ENV_ID, num_envs=2, normalize_rewards=True, reward_norm_clip=3.0)
    transforms = list(env.transform)
    assert isinstance(transforms[0], RewardSum)
    norm = next(t for t in transforms if isinstance(t, RewardNorm))
    assert transforms.index(norm) > 0
    assert (norm.gamma, norm.clip, norm.eps) == (0.99, 3.0, 1e-8)  # 0.99 without a loss
    env.close()
    env = make_env(ENV_ID, num_envs=2, normalize_rewards=True, reward_norm_gamma=0.8)
    assert next(t for t in env.transform if isinstance(t, RewardNorm)).gamma == 0.8
    env.close()
    env = make_env(ENV_ID, num_envs=2)
    assert not any(isinstance(t, RewardNorm) for t in env.transform)
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gamma": 1.5}, "gamma"),
        ({"clip": 0.0}, "clip"),
        ({"eps": -1.0}, "eps"),
        ({"in_keys": ["reward", "other"]}, "one reward key"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RewardNorm(**kwargs)
