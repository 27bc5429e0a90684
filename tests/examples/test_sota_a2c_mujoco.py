"""torchrl's sota-implementations/a2c/a2c_mujoco.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: A2CLoss with GAE from ``objectives.value.advantages``
(``vectorized=``/``device=`` given), Adam with a tensor learning rate annealed in place
(``group["lr"].copy_``), a buffer emptied and refilled every batch, per-step loss
TensorDicts stacked and averaged with ``torch.stack(losses).float().mean()``.
"""

from __future__ import annotations

import math

import torch
from tensordict.nn import AddStateIndependentNormalScale, TensorDictModule

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement
from rl_trainers.envs import (
    DoubleToFloat,
    ExplorationType,
    RewardSum,
    StepCounter,
    TransformedEnv,
    set_exploration_type,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import A2CLoss
from rl_trainers.objectives.value.advantages import GAE
from rl_trainers.record.loggers import generate_exp_name, get_logger


def make_env():
    env = TransformedEnv(GymEnv("Pendulum-v1"))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    env.append_transform(DoubleToFloat(in_keys=["observation"]))
    return env


def make_models(env):
    n_act = env.action_spec.shape[-1]
    net = torch.nn.Sequential(
        MLP(out_features=n_act, num_cells=[32, 32], activation_class=torch.nn.Tanh),
        AddStateIndependentNormalScale(n_act),
    )
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.full_action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": env.action_spec.space.low,
            "high": env.action_spec.space.high,
            "tanh_loc": False,
        },
        return_log_prob=True,
        default_interaction_type=ExplorationType.RANDOM,
    )
    critic = ValueOperator(
        MLP(out_features=1, num_cells=[32, 32], activation_class=torch.nn.Tanh),
        in_keys=["observation"],
    )
    with torch.no_grad():
        td = env.rollout(3, actor)
        critic(td)
    return actor, critic


def run(log_dir, total_frames=512, frames_per_batch=128, mini_batch_size=64):
    torch.manual_seed(0)
    device = torch.device("cpu")
    total_network_updates = (total_frames // frames_per_batch) * (
        frames_per_batch // mini_batch_size
    )
    actor, critic = make_models(make_env())
    data_buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch, device=device),
        sampler=SamplerWithoutReplacement(),
        batch_size=mini_batch_size,
    )
    adv_module = GAE(
        gamma=0.99,
        lmbda=0.95,
        value_network=critic,
        average_gae=False,
        vectorized=True,
        device=device,
    )
    loss_module = A2CLoss(
        actor_network=actor,
        critic_network=critic,
        loss_critic_type="l2",
        entropy_coef=0.0,
        critic_coef=0.25,
    )
    lr = 3e-4
    actor_optim = torch.optim.Adam(actor.parameters(), lr=torch.tensor(lr), capturable=False)
    critic_optim = torch.optim.Adam(critic.parameters(), lr=torch.tensor(lr), capturable=False)
    exp_name = generate_exp_name("A2C", "t_Pendulum-v1")
    logger = get_logger("csv", logger_name=str(log_dir), experiment_name=exp_name)
    test_env = make_env()
    test_env.eval()

    def update(batch):
        loss = loss_module(batch)
        actor_loss = loss["loss_objective"] + loss.get("loss_entropy", 0.0)
        (actor_loss + loss["loss_critic"]).backward()
        actor_optim.step()
        critic_optim.step()
        actor_optim.zero_grad(set_to_none=True)
        critic_optim.zero_grad(set_to_none=True)
        return loss.select("loss_critic", "loss_objective").detach()

    collector = SyncDataCollector(
        create_env_fn=make_env(),
        policy=actor,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        device=device,
        storing_device=device,
        max_frames_per_traj=-1,
    )
    collected_frames, num_network_updates = 0, 0
    lrs = []
    c_iter = iter(collector)
    for _ in range(len(collector)):
        data = next(c_iter)
        collected_frames += data.numel()
        losses = []
        with torch.no_grad():
            data = adv_module(data)
        data_buffer.empty()
        data_buffer.extend(data.reshape(-1))
        for batch in data_buffer:
            alpha = 1 - (num_network_updates / total_network_updates)
            for group in actor_optim.param_groups + critic_optim.param_groups:
                group["lr"].copy_(lr * alpha)
            lrs.append(float(actor_optim.param_groups[0]["lr"]))
            num_network_updates += 1
            losses.append(update(batch))
        assert len(losses) == frames_per_batch // mini_batch_size  # the buffer was emptied
        losses = torch.stack(losses).float().mean()
        log_info = {f"train/{key}": value.item() for key, value in losses.items()}
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            td_test = test_env.rollout(policy=actor, max_steps=50)
            log_info["test/reward"] = td_test["next", "reward"].sum()
        for key, value in log_info.items():
            logger.log_scalar(key, value, collected_frames)
    collector.shutdown()
    return log_dir / exp_name, lrs


def test_a2c_mujoco_port_trains_and_logs(tmp_path):
    exp_dir, lrs = run(tmp_path)
    assert math.isclose(lrs[0], 3e-4, rel_tol=1e-6) and lrs[-1] < lrs[0]
    for name in ("train/loss_critic", "train/loss_objective", "test/reward"):
        rows = (exp_dir / "scalars" / f"{name}.csv").read_text().split()
        assert [int(r.split(",")[0]) for r in rows] == [128, 256, 384, 512], name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name
