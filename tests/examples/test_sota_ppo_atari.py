"""torchrl's sota-implementations/ppo/ppo_atari.py pattern, ported by renaming the imports.

ale-py is not installed, so the script's structure runs on CartPole state observations:
an ActorValueOperator (shared trunk) split with ``get_policy_operator``/``get_value_operator``,
ClipPPOLoss with torchrl's ``entropy_coeff``/``critic_coeff`` spelling, one Adam over
``loss_module.parameters()`` with gradient clipping, and the end-of-life flag used as the
done key: ``adv_module.set_keys(done="end-of-life", terminated="end-of-life")`` and the same
on the loss.
"""

from __future__ import annotations

import math

import torch
from tensordict.nn import TensorDictModule

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement
from rl_trainers.envs import ExplorationType, RewardSum, StepCounter, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.modules import (
    MLP,
    ActorValueOperator,
    OneHotCategorical,
    ProbabilisticActor,
    ValueOperator,
)
from rl_trainers.objectives import ClipPPOLoss
from rl_trainers.objectives.value.advantages import GAE


def make_env():
    env = TransformedEnv(GymEnv("CartPole-v1"))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter(max_steps=100))
    return env


def make_ppo_models(env):
    common = TensorDictModule(
        MLP(out_features=32, num_cells=[32], activate_last_layer=True),
        in_keys=["observation"],
        out_keys=["common_features"],
    )
    policy = ProbabilisticActor(
        TensorDictModule(
            MLP(out_features=env.action_spec.space.n, num_cells=[]),
            in_keys=["common_features"],
            out_keys=["logits"],
        ),
        in_keys=["logits"],
        spec=env.full_action_spec,
        distribution_class=OneHotCategorical,
        return_log_prob=True,
        default_interaction_type=ExplorationType.RANDOM,
    )
    value = ValueOperator(MLP(out_features=1, num_cells=[]), in_keys=["common_features"])
    actor_critic = ActorValueOperator(
        common_operator=common, policy_operator=policy, value_operator=value
    )
    with torch.no_grad():
        actor_critic(env.reset())
    return actor_critic.get_policy_operator(), actor_critic.get_value_operator()


def make_losses(actor, critic):
    adv_module = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss_module = ClipPPOLoss(
        actor_network=actor,
        critic_network=critic,
        clip_epsilon=0.1,
        loss_critic_type="l2",
        entropy_coeff=0.01,
        critic_coeff=1.0,
        normalize_advantage=True,
    )
    adv_module.set_keys(done="end-of-life", terminated="end-of-life")
    loss_module.set_keys(done="end-of-life", terminated="end-of-life")
    return adv_module, loss_module


def test_ppo_atari_port_trains_with_the_end_of_life_key():
    torch.manual_seed(0)
    actor, critic = make_ppo_models(make_env())
    adv_module, loss_module = make_losses(actor, critic)
    optim = torch.optim.Adam(loss_module.parameters(), lr=2.5e-4, eps=1e-5)
    collector = SyncDataCollector(
        make_env(), actor, frames_per_batch=128, total_frames=384, max_frames_per_traj=-1
    )
    data_buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(128), sampler=SamplerWithoutReplacement(), batch_size=32
    )
    before = [p.clone() for p in loss_module.parameters()]
    for data in collector:
        data["next", "end-of-life"] = data["next", "terminated"].clone()
        with torch.no_grad():
            data = adv_module(data)
        data_buffer.extend(data.reshape(-1))
        for batch in data_buffer:
            loss = loss_module(batch)
            (loss["loss_critic"] + loss["loss_objective"] + loss["loss_entropy"]).backward()
            torch.nn.utils.clip_grad_norm_(loss_module.parameters(), max_norm=0.5)
            optim.step()
            optim.zero_grad()
            assert all(math.isfinite(loss[k].item()) for k in ("loss_critic", "loss_objective"))
    # the shared trunk is trained once, through both heads
    assert len(before) == len(list(loss_module.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(before, loss_module.parameters()))


def test_renamed_done_key_is_the_one_the_estimator_reads():
    torch.manual_seed(0)
    env = make_env()
    actor, critic = make_ppo_models(env)
    with torch.no_grad():
        data = env.rollout(20, actor, break_when_any_done=False)
    data["next", "end-of-life"] = torch.ones_like(data["next", "done"])  # every step ends
    adv_module, loss_module = make_losses(actor, critic)
    with torch.no_grad():
        out = adv_module(data.clone())
    # nothing is bootstrapped: the value target is the reward itself
    torch.testing.assert_close(out["value_target"], data["next", "reward"])
    # the loss's own estimator (built when the advantage is missing) follows its keys
    loss_module.make_value_estimator(gamma=0.99, lmbda=0.95)
    assert loss_module.value_estimator.done_key == "end-of-life"
    with torch.no_grad():
        again = loss_module.value_estimator(data.clone())
    torch.testing.assert_close(again["value_target"], data["next", "reward"])
