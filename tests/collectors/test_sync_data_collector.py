"""SyncDataCollector: shapes, trajectory ids, random frames, autoreset, split, state."""

from __future__ import annotations

import pytest
import torch
from collector_fake_env import CountingEnv
from tensordict import TensorDict

from rl_trainers import fast
from rl_trainers.collectors import SyncDataCollector, split_trajectories
from rl_trainers.data import LazyTensorStorage, MultiStep, TensorDictReplayBuffer


def obs(batch, *key):
    return batch[(*key, "observation")].squeeze(-1) if key else batch["observation"].squeeze(-1)


def test_batch_shape_and_frame_count():
    collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=8, total_frames=24)
    batches = list(collector)
    assert len(batches) == 3 == len(collector)
    assert all(b.batch_size == torch.Size([2, 4]) for b in batches)
    assert collector.frames_collected == 24


def test_frames_per_batch_rounded_up_to_whole_env_steps_as_torchrl():
    with pytest.warns(UserWarning, match=r"frames_per_batch \(7\) is not exactly divisible"):
        collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=7, total_frames=16)
    batches = list(collector)
    assert [b.batch_size for b in batches] == [torch.Size([2, 4])] * 2
    assert collector.frames_per_batch == 8 and collector.requested_frames_per_batch == 7
    assert collector.frames_collected == 16


def test_random_policy_writes_actions_from_the_spec():
    from rl_trainers.collectors import RandomPolicy
    from rl_trainers.envs import GymEnv

    env = GymEnv("Pendulum-v1")
    collector = SyncDataCollector(
        env, RandomPolicy(env.action_spec), frames_per_batch=10, total_frames=10
    )
    batch = next(iter(collector))
    assert batch["action"].shape == (10, 1)
    assert batch["action"].abs().max() <= 2.0 and batch["action"].std() > 0


def test_autoreset_does_not_mix_episodes_and_traj_ids_carry_over():
    collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=8, total_frames=16)
    b1, b2 = list(collector)
    # env 0 ends an episode at its third step: next obs is the final one (1003), the
    # following step's obs is the reset one (2000) with a new trajectory id
    assert obs(b1)[0].tolist() == [1000, 1001, 1002, 2000]
    assert obs(b1, "next")[0].tolist() == [1001, 1002, 1003, 2001]
    assert b1["next", "done"].squeeze(-1)[0].tolist() == [False, False, True, False]
    ids1, ids2 = b1["collector", "traj_ids"], b2["collector", "traj_ids"]
    assert ids1[0, 2] != ids1[0, 3]
    assert ids1[0, 0] != ids1[1, 0]
    # the env is not reset between batches: the episode continues with the same id
    assert obs(b2)[1, 0].item() == 1004
    assert ids2[1, 0] == ids1[1, -1]
    assert ids2[0, 0] == ids1[0, -1]
    # ids are unique per trajectory within the run
    all_ids = torch.cat([ids1, ids2], 1)
    episode = torch.cat([obs(b1), obs(b2)], 1) // 1000
    for env in range(2):
        for tid in all_ids[env].unique():
            assert episode[env][all_ids[env] == tid].unique().numel() == 1
    assert not set(all_ids[0].tolist()) & set(all_ids[1].tolist())


def test_init_random_frames_are_yielded():
    calls = []

    def policy(td):
        calls.append(1)
        td.set("action", torch.full((*td.batch_size, 1), 7.0))
        return td

    collector = SyncDataCollector(
        CountingEnv((3, 5)), policy, frames_per_batch=8, total_frames=32, init_random_frames=16
    )
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    batches = []
    for b in collector:
        rb.extend(b.reshape(-1))  # transitions (a [2, 4] batch alone would be 2 trajectories)
        batches.append(b)
    assert len(rb) == 32
    assert all((b["action"] != 7).all() for b in batches[:2])
    assert all((b["action"] == 7).all() for b in batches[2:])
    assert len(calls) == 8  # 2 policy batches of T=4 steps


def test_unbatched_env_yields_time_only():
    collector = SyncDataCollector(
        CountingEnv((3,), batched=False), frames_per_batch=5, total_frames=5
    )
    (batch,) = list(collector)
    assert batch.batch_size == torch.Size([5])
    assert obs(batch).tolist() == [1000, 1001, 1002, 2000, 2001]
    ids = batch["collector", "traj_ids"]
    assert ids[0] == ids[2] != ids[3]


def test_split_trajs():
    collector = SyncDataCollector(
        CountingEnv((3, 5)), frames_per_batch=12, total_frames=12, split_trajs=True
    )
    (batch,) = list(collector)
    # env 0: [1000..1002], [2000..2002] ; env 1: [1000..1004], [2000]
    assert batch.batch_size == torch.Size([4, 5])
    mask = batch["collector", "mask"]
    assert mask.sum(1).tolist() == [3, 3, 5, 1]
    assert obs(batch)[2].tolist() == [1000, 1001, 1002, 1003, 1004]
    assert obs(batch)[3].tolist() == [2000, 0, 0, 0, 0]
    assert (batch["collector", "traj_ids"][mask].unique().numel()) == 4


def test_split_trajectories_direct():
    ids = torch.tensor([[0, 0, 1], [2, 3, 3]])
    td = TensorDict({"x": torch.arange(6).reshape(2, 3), "collector": {"traj_ids": ids}}, [2, 3])
    out = split_trajectories(td)
    assert out["x"].tolist() == [[0, 1], [2, 0], [3, 0], [4, 5]]


def test_postproc_multistep_and_truncation_flags():
    collector = SyncDataCollector(
        CountingEnv((3,), truncate=True),
        frames_per_batch=4,
        total_frames=4,
        postproc=MultiStep(gamma=0.5, n_steps=2),
    )
    (batch,) = list(collector)
    assert batch["next", "reward"].squeeze(-1)[0].tolist() == [1.5, 1.5, 1.0, 1.0]
    assert batch["steps_to_next_obs"].squeeze(-1)[0].tolist() == [2, 2, 1, 1]
    assert batch["next", "truncated"].squeeze(-1)[0].tolist() == [False, True, True, False]
    assert not batch["next", "terminated"].any()


def test_reset_at_each_iter_and_seed():
    env = CountingEnv((10,))
    collector = SyncDataCollector(env, frames_per_batch=2, total_frames=4, reset_at_each_iter=True)
    assert collector.set_seed(3) == 4 and env.seed == 3
    b1, b2 = list(collector)
    assert obs(b1)[0].tolist() == [1000, 1001]
    assert obs(b2)[0].tolist() == [2000, 2001]


def test_state_dict_resume_continues_counters():
    collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=8, total_frames=32)
    it = iter(collector)
    next(it)
    b2 = next(it)
    state = collector.state_dict()
    assert state["frames_collected"] == 16
    resumed = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=8, total_frames=32)
    resumed.load_state_dict(state)
    assert resumed.env.total_steps == collector.env.total_steps
    batches = list(resumed)
    assert len(batches) == 2  # 16 of 32 frames remain
    new_ids = batches[0]["collector", "traj_ids"]
    assert new_ids.min() > b2["collector", "traj_ids"].max()


def test_exploration_type_and_no_grad():
    from tensordict.nn import InteractionType, interaction_type

    seen = []
    lin = torch.nn.Linear(1, 1)

    def policy(td):
        seen.append((interaction_type(), torch.is_grad_enabled()))
        td.set("action", lin(td["observation"]))
        return td

    collector = SyncDataCollector(
        CountingEnv((3,)),
        policy,
        frames_per_batch=2,
        total_frames=2,
        exploration_type=InteractionType.DETERMINISTIC,
    )
    (batch,) = list(collector)
    assert seen[0] == (InteractionType.DETERMINISTIC, False)
    assert not batch["action"].requires_grad


def test_async_collection_into_buffer():
    # the collector extends the buffer with [2, 4] batches: ndim=2 stores their transitions
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1000, ndim=2))
    collector = SyncDataCollector(
        CountingEnv((3, 5)), frames_per_batch=8, total_frames=80, replay_buffer=rb
    )
    collector.start()
    collector._thread.join(20)
    assert collector.frames_collected == 80
    assert len(rb) == 80
    collector.async_shutdown()


def test_real_gym_env_batches():
    gym_env = pytest.importorskip("rl_trainers.envs").GymEnv
    collector = SyncDataCollector(
        lambda: gym_env("CartPole-v1", num_envs=4), frames_per_batch=64, total_frames=128
    )
    batches = list(collector)
    assert batches[0].batch_size == torch.Size([4, 16])
    b = batches[0]
    done = b["next", "done"].squeeze(-1)
    # after a done step, the next step starts from a reset observation (small values)
    for env, t in zip(*torch.nonzero(done[:, :-1], as_tuple=True)):
        assert b["collector", "traj_ids"][env, t] != b["collector", "traj_ids"][env, t + 1]
        assert not torch.equal(b["next", "observation"][env, t], b["observation"][env, t + 1])
    collector.shutdown()


def test_stack_steps_equals_torch_stack():
    from rl_trainers.collectors.collectors import stack_steps
    from rl_trainers.envs import GymEnv

    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(0)
    td, steps = env.reset(), []
    for _ in range(5):
        td.set("action", env.action_spec.rand())
        transition, td = env.step_and_maybe_reset(td)
        steps.append(transition)
    ours, theirs = stack_steps(steps, 1), torch.stack(steps, 1)
    assert ours.batch_size == theirs.batch_size == (3, 5)
    assert ours["next"].batch_size == (3, 5)
    assert set(ours.keys(True, True)) == set(theirs.keys(True, True))
    assert (ours == theirs).all()
    steps[2] = steps[2].exclude("action")
    with pytest.raises((RuntimeError, KeyError, ValueError)):
        stack_steps(steps, 1)


def _trajectory_ids_step_by_step(done, current, counter):
    """Reference: number new episodes at each step, sub-env by sub-env."""
    ids = []
    for t in range(done.shape[1]):
        ids.append(current.clone())
        ended = done[:, t]
        n = int(ended.sum())
        current = current.clone()
        current[ended] = torch.arange(counter, counter + n)
        counter += n
    return torch.stack(ids, 1), current, counter


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("steps", [9, 1])
def test_trajectory_ids_match_step_by_step_numbering(seed, steps):
    from rl_trainers.collectors.collectors import trajectory_ids

    gen = torch.Generator().manual_seed(seed)
    done = torch.rand(6, steps, generator=gen) < 0.3
    done[0] = False  # a sub-env whose episode spans the whole batch
    done[1, -1] = True  # one ending on the last step
    current = torch.tensor([3, 7, 8, 10, 11, 12])
    for flags in (done, torch.zeros_like(done)):  # with and without episode ends
        expected = _trajectory_ids_step_by_step(flags, current, 20)
        ids, after, counter = trajectory_ids(flags, current, 20)
        assert torch.equal(ids, expected[0])
        assert torch.equal(after, expected[1])
        assert counter == expected[2]


def _categorical_policy(env):
    from tensordict.nn import TensorDictModule

    from rl_trainers.modules import MLP, ProbabilisticActor
    from rl_trainers.modules.distributions import OneHotCategorical

    torch.manual_seed(0)
    net = MLP(in_features=4, out_features=2, num_cells=[16])
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["logits"])
    return ProbabilisticActor(
        module,
        in_keys=["logits"],
        spec=env.action_spec,
        distribution_class=OneHotCategorical,
        distribution_kwargs={"dtype": torch.bool},
        return_log_prob=True,
    )


def _collect(make_env, policy_fn, array_path: bool, monkeypatch, batches: int = 4):
    from rl_trainers.envs import GymWrapper

    with monkeypatch.context() as patch:
        if not array_path:  # the step-by-step loop over env.step_and_maybe_reset
            patch.setattr(GymWrapper, "rollout_batch", lambda *args: None)
        env = make_env()
        env.set_seed(3)
        policy = None if policy_fn is None else policy_fn(env)
        torch.manual_seed(1)
        collector = SyncDataCollector(
            env, policy, frames_per_batch=8 * 40, total_frames=8 * 40 * batches
        )
        out = list(collector)
        last_input = collector._td.clone()
        collector.shutdown()
    return out, last_input


def _assert_same_collection(a, b):
    """Two ``_collect`` results hold the same batches and next input, bit for bit."""
    (batches_a, next_a), (batches_b, next_b) = a, b
    for x, y in zip(batches_a, batches_b, strict=True):
        assert set(x.keys(True, True)) == set(y.keys(True, True))
        for key in x.keys(True, True):
            assert x.get(key).dtype == y.get(key).dtype, key
            assert torch.equal(x.get(key), y.get(key)), key
    assert set(next_a.keys()) == set(next_b.keys())
    for key in next_a.keys():
        assert torch.equal(next_a.get(key), next_b.get(key)), key


@pytest.mark.parametrize(
    ("env_name", "kwargs", "with_policy", "reward_sum"),
    [
        ("CartPole-v1", {}, False, False),
        ("CartPole-v1", {}, True, False),
        ("CartPole-v1", {"categorical_action_encoding": True}, False, False),
        ("Pendulum-v1", {"max_episode_steps": 30}, False, False),
        ("CartPole-v1", {}, False, True),
        ("CartPole-v1", {}, True, True),
        ("Pendulum-v1", {"max_episode_steps": 30}, False, True),
    ],
    ids=[
        "cartpole_random",
        "cartpole_policy",
        "cartpole_index_actions",
        "pendulum_random",
        "cartpole_reward_sum_random",
        "cartpole_reward_sum_policy",
        "pendulum_reward_sum_random",
    ],
)
def test_array_rollout_equals_step_by_step_loop(
    env_name, kwargs, with_policy, reward_sum, monkeypatch
):
    """GymWrapper.rollout_batch (the collector's fast path; with RewardSum replayed on the
    batch by TransformedEnv.rollout_batch) gives exactly the batches, and the next policy
    input, of the loop over step_and_maybe_reset: episodes end inside these batches
    (CartPole falls, Pendulum is cut at 30 steps), so autoresets are covered."""
    from rl_trainers.envs import GymEnv, RewardSum, TransformedEnv

    def make_env():
        env = GymEnv(env_name, num_envs=8, **kwargs)
        return TransformedEnv(env, RewardSum()) if reward_sum else env

    policy_fn = _categorical_policy if with_policy else None
    fast_run, fast_run_next = _collect(make_env, policy_fn, True, monkeypatch)
    slow, slow_next = _collect(make_env, policy_fn, False, monkeypatch)
    assert any(b["next", "done"].any() for b in fast_run)
    assert any(b["next", "truncated"].any() for b in fast_run) or env_name == "CartPole-v1"
    _assert_same_collection((fast_run, fast_run_next), (slow, slow_next))


def test_transformed_env_keeps_its_transforms():
    """A TransformedEnv forwards attributes to its base env; the collector must not take the
    base env's array path and skip transforms that cannot follow it on whole batches."""
    from rl_trainers.envs import GymEnv, RewardScaling, TransformedEnv

    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=4), RewardScaling(loc=0.0, scale=3.0))
    assert env.rollout_batch(env.reset(), 10) is None
    batch = SyncDataCollector(env, frames_per_batch=40, total_frames=40).next()
    assert (batch["next", "reward"] == 3.0).all()


def test_max_frames_per_traj_truncates_trajectories():
    from rl_trainers.envs import GymEnv

    collector = SyncDataCollector(
        lambda: GymEnv("Pendulum-v1"), frames_per_batch=12, total_frames=12, max_frames_per_traj=4
    )
    (batch,) = list(collector)
    assert batch["next", "truncated"].flatten().tolist() == [False, False, False, True] * 3
    assert batch["next", "done"].flatten().tolist() == [False, False, False, True] * 3
    assert batch["collector", "traj_ids"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    collector.shutdown()


def test_create_env_kwargs_and_env_class():
    from rl_trainers.envs import GymEnv

    collector = SyncDataCollector(
        GymEnv,
        create_env_kwargs={"env_name": "Pendulum-v1"},
        frames_per_batch=4,
        total_frames=4,
    )
    assert [b.batch_size for b in collector] == [torch.Size([4])]
    collector.shutdown()


def test_reset_starts_new_trajectories():
    collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=4, total_frames=-1)
    first = collector.next()
    collector.reset()
    second = collector.next()
    # a reset restarts every sub-env: observations start at a new episode's step 0
    assert obs(second)[:, 0].remainder(1000).tolist() == [0, 0]
    assert set(second["collector", "traj_ids"][:, 0].tolist()).isdisjoint(
        first["collector", "traj_ids"].flatten().tolist()
    )


@pytest.mark.parametrize("index", [1, [1], slice(1, 2), torch.tensor([False, True])])
def test_reset_index_restarts_only_those_sub_envs(index):
    collector = SyncDataCollector(CountingEnv((7, 9)), frames_per_batch=4, total_frames=-1)
    first = collector.next()
    assert obs(first)[:, -1].tolist() == [1001, 1001]
    collector.reset(index=index)
    second = collector.next()
    # sub-env 1 starts a new episode at step 0; sub-env 0 carries on where it was
    assert obs(second)[:, 0].tolist() == [1002, 2000]
    ids1, ids2 = first["collector", "traj_ids"], second["collector", "traj_ids"]
    assert ids2[0, 0] == ids1[0, -1]
    assert ids2[1, 0] not in ids1.flatten().tolist() and ids2[1, 0] != ids2[0, 0]


def test_reset_index_on_a_gymnasium_vector_env():
    from rl_trainers.envs import GymEnv

    env = GymEnv("CartPole-v1", num_envs=3)
    collector = SyncDataCollector(env, frames_per_batch=6, total_frames=-1)
    collector.set_seed(0)
    collector.next()
    before = collector._td["observation"].clone()
    collector.reset(index=[0, 2])
    after = collector._td["observation"]
    assert torch.equal(after[1], before[1])  # sub-env 1 was not reset
    # CartPole's reset draws every state variable in [-0.05, 0.05]
    assert after[[0, 2]].abs().max() <= 0.05 and not torch.equal(after[0], before[0])
    assert collector.next().batch_size == torch.Size([3, 2])
    collector.shutdown()


def test_reset_index_errors_name_the_problem():
    collector = SyncDataCollector(CountingEnv((3, 5)), frames_per_batch=4, total_frames=-1)
    collector.next()
    with pytest.raises(IndexError, match=r"reset\(index=5\) does not index the env's batch \(2,\)"):
        collector.reset(index=5)
    single = SyncDataCollector(
        CountingEnv((3,), batched=False), frames_per_batch=2, total_frames=-1
    )
    single.next()
    with pytest.raises(ValueError, match="needs a batched env"):
        single.reset(index=0)


def test_update_policy_weights_with_weights_loads_them():
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule

    layer = torch.nn.Linear(1, 1)
    policy = TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])
    collector = SyncDataCollector(CountingEnv((3, 5)), policy, frames_per_batch=4)
    weights = TensorDict.from_module(policy).clone().zero_()
    weights["module", "bias"] += 2.0
    collector.update_policy_weights_(weights)
    assert layer.bias.item() == 2.0 and layer.weight.item() == 0.0
    assert (next(iter(collector))["action"] == 2.0).all()


def _tanh_normal_policy(env):
    from rl_trainers.modules import make_actor

    torch.manual_seed(0)
    return make_actor(env.observation_spec, env.action_spec, num_cells=[16])


def _normal_policy(env):
    from rl_trainers.modules import make_actor

    torch.manual_seed(0)
    return make_actor(
        env.observation_spec,
        env.action_spec,
        num_cells=[16],
        state_dependent_scale=False,
        log_std_init=0.5,  # samples past Pendulum's bounds: the env clips them
        squash=False,
    )


@pytest.mark.parametrize("num_envs", [1, 4])
@pytest.mark.parametrize("lean", [True, False], ids=["lean_acting", "policy_forward"])
@pytest.mark.parametrize("policy_fn", [_tanh_normal_policy, _normal_policy], ids=["tanh", "normal"])
def test_array_rollout_with_normalisers_equals_step_by_step_loop(
    num_envs, lean, policy_fn, monkeypatch
):
    """With the running observation and reward normalisers (VecNorm per step inside the
    array loop, RewardNorm and RewardSum replayed on the batch) and a Gaussian policy
    (TanhNormal, or SB3's unsquashed one), acting through the lean path or the policy's own
    forward, the collector's array path gives exactly the batches, next input, normaliser
    statistics and RNG state of the loop over step_and_maybe_reset, across autoresets."""
    import rl_trainers.fast.acting as lean_acting
    from rl_trainers.envs import (
        Compose,
        GymEnv,
        RewardNorm,
        RewardSum,
        TransformedEnv,
        VecNorm,
    )

    envs = []

    def make_env():
        base = GymEnv("Pendulum-v1", num_envs=num_envs, max_episode_steps=30)
        # the app's observation normaliser: exact statistics, clipped
        vecnorm = VecNorm(decay=1.0, eps=1e-8, clip=2.0)
        env = TransformedEnv(base, Compose(RewardSum(), vecnorm, RewardNorm(gamma=0.9)))
        envs.append(env)
        return env

    monkeypatch.setattr(fast, "LEAN_ACTING", lean)
    taken = []
    original = lean_acting.GaussianActing.batch_outputs
    monkeypatch.setattr(
        lean_acting.GaussianActing,
        "batch_outputs",
        lambda self, *args: (taken.append(1), original(self, *args))[1],
    )
    fast_run, fast_run_next = _collect(make_env, policy_fn, True, monkeypatch)
    fast_rng = torch.get_rng_state()
    assert bool(taken) == lean
    slow, slow_next = _collect(make_env, policy_fn, False, monkeypatch)
    assert torch.equal(fast_rng, torch.get_rng_state())
    assert any(b["next", "done"].any() for b in fast_run)
    _assert_same_collection((fast_run, fast_run_next), (slow, slow_next))
    fast_stats, slow_stats = (env.transform.state_dict() for env in envs)
    for key, value in fast_stats.items():
        assert torch.equal(value, slow_stats[key]), key


def test_array_rollout_is_taken_with_normalisers():
    """The normalised env of the MuJoCo presets keeps the array path (it returns a batch)."""
    from rl_trainers.envs import Compose, GymEnv, RewardNorm, RewardSum, TransformedEnv, VecNorm

    env = TransformedEnv(
        GymEnv("Pendulum-v1", num_envs=1), Compose(RewardSum(), VecNorm(), RewardNorm())
    )
    policy = _tanh_normal_policy(env)
    with torch.no_grad():
        out = env.rollout_batch(policy(env.reset()), 5, policy)
    assert out is not None
    assert out[0].batch_size == torch.Size([1, 5])
