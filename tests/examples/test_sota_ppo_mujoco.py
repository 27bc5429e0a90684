"""torchrl's sota-implementations/ppo/ppo_mujoco.py, ported by renaming the imports.

The script's logic on Pendulum-v1 with a few hundred frames: VecNorm/RewardSum/StepCounter
env, TanhNormal actor over an MLP plus AddStateIndependentNormalScale, GAE imported from
``objectives.value.advantages``, ClipPPOLoss with the learning rate and the clip epsilon
annealed in place (``loss_module.clip_epsilon.copy_``), CSV logging through
``get_logger``/``generate_exp_name``.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict
from tensordict.nn import AddStateIndependentNormalScale, TensorDictModule

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyMemmapStorage, TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement
from rl_trainers.envs import (
    DoubleToFloat,
    ExplorationType,
    RewardSum,
    StepCounter,
    TransformedEnv,
    VecNorm,
    set_exploration_type,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import ClipPPOLoss
from rl_trainers.objectives.value.advantages import GAE
from rl_trainers.record.loggers import generate_exp_name, get_logger


def make_env(env_name="Pendulum-v1"):
    env = TransformedEnv(GymEnv(env_name, device="cpu", from_pixels=False, pixels_only=False))
    env.append_transform(VecNorm(in_keys=["observation"], decay=0.99999, eps=1e-2))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    env.append_transform(DoubleToFloat(in_keys=["observation"]))
    return env


def make_ppo_models(env):
    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.shape[-1]
    policy_mlp = MLP(
        in_features=n_obs, activation_class=torch.nn.Tanh, out_features=n_act, num_cells=[32, 32]
    )
    policy_mlp = torch.nn.Sequential(
        policy_mlp, AddStateIndependentNormalScale(n_act, scale_lb=1e-8)
    )
    actor = ProbabilisticActor(
        TensorDictModule(policy_mlp, in_keys=["observation"], out_keys=["loc", "scale"]),
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
    value_mlp = MLP(
        in_features=n_obs, activation_class=torch.nn.Tanh, out_features=1, num_cells=[32, 32]
    )
    return actor, ValueOperator(value_mlp, in_keys=["observation"])


def run(log_dir, total_frames=512, frames_per_batch=256, mini_batch_size=64, ppo_epochs=2):
    torch.manual_seed(0)
    lr, clip_epsilon = 3e-4, 0.2
    num_mini_batches = frames_per_batch // mini_batch_size
    total_network_updates = (total_frames // frames_per_batch) * ppo_epochs * num_mini_batches
    actor, critic = make_ppo_models(make_env())
    collector = SyncDataCollector(
        create_env_fn=make_env(),
        policy=actor,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        device="cpu",
        storing_device="cpu",
        max_frames_per_traj=-1,
    )
    data_buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=mini_batch_size,
    )
    adv_module = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss_module = ClipPPOLoss(
        actor_network=actor,
        critic_network=critic,
        clip_epsilon=clip_epsilon,
        loss_critic_type="l2",
        entropy_coef=0.0,
        critic_coef=0.25,
        normalize_advantage=True,
    )
    actor_optim = torch.optim.Adam(actor.parameters(), lr=lr, eps=1e-5)
    critic_optim = torch.optim.Adam(critic.parameters(), lr=lr, eps=1e-5)
    exp_name = generate_exp_name("PPO", "test_Pendulum-v1")
    logger = get_logger(
        "csv",
        logger_name=str(log_dir),
        experiment_name=exp_name,
        wandb_kwargs={"config": {}, "project": "p", "group": "g"},
    )
    test_env = make_env()
    test_env.eval()
    collected_frames, num_network_updates = 0, 0
    losses = TensorDict({}, batch_size=[ppo_epochs, num_mini_batches])
    epsilons = []
    for data in collector:
        log_info = {}
        collected_frames += data.numel()
        episode_rewards = data["next", "episode_reward"][data["next", "done"]]
        if len(episode_rewards) > 0:
            log_info["train/reward"] = episode_rewards.mean().item()
        for j in range(ppo_epochs):
            with torch.no_grad():
                data = adv_module(data)
            data_buffer.extend(data.reshape(-1))
            for k, batch in enumerate(data_buffer):
                alpha = 1 - (num_network_updates / total_network_updates)
                for group in actor_optim.param_groups + critic_optim.param_groups:
                    group["lr"] = lr * alpha
                loss_module.clip_epsilon.copy_(clip_epsilon * alpha)
                epsilons.append(float(loss_module.clip_epsilon))
                num_network_updates += 1
                loss = loss_module(batch)
                losses[j, k] = loss.select("loss_critic", "loss_entropy", "loss_objective").detach()
                (loss["loss_objective"] + loss["loss_entropy"]).backward()
                loss["loss_critic"].backward()
                actor_optim.step()
                critic_optim.step()
                actor_optim.zero_grad()
                critic_optim.zero_grad()
        losses_mean = losses.apply(lambda x: x.float().mean(), batch_size=[])
        for key, value in losses_mean.items():
            log_info[f"train/{key}"] = value.item()
        log_info["train/clip_epsilon"] = alpha * clip_epsilon
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            td_test = test_env.rollout(
                policy=actor, auto_reset=True, break_when_any_done=True, max_steps=10_000_000
            )
            log_info["eval/reward"] = td_test["next", "episode_reward"][
                td_test["next", "done"]
            ].mean()
        for key, value in log_info.items():
            logger.log_scalar(key, value, collected_frames)
        collector.update_policy_weights_()
    collector.shutdown()
    test_env.close()
    return log_dir / exp_name, epsilons


def test_ppo_mujoco_port_anneals_clip_epsilon_and_logs(tmp_path):
    exp_dir, epsilons = run(tmp_path)
    # clip_epsilon is a tensor buffer the script anneals in place (torchrl's ClipPPOLoss)
    assert (
        math.isclose(epsilons[0], 0.2, rel_tol=1e-6)
        and epsilons[-1] < 0.19
        and epsilons == sorted(epsilons, reverse=True)
    )
    scalars = exp_dir / "scalars"
    for name in (
        "train/loss_critic",
        "train/loss_objective",
        "train/loss_entropy",
        "train/clip_epsilon",
        "train/reward",
        "eval/reward",
    ):
        rows = (scalars / f"{name}.csv").read_text().split()
        assert [int(r.split(",")[0]) for r in rows] == [256, 512], name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name


def test_clip_epsilon_annealing_changes_the_clipping():
    """The annealed buffer is the one the loss clips with."""
    torch.manual_seed(0)
    env = make_env()
    actor, critic = make_ppo_models(env)
    with torch.no_grad():
        data = env.rollout(32, actor)
        data = GAE(gamma=0.99, lmbda=0.95, value_network=critic)(data)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2)
    assert isinstance(loss.clip_epsilon, torch.Tensor)
    with torch.no_grad():  # a policy far from the one that collected: ratios are away from 1
        for p in actor.parameters():
            p.add_(0.5)
    wide = loss(data)["loss_objective"]
    loss.clip_epsilon.copy_(1e-6)
    narrow = loss(data)["loss_objective"]
    assert not torch.isclose(wide, narrow)
