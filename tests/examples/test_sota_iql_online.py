"""torchrl's sota-implementations/iql/iql_online.py and utils.py, ported by renaming the
imports.

Pendulum-v1 with a few hundred frames: a TanhNormal actor, a Q-value and a state-value
ValueOperator, ``IQLLoss(actor, qvalue, value_network=value, temperature=, expectile=)``,
``make_value_estimator(gamma=, device=)``, ``SoftUpdate(loss_module, tau=)``, three Adam
optimisers (actor/critic/value ``*_network_params.flatten_keys().values()``) grouped with
``group_optimizers``, and the loss entries logged.
"""

from __future__ import annotations

import math

import torch
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
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
from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import IQLLoss, SoftUpdate, group_optimizers


def make_env():
    return TransformedEnv(
        GymEnv("Pendulum-v1"),
        Compose(InitTracker(), StepCounter(200), DoubleToFloat(), RewardSum()),
    )


def make_iql_model(train_env, eval_env):
    action_spec = train_env.action_spec_unbatched
    actor_net = torch.nn.Sequential(
        MLP(num_cells=[32, 32], out_features=2 * action_spec.shape[-1]),
        NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
    )
    actor = ProbabilisticActor(
        module=TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": action_spec.space.low,
            "high": action_spec.space.high,
            "tanh_loc": False,
        },
        default_interaction_type=ExplorationType.RANDOM,
    )
    qvalue = ValueOperator(
        in_keys=["observation", "action"],
        out_keys=["state_action_value"],
        module=MLP(num_cells=[32, 32], out_features=1),
    )
    value = ValueOperator(
        in_keys=["observation"],
        out_keys=["state_value"],
        module=MLP(num_cells=[32, 32], out_features=1),
    )
    model = torch.nn.ModuleList([actor, qvalue, value])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.fake_tensordict()
        for net in model:
            net(td)
    return model


def make_loss(model):
    loss_module = IQLLoss(
        model[0],
        model[1],
        value_network=model[2],
        loss_function="l2",
        temperature=3.0,
        expectile=0.7,
    )
    loss_module.make_value_estimator(gamma=0.99, device="cpu")
    return loss_module, SoftUpdate(loss_module, tau=0.005)


def run(total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=10):
    torch.manual_seed(0)
    train_env, eval_env = make_env(), make_env()
    model = make_iql_model(train_env, eval_env)
    collector = SyncDataCollector(
        train_env,
        model[0],
        init_random_frames=init_random_frames,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
    )
    replay_buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(10_000), batch_size=64)
    loss_module, target_net_updater = make_loss(model)
    params = [
        list(loss_module.actor_network_params.flatten_keys().values()),
        list(loss_module.qvalue_network_params.flatten_keys().values()),
        list(loss_module.value_network_params.flatten_keys().values()),
    ]
    optimizer = group_optimizers(*[torch.optim.Adam(p, lr=3e-4) for p in params])

    def update(sampled_tensordict):
        optimizer.zero_grad(set_to_none=True)
        loss_info = loss_module(sampled_tensordict)
        (loss_info["loss_actor"] + loss_info["loss_value"] + loss_info["loss_qvalue"]).backward()
        optimizer.step()
        target_net_updater.step()
        return loss_info.detach()

    logs = []
    collected_frames = 0
    for tensordict in collector:
        collector.update_policy_weights_()
        replay_buffer.extend(tensordict.reshape(-1))
        collected_frames += tensordict.numel()
        metrics = {}
        if collected_frames >= init_random_frames:
            for _ in range(num_updates):
                loss_info = update(replay_buffer.sample())
            metrics["train/q_loss"] = loss_info["loss_qvalue"].item()
            metrics["train/actor_loss"] = loss_info["loss_actor"].item()
            metrics["train/value_loss"] = loss_info["loss_value"].item()
            metrics["train/entropy"] = loss_info.get("entropy").item()
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(200, model[0], break_when_any_done=True)
            metrics["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        logs.append(metrics)
    collector.shutdown()
    return logs


def test_iql_online_port_trains():
    logs = run()
    assert len(logs) == 3
    for metrics in logs:
        assert len(metrics) == 5 and all(math.isfinite(v) for v in metrics.values())


def test_iql_terms_match_their_definition():
    torch.manual_seed(0)
    env = make_env()
    model = make_iql_model(env, env)
    with torch.no_grad():
        data = env.rollout(32, model[0])
    loss_module, _ = make_loss(model)
    out = loss_module(data.clone())
    assert set(out.keys()) == {"loss_actor", "loss_qvalue", "loss_value", "entropy"}
    with torch.no_grad():
        q = loss_module.target_qvalue_network_params(data["observation"], data["action"])
        v = model[2](data.clone())["state_value"]
        u = q.min(0).values - v
        expected = ((0.7 - (u < 0).float()).abs() * u.pow(2)).mean()
        log_prob = model[0].get_dist(data.clone()).log_prob(data["action"])
        weights = torch.exp(3.0 * u).clamp_max(100).reshape(log_prob.shape)
    torch.testing.assert_close(out["loss_value"], expected)
    torch.testing.assert_close(out["loss_actor"], -(weights * log_prob).mean())
    torch.testing.assert_close(out["entropy"], -log_prob.mean())
    # each loss trains its own network only
    loss_module(data.clone())["loss_value"].backward()
    assert all(p.grad is not None for p in model[2].parameters())
    assert all(p.grad is None for p in model[0].parameters())
    assert all(p.grad is None for p in loss_module.qvalue_network_params.flatten_keys().values())
