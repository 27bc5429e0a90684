"""torchrl's sota-implementations/ddpg/ddpg.py and utils.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: ``from ...objectives.ddpg import DDPGLoss``, a
TensorDictSequential(TensorDictModule, TanhModule) actor, Ornstein-Uhlenbeck exploration,
the critic and actor optimised separately through ``loss_module.loss_value`` and
``loss_module.loss_actor``, an eval env closed after initialising the networks and used
again for evaluation, ``logger.log_metrics``.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np
import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn, optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.storages import LazyMemmapStorage
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
from rl_trainers.modules import MLP, OrnsteinUhlenbeckProcessModule, TanhModule, ValueOperator
from rl_trainers.objectives import SoftUpdate
from rl_trainers.objectives.ddpg import DDPGLoss
from rl_trainers.record.loggers import generate_exp_name, get_logger


def make_env():
    return TransformedEnv(
        GymEnv("Pendulum-v1"),
        Compose(StepCounter(max_steps=200), InitTracker(), DoubleToFloat(), RewardSum()),
    )


def make_ddpg_agent(train_env, eval_env):
    action_spec = train_env.action_spec_unbatched
    actor = TensorDictSequential(
        TensorDictModule(
            MLP(num_cells=[32, 32], out_features=action_spec.shape[-1]),
            in_keys=["observation"],
            out_keys=["param"],
        ),
        TanhModule(in_keys=["param"], out_keys=["action"]),
    )
    qvalue = ValueOperator(
        in_keys=["action", "observation"], module=MLP(num_cells=[32, 32], out_features=1)
    )
    model = nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.reset()
        for net in model:
            net(td)
    del td
    eval_env.close()
    explore = TensorDictSequential(
        model[0],
        OrnsteinUhlenbeckProcessModule(spec=action_spec, annealing_num_steps=1_000_000, safe=False),
    )
    return model, explore


def run(log_dir, total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=10):
    torch.manual_seed(0)
    np.random.seed(0)
    exp_name = generate_exp_name("DDPG", "t")
    logger = get_logger(logger_type="csv", logger_name=str(log_dir), experiment_name=exp_name)
    train_env, eval_env = make_env(), make_env()
    model, exploration_policy = make_ddpg_agent(train_env, eval_env)
    loss_module = DDPGLoss(
        actor_network=model[0],
        value_network=model[1],
        loss_function="l2",
        delay_actor=True,
        delay_value=True,
    )
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = SoftUpdate(loss_module, eps=0.995)
    collector = SyncDataCollector(
        train_env,
        exploration_policy,
        init_random_frames=init_random_frames,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        reset_at_each_iter=False,
        device="cpu",
    )
    replay_buffer = TensorDictReplayBuffer(
        prefetch=3,
        batch_size=64,
        storage=LazyMemmapStorage(10_000, scratch_dir=tempfile.mkdtemp(dir=log_dir)),
    )
    critic_params = list(loss_module.value_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    optimizer_actor = optim.Adam(actor_params, lr=3e-4)
    optimizer_critic = optim.Adam(critic_params, lr=3e-4)
    collected_frames = 0
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
                sampled_tensordict = replay_buffer.sample().clone()
                q_loss, *_ = loss_module.loss_value(sampled_tensordict)
                optimizer_critic.zero_grad()
                q_loss.backward()
                optimizer_critic.step()
                actor_loss, *_ = loss_module.loss_actor(sampled_tensordict)
                optimizer_actor.zero_grad()
                actor_loss.backward()
                optimizer_actor.step()
                q_losses.append(q_loss.item())
                actor_losses.append(actor_loss.item())
                target_net_updater.step()
            metrics_to_log["train/q_loss"] = np.mean(q_losses)
            metrics_to_log["train/a_loss"] = np.mean(actor_losses)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(200, exploration_policy, break_when_any_done=True)
            metrics_to_log["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        logger.log_metrics(metrics_to_log, collected_frames)
    collector.shutdown()
    return log_dir / exp_name


def test_ddpg_port_trains_and_logs(tmp_path):
    scalars = run(tmp_path) / "scalars"
    for name in ("train/q_loss", "train/a_loss", "eval/reward"):
        rows = (scalars / f"{name}.csv").read_text().split()
        assert [int(r.split(",")[0]) for r in rows] == [200, 400, 600], name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name


def test_loss_value_and_loss_actor_match_forward():
    torch.manual_seed(0)
    env = make_env()
    model, explore = make_ddpg_agent(env, make_env())
    with torch.no_grad():
        data = env.rollout(16, explore)
    loss_module = DDPGLoss(model[0], model[1], delay_actor=True)
    out = loss_module(data.clone())
    value, meta = loss_module.loss_value(data.clone())
    actor, actor_meta = loss_module.loss_actor(data.clone())
    torch.testing.assert_close(value, out["loss_value"])
    torch.testing.assert_close(actor, out["loss_actor"])
    assert meta["td_error"].shape == (16,) and actor_meta == {}
    assert set(meta) == {"td_error", "pred_value", "target_value"}
