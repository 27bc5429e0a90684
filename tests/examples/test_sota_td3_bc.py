"""torchrl's sota-implementations/td3_bc/td3_bc.py and utils.py, ported by renaming the
imports.

D4RL is not installed: the offline buffer holds a random Pendulum-v1 rollout. The script's
loop: ``loss_module.value_loss`` every gradient step, ``loss_module.actor_loss`` (with its
``bc_loss``/``lmbd`` metadata, logged as they come) every ``policy_update_delay`` steps,
optimisers built from ``loss_module.*_network_params.values(True, True)``.
"""

from __future__ import annotations

import math

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn, optim

from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.envs import DoubleToFloat, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, TanhModule, ValueOperator
from rl_trainers.objectives import SoftUpdate, TD3BCLoss
from rl_trainers.record.loggers import get_logger


def make_td3_agent(env):
    action_spec = env.action_spec_unbatched
    actor = TensorDictSequential(
        TensorDictModule(
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
    return model


def run(log_dir, gradient_steps=60, delayed_updates=2):
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
    replay_buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(1000), batch_size=64)
    replay_buffer.extend(env.rollout(400, break_when_any_done=False))
    model = make_td3_agent(env)
    loss_module = TD3BCLoss(
        actor_network=model[0],
        qvalue_network=model[1],
        num_qvalue_nets=2,
        loss_function="l2",
        action_spec=model[0][1].spec,
        policy_noise=0.2,
        noise_clip=0.5,
        alpha=2.5,
    )
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = SoftUpdate(loss_module, eps=0.995)
    critic_params = list(loss_module.qvalue_network_params.values(True, True))
    actor_params = list(loss_module.actor_network_params.values(True, True))
    optimizer_actor = optim.Adam(actor_params, lr=3e-4)
    optimizer_critic = optim.Adam(critic_params, lr=3e-4)
    logger = get_logger("csv", logger_name=str(log_dir), experiment_name="td3_bc")
    update_counter = 0
    bc_losses = []
    for i in range(gradient_steps):
        update_counter += 1
        update_actor = update_counter % delayed_updates == 0
        sampled_tensordict = replay_buffer.sample().clone()
        q_loss, *_ = loss_module.value_loss(sampled_tensordict)
        optimizer_critic.zero_grad()
        q_loss.backward()
        optimizer_critic.step()
        to_log = {"q_loss": q_loss.item()}
        if update_actor:
            actor_loss, actorloss_metadata = loss_module.actor_loss(sampled_tensordict)
            optimizer_actor.zero_grad()
            actor_loss.backward()
            optimizer_actor.step()
            target_net_updater.step()
            to_log["actor_loss"] = actor_loss.item()
            to_log.update(actorloss_metadata)
            bc_losses.append(float(actorloss_metadata["bc_loss"]))
        for name, value in to_log.items():
            logger.log_scalar(name, value, i)
    return log_dir / "td3_bc" / "scalars", bc_losses


def test_td3_bc_port_clones_the_behaviour(tmp_path):
    scalars, bc_losses = run(tmp_path)
    for name, count in (("q_loss", 60), ("actor_loss", 30), ("bc_loss", 30), ("lmbd", 30)):
        rows = (scalars / f"{name}.csv").read_text().split()
        assert len(rows) == count, name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name
    # the behaviour-cloning term is part of the actor loss the script optimises
    assert sum(bc_losses[-5:]) < sum(bc_losses[:5])


def test_actor_loss_is_the_td3_bc_one():
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
    data = env.rollout(32, break_when_any_done=False)
    model = make_td3_agent(env)
    loss_module = TD3BCLoss(model[0], model[1], action_spec=model[0][1].spec, alpha=2.5)
    actor_loss, metadata = loss_module.actor_loss(data.clone())
    out = loss_module(data.clone())
    torch.testing.assert_close(actor_loss, out["loss_actor"])
    torch.testing.assert_close(metadata["bc_loss"], out["bc_loss"])
    torch.testing.assert_close(metadata["lmbd"], out["lmbd"])
    assert metadata["bc_loss"] > 0
