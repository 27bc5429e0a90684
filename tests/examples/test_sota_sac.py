"""torchrl's sota-implementations/sac/sac.py and utils.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: ParallelEnv(EnvCreator(partial)) train env, an eval
env built from ``train_env.transform.clone()``, a TanhNormal actor with NormalParamExtractor,
SACLoss + SoftUpdate, ``group_optimizers`` over the actor/critic/alpha optimisers built from
``loss_module.*_network_params.flatten_keys().values()``, CSV logging.
"""

from __future__ import annotations

import functools
import math

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torch import nn, optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.envs import Compose, DoubleToFloat, EnvCreator, ParallelEnv, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.transforms import InitTracker, RewardSum, StepCounter
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, ProbabilisticActor, ValueOperator
from rl_trainers.modules.distributions import TanhNormal
from rl_trainers.objectives import SoftUpdate, group_optimizers
from rl_trainers.objectives.sac import SACLoss
from rl_trainers.record.loggers import generate_exp_name, get_logger


def env_maker(name, device="cpu", from_pixels=False):
    return GymEnv(name, device=device, from_pixels=from_pixels, pixels_only=False)


def make_environment(name="Pendulum-v1", env_per_collector=1, max_episode_steps=200):
    partial = functools.partial(env_maker, name)
    parallel_env = ParallelEnv(env_per_collector, EnvCreator(partial), serial_for_single=True)
    parallel_env.set_seed(0)
    train_env = TransformedEnv(
        parallel_env,
        Compose(InitTracker(), StepCounter(max_episode_steps), DoubleToFloat(), RewardSum()),
    )
    trsf_clone = train_env.transform.clone()
    eval_env = TransformedEnv(
        ParallelEnv(env_per_collector, EnvCreator(partial), serial_for_single=True), trsf_clone
    )
    return train_env, eval_env


def make_sac_agent(train_env, eval_env):
    action_spec = train_env.action_spec_unbatched
    actor_net = nn.Sequential(
        MLP(num_cells=[32, 32], out_features=2 * action_spec.shape[-1], activation_class=nn.ReLU),
        NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
    )
    actor = ProbabilisticActor(
        spec=action_spec,
        in_keys=["loc", "scale"],
        module=TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": action_spec.space.low,
            "high": action_spec.space.high,
            "tanh_loc": False,
        },
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue = ValueOperator(
        in_keys=["action", "observation"],
        module=MLP(num_cells=[32, 32], out_features=1, activation_class=nn.ReLU),
    )
    model = nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.fake_tensordict()
        for net in model:
            net(td)
    return model, model[0]


def run(log_dir, total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=8):
    torch.manual_seed(0)
    exp_name = generate_exp_name("SAC", "sac_test")
    logger = get_logger(
        logger_type="csv",
        logger_name=str(log_dir),
        experiment_name=exp_name,
        wandb_kwargs={"mode": "offline", "config": {}, "project": "p"},
    )
    train_env, eval_env = make_environment()
    model, exploration_policy = make_sac_agent(train_env, eval_env)
    loss_module = SACLoss(
        actor_network=model[0],
        qvalue_network=model[1],
        num_qvalue_nets=2,
        loss_function="l2",
        delay_actor=False,
        delay_qvalue=True,
        alpha_init=1.0,
    )
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = SoftUpdate(loss_module, eps=0.995)
    collector = SyncDataCollector(
        train_env,
        exploration_policy,
        init_random_frames=init_random_frames,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        device="cpu",
    )
    collector.set_seed(0)
    replay_buffer = TensorDictReplayBuffer(
        prefetch=3, storage=LazyTensorStorage(10_000), batch_size=64
    )
    critic_params = list(loss_module.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    optimizer = group_optimizers(
        optim.Adam(actor_params, lr=3e-4),
        optim.Adam(critic_params, lr=3e-4),
        optim.Adam([loss_module.log_alpha], lr=3e-4),
    )
    collected_frames = 0
    for tensordict in collector:
        collector.update_policy_weights_()
        tensordict = tensordict.reshape(-1)
        replay_buffer.extend(tensordict)
        collected_frames += tensordict.numel()
        metrics_to_log = {}
        if collected_frames >= init_random_frames:
            losses = TensorDict(batch_size=[num_updates])
            for i in range(num_updates):
                loss_td = loss_module(replay_buffer.sample())
                (
                    loss_td["loss_actor"] + loss_td["loss_qvalue"] + loss_td["loss_alpha"]
                ).sum().backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                target_net_updater.step()
                losses[i] = loss_td.select("loss_actor", "loss_qvalue", "loss_alpha").detach()
            losses = losses.mean()
            metrics_to_log["train/q_loss"] = losses.get("loss_qvalue")
            metrics_to_log["train/actor_loss"] = losses.get("loss_actor")
            metrics_to_log["train/alpha_loss"] = losses.get("loss_alpha")
            metrics_to_log["train/alpha"] = loss_td["alpha"]
            metrics_to_log["train/entropy"] = loss_td["entropy"]
        episode_end = (
            tensordict["next", "done"]
            if tensordict["next", "done"].any()
            else tensordict["next", "truncated"]
        )
        episode_rewards = tensordict["next", "episode_reward"][episode_end]
        if len(episode_rewards) > 0:
            metrics_to_log["train/reward"] = episode_rewards
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(
                200, model[0], auto_cast_to_device=True, break_when_any_done=True
            )
            metrics_to_log["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        for name, value in metrics_to_log.items():
            logger.log_scalar(name, value, collected_frames)
    collector.shutdown()
    eval_env.close()
    train_env.close()
    return log_dir / exp_name, eval_env


def test_sac_port_trains_and_logs(tmp_path):
    exp_dir, eval_env = run(tmp_path)
    scalars = exp_dir / "scalars"
    for name in (
        "train/q_loss",
        "train/actor_loss",
        "train/alpha_loss",
        "train/alpha",
        "train/entropy",
    ):
        rows = (scalars / f"{name}.csv").read_text().split()
        assert [int(r.split(",")[0]) for r in rows] == [200, 400, 600], name
        assert all(math.isfinite(float(r.split(",")[1])) for r in rows), name
    # alpha decreases from alpha_init=1 as the alpha loss is optimised
    alphas = [float(r.split(",")[1]) for r in (scalars / "train/alpha.csv").read_text().split()]
    assert alphas[-1] < alphas[0] < 1.0
    # one episode of 200 steps per batch: the train reward is logged each time
    assert len((scalars / "train/reward.csv").read_text().split()) == 3
    # the eval env runs its own clone of the training transforms
    assert eval_env.transform[-1].__class__.__name__ == "RewardSum"


def test_transform_clone_is_detached_and_independent():
    train_env, eval_env = make_environment()
    clone = train_env.transform.clone()
    assert clone is not train_env.transform and clone.parent is None
    assert [type(t) for t in clone] == [type(t) for t in train_env.transform]
    eval_env.rollout(3)
    train_env.rollout(5)  # step counters are separate
    assert eval_env.transform[1] is not train_env.transform[1]
    train_env.close()
    eval_env.close()
