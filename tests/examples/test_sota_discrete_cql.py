"""torchrl's sota-implementations/cql/discrete_cql_online.py and utils.py, ported by
renaming the imports.

CartPole-v1 with a few hundred frames over two ParallelEnv workers: a QValueActor whose
spec is the batched ``Composite(action=train_env.action_spec)``, EGreedyModule, and
``DiscreteCQLLoss`` (``loss_qvalue + loss_cql`` optimised together, per-update loss
TensorDicts stacked and averaged for logging).
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from tensordict.nn import TensorDictSequential
from torch import optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import CompositeSpec, LazyTensorStorage, TensorDictReplayBuffer
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
from rl_trainers.modules import MLP, EGreedyModule, QValueActor
from rl_trainers.objectives import DiscreteCQLLoss, SoftUpdate


def make_environment(num_envs=2):
    maker = functools.partial(GymEnv, "CartPole-v1")
    transforms = Compose(StepCounter(max_steps=200), InitTracker(), DoubleToFloat(), RewardSum())
    train_env = TransformedEnv(ParallelEnv(num_envs, EnvCreator(maker)), transforms)
    eval_env = TransformedEnv(GymEnv("CartPole-v1"), train_env.transform.clone())
    return train_env, eval_env


def make_discretecql_model(train_env, eval_env):
    action_spec = train_env.action_spec
    qvalue_module = QValueActor(
        module=MLP(num_cells=[32, 32], out_features=action_spec.shape[-1]),
        spec=CompositeSpec(action=action_spec),
        in_keys=["observation"],
    )
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        qvalue_module(eval_env.reset())
    greedy_module = EGreedyModule(
        annealing_num_steps=1000, eps_init=1.0, eps_end=0.05, spec=action_spec
    )
    return qvalue_module, TensorDictSequential(qvalue_module, greedy_module)


def run(total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=10):
    torch.manual_seed(0)
    train_env, eval_env = make_environment()
    model, explore_policy = make_discretecql_model(train_env, eval_env)
    loss_module = DiscreteCQLLoss(model, loss_function="l2", delay_value=True)
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = SoftUpdate(loss_module, eps=0.995)
    optimizer = optim.Adam(loss_module.parameters(), lr=1e-3)
    collector = SyncDataCollector(
        train_env,
        explore_policy,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        init_random_frames=init_random_frames,
    )
    replay_buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(10_000), batch_size=64)

    def update(sampled_tensordict):
        optimizer.zero_grad(set_to_none=True)
        loss_dict = loss_module(sampled_tensordict)
        (loss_dict["loss_qvalue"] + loss_dict["loss_cql"]).backward()
        optimizer.step()
        target_net_updater.step()
        return loss_dict.detach()

    collected_frames = 0
    logs = []
    for tensordict in collector:
        explore_policy[1].step(tensordict.numel())
        collector.update_policy_weights_()
        tensordict = tensordict.reshape(-1)
        replay_buffer.extend(tensordict)
        collected_frames += tensordict.numel()
        metrics = {}
        if collected_frames >= init_random_frames:
            tds = [update(replay_buffer.sample()).clone() for _ in range(num_updates)]
            tds = torch.stack(tds, dim=0).mean()
            metrics["train/q_loss"] = tds["loss_qvalue"].item()
            metrics["train/cql_loss"] = tds["loss_cql"].item()
            metrics["train/epsilon"] = float(explore_policy[1].eps)
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(200, model, break_when_any_done=True)
            metrics["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        logs.append(metrics)
    collector.shutdown()
    train_env.close()
    return logs


def test_discrete_cql_port_trains():
    logs = run()
    assert len(logs) == 3
    for metrics in logs:
        assert set(metrics) == {"train/q_loss", "train/cql_loss", "train/epsilon", "eval/reward"}
        assert all(math.isfinite(v) for v in metrics.values())
    # the conservative term is a log-sum-exp gap: positive, and optimised down
    assert 0 < logs[-1]["train/cql_loss"] < logs[0]["train/cql_loss"]


def test_cql_terms_match_their_definition():
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("CartPole-v1"), DoubleToFloat())
    model, explore = make_discretecql_model(env, env)
    with torch.no_grad():
        data = env.rollout(16, explore, break_when_any_done=False)
    loss = DiscreteCQLLoss(model, gamma=0.9)
    out = loss(data.clone())
    assert set(out.keys()) == {"loss_qvalue", "loss_cql", "td_error", "pred_value", "target_value"}
    with torch.no_grad():
        q = model.action_values(data)
        q_a = (q * data["action"]).sum(-1, keepdim=True)
        nxt = model.action_values(data["next"]).max(-1, keepdim=True).values
        not_term = (~data["next", "terminated"]).float()
        target = data["next", "reward"] + 0.9 * not_term * nxt
    torch.testing.assert_close(out["loss_qvalue"], 0.5 * (q_a - target).pow(2).mean())
    torch.testing.assert_close(out["loss_cql"], (torch.logsumexp(q, -1, keepdim=True) - q_a).mean())
    # the split API: cql_loss needs value_loss's predicted values first
    with pytest.raises(KeyError, match="call value_loss before cql_loss"):
        loss.cql_loss(data.clone())
    batch = data.clone()
    value_loss, metadata = loss.value_loss(batch)
    cql_loss, _ = loss.cql_loss(batch)
    torch.testing.assert_close(value_loss, out["loss_qvalue"])
    torch.testing.assert_close(cql_loss, out["loss_cql"])
    assert batch["td_error"].shape == (16,)
