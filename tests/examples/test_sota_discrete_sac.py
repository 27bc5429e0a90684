"""torchrl's sota-implementations/discrete_sac/discrete_sac.py and utils.py, ported by
renaming the imports.

CartPole-v1 with a few hundred frames: ``ProbabilisticActor`` imported from
``modules.tensordict_module.actors`` and ``DiscreteSACLoss`` from ``objectives.sac``; two
ParallelEnv workers; the action spec of one sub-env read as
``action_spec[(0,) * len(batch_size)]``; the eval env closed after initialising the networks
and used again for evaluation; critic, actor and alpha losses back-propagated one by one.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from tensordict.nn import InteractionType, TensorDictModule
from torch import nn, optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import Composite, TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.storages import LazyMemmapStorage
from rl_trainers.envs import (
    Compose,
    DoubleToFloat,
    EnvCreator,
    InitTracker,
    ParallelEnv,
    RewardSum,
    StepCounter,
    TransformedEnv,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, SafeModule
from rl_trainers.modules.distributions import OneHotCategorical
from rl_trainers.modules.tensordict_module.actors import ProbabilisticActor
from rl_trainers.objectives import SoftUpdate
from rl_trainers.objectives.sac import DiscreteSACLoss


def env_maker(name):
    return GymEnv(name, device="cpu", from_pixels=False, pixels_only=False)


def make_environment(num_envs=2):
    maker = functools.partial(env_maker, "CartPole-v1")
    train_env = TransformedEnv(
        ParallelEnv(num_envs, EnvCreator(maker), serial_for_single=True),
        Compose(StepCounter(max_steps=500), InitTracker(), DoubleToFloat(), RewardSum()),
    )
    eval_env = TransformedEnv(
        ParallelEnv(num_envs, EnvCreator(maker), serial_for_single=True),
        train_env.transform.clone(),
    )
    return train_env, eval_env


def make_sac_agent(train_env, eval_env):
    action_spec = train_env.action_spec
    if train_env.batch_size:
        action_spec = action_spec[(0,) * len(train_env.batch_size)]
    actor = ProbabilisticActor(
        spec=Composite(action=eval_env.action_spec),
        module=SafeModule(
            MLP(num_cells=[32, 32], out_features=action_spec.shape[-1]),
            in_keys=["observation"],
            out_keys=["logits"],
        ),
        in_keys=["logits"],
        out_keys=["action"],
        distribution_class=OneHotCategorical,
        distribution_kwargs={},
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue = TensorDictModule(
        MLP(num_cells=[32, 32], out_features=action_spec.shape[-1]),
        in_keys=["observation"],
        out_keys=["action_value"],
    )
    model = nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.reset()
        for net in model:
            net(td)
    del td
    eval_env.close()
    return model


def run(total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=10):
    torch.manual_seed(0)
    np.random.seed(0)
    train_env, eval_env = make_environment()
    model = make_sac_agent(train_env, eval_env)
    loss_module = DiscreteSACLoss(
        actor_network=model[0],
        qvalue_network=model[1],
        num_actions=model[0].spec["action"].space.n,
        num_qvalue_nets=2,
        loss_function="l2",
        target_entropy_weight=0.2,
        delay_qvalue=True,
    )
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = SoftUpdate(loss_module, eps=0.995)
    collector = SyncDataCollector(
        train_env,
        model[0],
        init_random_frames=init_random_frames,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        device="cpu",
        storing_device="cpu",
    )
    collector.set_seed(0)
    replay_buffer = TensorDictReplayBuffer(
        prefetch=3, batch_size=64, storage=LazyMemmapStorage(10_000)
    )
    critic_params = list(loss_module.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    optimizer_actor = optim.Adam(actor_params, lr=3e-4)
    optimizer_critic = optim.Adam(critic_params, lr=3e-4)
    optimizer_alpha = optim.Adam([loss_module.log_alpha], lr=3e-4)
    collected_frames = 0
    history = []
    for tensordict in collector:
        collector.update_policy_weights_()
        tensordict = tensordict.reshape(-1)
        replay_buffer.extend(tensordict.cpu())
        collected_frames += tensordict.numel()
        metrics = {}
        if collected_frames >= init_random_frames:
            q_losses, actor_losses, alpha_losses = [], [], []
            for _ in range(num_updates):
                loss_out = loss_module(replay_buffer.sample().clone())
                optimizer_critic.zero_grad()
                loss_out["loss_qvalue"].backward()
                optimizer_critic.step()
                optimizer_actor.zero_grad()
                loss_out["loss_actor"].backward()
                optimizer_actor.step()
                optimizer_alpha.zero_grad()
                loss_out["loss_alpha"].backward()
                optimizer_alpha.step()
                target_net_updater.step()
                q_losses.append(loss_out["loss_qvalue"].item())
                actor_losses.append(loss_out["loss_actor"].item())
                alpha_losses.append(loss_out["loss_alpha"].item())
            metrics["train/q_loss"] = np.mean(q_losses)
            metrics["train/a_loss"] = np.mean(actor_losses)
            metrics["train/alpha_loss"] = np.mean(alpha_losses)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(500, model[0], break_when_any_done=True)
            metrics["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        history.append(metrics)
    collector.shutdown()
    eval_env.close()
    train_env.close()
    return history


def test_discrete_sac_port_trains_and_evaluates_on_a_reopened_env():
    history = run()
    assert len(history) == 3
    for metrics in history:
        assert metrics["eval/reward"] >= 8  # a CartPole episode on the reopened eval env
        assert all(math.isfinite(v) for v in metrics.values())
    assert set(history[-1]) == {"train/q_loss", "train/a_loss", "train/alpha_loss", "eval/reward"}


def test_spec_indexing_gives_one_sub_env():
    from rl_trainers.data import Bounded, OneHot

    spec = OneHot(2, shape=(3, 2))
    assert tuple(spec[0].shape) == (2,) and spec[(1,)].space.n == 2
    bounded = Bounded(torch.tensor([[-1.0], [-2.0]]), torch.tensor([[1.0], [2.0]]), shape=(2, 1))
    assert bounded[1].space.low.tolist() == [-2.0]
    with pytest.raises(IndexError, match="integer indices"):
        spec[0, 0, 0]
