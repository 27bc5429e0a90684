"""torchrl's sota-implementations/td3/td3.py and utils.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: SafeModule + TanhModule actor in a SafeSequential,
AdditiveGaussianModule exploration, TD3Loss whose critic and actor losses are computed and
optimised separately (``loss_module.value_loss`` every step, ``loss_module.actor_loss`` every
``policy_update_delay`` steps), a prioritized buffer, CSV logging.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tensordict.nn import TensorDictSequential
from torch import nn, optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import TensorDictPrioritizedReplayBuffer
from rl_trainers.data.replay_buffers.storages import LazyTensorStorage
from rl_trainers.envs import (
    Compose,
    DoubleToFloat,
    InitTracker,
    RewardSum,
    StepCounter,
    TransformedEnv,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import (
    MLP,
    AdditiveGaussianModule,
    SafeModule,
    SafeSequential,
    TanhModule,
    ValueOperator,
)
from rl_trainers.objectives import SoftUpdate
from rl_trainers.objectives.td3 import TD3Loss
from rl_trainers.record.loggers import generate_exp_name, get_logger


def make_env():
    return TransformedEnv(
        GymEnv("Pendulum-v1"),
        Compose(StepCounter(max_steps=200), InitTracker(), DoubleToFloat(), RewardSum()),
    )


def make_td3_agent(env):
    action_spec = env.action_spec_unbatched
    actor = SafeSequential(
        SafeModule(
            MLP(num_cells=[32, 32], out_features=action_spec.shape[-1]),
            in_keys=["observation"],
            out_keys=["param"],
        ),
        TanhModule(in_keys=["param"], out_keys=["action"], spec=action_spec),
    )
    qvalue = ValueOperator(
        in_keys=["action", "observation"], module=MLP(num_cells=[32, 32], out_features=1)
    )
    model = nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = env.fake_tensordict()
        for net in model:
            net(td)
    explore = TensorDictSequential(
        model[0],
        AdditiveGaussianModule(sigma_init=1, sigma_end=1, mean=0, std=0.1, spec=action_spec),
    )
    return model, explore


def make_loss_module(model):
    loss_module = TD3Loss(
        actor_network=model[0],
        qvalue_network=model[1],
        num_qvalue_nets=2,
        loss_function="l2",
        delay_actor=True,
        delay_qvalue=True,
        action_spec=model[0][1].spec,
        policy_noise=0.2,
        noise_clip=0.5,
    )
    loss_module.make_value_estimator(gamma=0.99)
    return loss_module, SoftUpdate(loss_module, eps=0.995)


def run(
    log_dir,
    total_frames=600,
    frames_per_batch=200,
    init_random_frames=200,
    num_updates=10,
    delayed_updates=2,
):
    torch.manual_seed(0)
    np.random.seed(0)
    exp_name = generate_exp_name("TD3", "t")
    logger = get_logger(logger_type="csv", logger_name=str(log_dir), experiment_name=exp_name)
    train_env, eval_env = make_env(), make_env()
    model, exploration_policy = make_td3_agent(train_env)
    loss_module, target_net_updater = make_loss_module(model)
    collector = SyncDataCollector(
        train_env,
        exploration_policy,
        init_random_frames=init_random_frames,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        reset_at_each_iter=False,
        device="cpu",
    )
    replay_buffer = TensorDictPrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, prefetch=3, storage=LazyTensorStorage(10_000), batch_size=64
    )
    critic_params = list(loss_module.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    optimizer_actor = optim.Adam(actor_params, lr=3e-4)
    optimizer_critic = optim.Adam(critic_params, lr=3e-4)
    collected_frames, update_counter = 0, 0
    for tensordict in collector:
        exploration_policy[1].step(tensordict.numel())
        collector.update_policy_weights_()
        tensordict = tensordict.reshape(-1)
        replay_buffer.extend(tensordict.cpu())
        collected_frames += tensordict.numel()
        metrics_to_log = {}
        if collected_frames >= init_random_frames:
            actor_losses, q_losses = [], []
            for _ in range(num_updates):
                update_counter += 1
                update_actor = update_counter % delayed_updates == 0
                sampled_tensordict = replay_buffer.sample().clone()
                q_loss, *_ = loss_module.value_loss(sampled_tensordict)
                optimizer_critic.zero_grad()
                q_loss.backward()
                optimizer_critic.step()
                q_losses.append(q_loss.item())
                if update_actor:
                    actor_loss, *_ = loss_module.actor_loss(sampled_tensordict)
                    optimizer_actor.zero_grad()
                    actor_loss.backward()
                    optimizer_actor.step()
                    actor_losses.append(actor_loss.item())
                    target_net_updater.step()
                replay_buffer.update_tensordict_priority(sampled_tensordict)
            metrics_to_log["train/q_loss"] = np.mean(q_losses)
            metrics_to_log["train/a_loss"] = np.mean(actor_losses)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(200, exploration_policy, break_when_any_done=True)
            metrics_to_log["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        for name, value in metrics_to_log.items():
            logger.log_scalar(name, value, collected_frames)
    collector.shutdown()
    return log_dir / exp_name


def test_td3_port_separate_actor_and_value_losses(tmp_path):
    scalars = run(tmp_path) / "scalars"
    for name in ("train/q_loss", "train/a_loss"):
        rows = (scalars / f"{name}.csv").read_text().split()
        assert [int(r.split(",")[0]) for r in rows] == [200, 400, 600], name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name
    assert len((scalars / "eval/reward.csv").read_text().split()) == 3


@pytest.fixture
def batch():
    torch.manual_seed(0)
    env = make_env()
    model, explore = make_td3_agent(env)
    with torch.no_grad():
        data = env.rollout(16, explore)
    return model, data


def test_value_and_actor_loss_match_forward(batch):
    model, data = batch
    loss_module, _ = make_loss_module(model)
    loss_module.policy_noise = 0.0  # deterministic target: the two calls see the same noise
    out = loss_module(data.clone())
    q_loss, meta = loss_module.value_loss(data.clone())
    actor_loss, actor_meta = loss_module.actor_loss(data.clone())
    torch.testing.assert_close(q_loss, out["loss_qvalue"])
    torch.testing.assert_close(actor_loss, out["loss_actor"])
    assert meta["td_error"].shape == (2, 16)  # per critic and sample, as torchrl's
    assert set(meta) >= {"td_error", "next_state_value", "pred_value", "target_value"}
    assert "state_action_value_actor" in actor_meta


def test_value_loss_trains_only_the_critics(batch):
    model, data = batch
    loss_module, _ = make_loss_module(model)
    q_loss, _ = loss_module.value_loss(data)
    q_loss.backward()
    assert all(p.grad is None for p in model[0].parameters())
    assert all(
        p.grad is not None for p in loss_module.qvalue_network_params.flatten_keys().values()
    )
    # the priority key is written for prioritized buffers
    assert data["td_error"].shape == (16,)
    loss_module.zero_grad()
    actor_loss, _ = loss_module.actor_loss(data)
    actor_loss.backward()
    assert all(p.grad is not None for p in model[0].parameters())
    assert all(p.grad is None for p in loss_module.qvalue_network_params.flatten_keys().values())
