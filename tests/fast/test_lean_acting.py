"""The collectors' lean acting path (rl_trainers.fast.acting) for MLP categorical
actors: the same batches, next inputs and random draws as the policy's own forward, and the
policy's forward whenever the lean path does not fit."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import InteractionType, TensorDictModule

import rl_trainers.fast.acting as lean_acting
from rl_trainers import fast
from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import GymEnv, RewardSum, TransformedEnv
from rl_trainers.modules import MLP, ProbabilisticActor
from rl_trainers.modules.distributions import Categorical, OneHotCategorical


def _actor(env, distribution_class=OneHotCategorical, actor_class=ProbabilisticActor, **kwargs):
    torch.manual_seed(0)
    net = MLP(in_features=4, out_features=2, num_cells=[16, 16])
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["logits"])
    return actor_class(
        module,
        in_keys=["logits"],
        spec=env.action_spec,
        distribution_class=distribution_class,
        **{"return_log_prob": True, **kwargs},
    )


def _run(make_env, make_policy, lean: bool, monkeypatch, batches: int = 3, **collector_kw):
    """Batches, the next policy input and torch's RNG state after collecting."""
    with monkeypatch.context() as patch:
        patch.setattr(fast, "LEAN_ACTING", lean)
        env = make_env()
        env.set_seed(3)
        policy = make_policy(env)
        torch.manual_seed(1)
        collector = SyncDataCollector(
            env, policy, frames_per_batch=8 * 40, total_frames=8 * 40 * batches, **collector_kw
        )
        out = list(collector)
        last_input = collector._td.clone()
        collector.shutdown()
    return out, last_input, torch.get_rng_state()


def _assert_same(a, b):
    assert list(a.keys(True, True)) == list(b.keys(True, True))  # same keys, same order
    for key in a.keys(True, True):
        assert a.get(key).dtype == b.get(key).dtype, key
        assert torch.equal(a.get(key), b.get(key)), key


@pytest.mark.parametrize(
    ("distribution_class", "env_kwargs", "dist_kwargs", "reward_sum"),
    [
        (OneHotCategorical, {}, {}, True),  # PPO's default recipe: RewardSum, bool one-hot
        (OneHotCategorical, {}, {"distribution_kwargs": {"dtype": torch.bool}}, False),
        (Categorical, {"categorical_action_encoding": True}, {}, False),
        (Categorical, {"categorical_action_encoding": True}, {"return_log_prob": False}, True),
        (OneHotCategorical, {}, {"return_log_prob": False}, False),
    ],
    ids=[
        "one_hot_reward_sum",
        "one_hot_dtype_kwarg",
        "index_actions",
        "index_actions_no_log_prob",
        "one_hot_no_log_prob",
    ],
)
def test_lean_acting_gives_the_policy_forward_results(
    distribution_class, env_kwargs, dist_kwargs, reward_sum, monkeypatch
):
    """Same actions, logits, log-probabilities, next input and RNG state after the batches;
    episodes end inside them, so autoresets are covered."""

    def make_env():
        env = GymEnv("CartPole-v1", num_envs=8, **env_kwargs)
        return TransformedEnv(env, RewardSum()) if reward_sum else env

    def make_policy(env):
        return _actor(env, distribution_class, **dist_kwargs)

    calls = []
    original = lean_acting.CategoricalActing.outputs
    monkeypatch.setattr(
        lean_acting.CategoricalActing,
        "outputs",
        lambda self, *args: (calls.append(1), original(self, *args))[1],
    )
    lean, lean_next, lean_rng = _run(make_env, make_policy, True, monkeypatch)
    assert calls, "the lean path was not taken"
    general, general_next, general_rng = _run(make_env, make_policy, False, monkeypatch)
    assert any(b["next", "done"].any() for b in lean)
    for a, b in zip(lean, general, strict=True):
        _assert_same(a, b)
    _assert_same(lean_next, general_next)
    assert torch.equal(lean_rng, general_rng)


class _TaggingActor(ProbabilisticActor):
    """A subclass whose forward adds an entry: the collector must call it."""

    def forward(self, tensordict):
        tensordict = super().forward(tensordict)
        tensordict.set("tag", torch.ones(tensordict.batch_size))
        return tensordict


def _hooked_actor(env):
    actor = _actor(env)
    actor.calls = 0

    def count(module, args, output):
        module.calls += 1

    actor.register_forward_hook(count)
    return actor


@pytest.mark.parametrize(
    ("make_policy", "collector_kw", "check"),
    [
        (lambda env: _actor(env, actor_class=_TaggingActor), {}, "tag"),
        (_hooked_actor, {}, "hook"),
        (
            lambda env: _actor(env),
            {"exploration_type": InteractionType.DETERMINISTIC},
            "mode",
        ),
        (
            lambda env: _actor(env, safe=True),
            {},
            None,
        ),
    ],
    ids=["policy_subclass", "forward_hook", "deterministic", "safe"],
)
def test_policies_the_lean_path_does_not_fit_run_their_forward(
    make_policy, collector_kw, check, monkeypatch
):
    """A subclass, a hook, deterministic acting or a safe actor: the policy's own forward
    acts on every step, and the batches equal those of the general path."""

    def make_env():
        return GymEnv("CartPole-v1", num_envs=8)

    taken = []
    original = lean_acting.CategoricalActing.outputs
    monkeypatch.setattr(
        lean_acting.CategoricalActing,
        "outputs",
        lambda self, *args: (taken.append(1), original(self, *args))[1],
    )
    with monkeypatch.context() as patch:
        patch.setattr(fast, "LEAN_ACTING", True)
        env = make_env()
        policy = make_policy(env)
        collector = SyncDataCollector(
            env, policy, frames_per_batch=8 * 10, total_frames=8 * 20, **collector_kw
        )
        batches = list(collector)
        collector.shutdown()
    assert not taken
    if check == "tag":
        assert all((b["tag"] == 1).all() for b in batches)
    elif check == "hook":
        assert policy.calls == 20  # one call per step
    elif check == "mode":
        for b in batches:
            mode = b["logits"].argmax(-1)
            assert torch.equal(b["action"].long().argmax(-1), mode)


def test_a_categorical_on_a_one_hot_spec_keeps_the_general_error(monkeypatch):
    """Index actions on a one-hot action spec: the lean path steps aside and the user gets
    the env's shape error, as without it."""
    env = GymEnv("CartPole-v1", num_envs=4)
    policy = _actor(env, Categorical)
    collector = SyncDataCollector(env, policy, frames_per_batch=8, total_frames=8)
    with pytest.raises(ValueError, match="does not match the action spec"):
        collector.next()
    collector.shutdown()


class _FirstActionOnly(OneHotCategorical):
    """A user's distribution that always picks the first action."""

    def sample_and_log_prob(self):
        index = torch.zeros((*self.logits.shape[:-1], 1), dtype=torch.long)
        return self._one_hot(index, keepdim=True), self._index_log_prob(index, keepdim=True)


def test_another_distribution_class_samples_with_its_own_methods():
    env = GymEnv("CartPole-v1", num_envs=4)
    policy = _actor(env, _FirstActionOnly)
    batch = SyncDataCollector(env, policy, frames_per_batch=40, total_frames=40).next()
    assert (batch["action"].long().argmax(-1) == 0).all()


def test_sb3_gaussian_runs_its_mlp_and_scale_apart_with_the_forward_values():
    """SB3's Gaussian policy (an MLP's ``loc`` and a state-independent scale) acts through
    the MLP's maths and a scale made once per batch: the same parameters, actions and
    log-probabilities as the policy's forward, step after step, also after the scale's
    parameter is updated in place mid-batch and when the batch size changes."""
    from tensordict import TensorDict
    from tensordict.nn import set_interaction_type

    from rl_trainers.collectors.utils import lean_acting as pick_lean_acting
    from rl_trainers.modules.builders import make_actor

    env = GymEnv("Pendulum-v1", num_envs=2)
    torch.manual_seed(0)
    policy = make_actor(
        env.observation_spec, env.action_spec, num_cells=[16], state_dependent_scale=False
    )
    scale_param = policy.module.module[1].state_independent_scale
    obs = torch.randn(2, 3)
    with torch.no_grad(), set_interaction_type(InteractionType.RANDOM):
        acting = pick_lean_acting(policy, TensorDict({"observation": obs}, [2]))
        assert isinstance(acting, lean_acting.GaussianActing) and acting.split is not None
        for step, x in enumerate([obs, obs + 1, obs[:1], obs - 1]):
            if step == 1:
                scale_param.add_(0.25)  # an optimiser's in-place step
            torch.manual_seed(step)
            record = acting.step(x)
            torch.manual_seed(step)
            out = policy(TensorDict({"observation": x}, [x.shape[0]]))
            expected = [out[k] for k in ("loc", "scale", "action", policy.log_prob_key)]
            for got, want in zip(record, expected, strict=True):
                assert torch.equal(got, want), step
