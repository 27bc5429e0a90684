"""torchrl's sota-implementations/iql/discrete_iql.py and utils.py, ported by renaming the
imports.

CartPole-v1 (``categorical_action_encoding=True``) with a few hundred frames: an actor over
``torch.distributions.Categorical``, a per-action Q-network and a value network,
``DiscreteIQLLoss(..., action_space="categorical")`` with ``HardUpdate``, the three losses
computed one by one (``actor_loss``, ``value_loss``, ``qvalue_loss``), their metadata gathered
in a TensorDict, and the priorities of a prioritized buffer set at
``loss_module.tensor_keys.priority`` from ``metadata["td_error"].max(0)``.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule
from torch.distributions import Categorical

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import Composite, LazyTensorStorage, TensorDictPrioritizedReplayBuffer
from rl_trainers.envs import Compose, DoubleToFloat, InitTracker, RewardSum, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, ProbabilisticActor, SafeModule
from rl_trainers.objectives import DiscreteIQLLoss, HardUpdate, group_optimizers


def make_env():
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    return TransformedEnv(env, Compose(InitTracker(), DoubleToFloat(), RewardSum()))


def make_discrete_iql_model(train_env, eval_env):
    n = train_env.action_spec_unbatched.space.n
    actor = ProbabilisticActor(
        spec=Composite(action=eval_env.action_spec_unbatched),
        module=SafeModule(
            MLP(num_cells=[32, 32], out_features=n), in_keys=["observation"], out_keys=["logits"]
        ),
        in_keys=["logits"],
        out_keys=["action"],
        distribution_class=Categorical,
        distribution_kwargs={},
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue = TensorDictModule(
        MLP(num_cells=[32, 32], out_features=n),
        in_keys=["observation"],
        out_keys=["state_action_value"],
    )
    value = TensorDictModule(
        MLP(num_cells=[32, 32], out_features=1), in_keys=["observation"], out_keys=["state_value"]
    )
    model = torch.nn.ModuleList([actor, qvalue, value])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.fake_tensordict()
        for net in model:
            net(td)
    return model


def make_discrete_loss(model):
    loss_module = DiscreteIQLLoss(
        model[0],
        model[1],
        value_network=model[2],
        loss_function="l2",
        temperature=3.0,
        expectile=0.7,
        action_space="categorical",
    )
    loss_module.make_value_estimator(gamma=0.99, device="cpu")
    return loss_module, HardUpdate(loss_module, value_network_update_interval=5)


def run(total_frames=600, frames_per_batch=200, init_random_frames=200, num_updates=10):
    torch.manual_seed(0)
    train_env, eval_env = make_env(), make_env()
    model = make_discrete_iql_model(train_env, eval_env)
    collector = SyncDataCollector(
        train_env,
        model[0],
        frames_per_batch=frames_per_batch,
        init_random_frames=init_random_frames,
        max_frames_per_traj=200,
        total_frames=total_frames,
    )
    replay_buffer = TensorDictPrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, batch_size=64, storage=LazyTensorStorage(10_000)
    )
    loss_module, target_net_updater = make_discrete_loss(model)
    optimizer = group_optimizers(
        *[
            torch.optim.Adam(list(p.flatten_keys().values()), lr=3e-4)
            for p in (
                loss_module.actor_network_params,
                loss_module.qvalue_network_params,
                loss_module.value_network_params,
            )
        ]
    )

    def update(sampled_tensordict):
        optimizer.zero_grad(set_to_none=True)
        actor_loss, _ = loss_module.actor_loss(sampled_tensordict)
        value_loss, _ = loss_module.value_loss(sampled_tensordict)
        q_loss, metadata = loss_module.qvalue_loss(sampled_tensordict)
        (actor_loss + value_loss + q_loss).backward()
        optimizer.step()
        target_net_updater.step()
        metadata.update({"actor_loss": actor_loss, "value_loss": value_loss, "q_loss": q_loss})
        return TensorDict(metadata).detach()

    logs = []
    collected_frames = 0
    for tensordict in collector:
        collector.update_policy_weights_()
        replay_buffer.extend(tensordict.reshape(-1))
        collected_frames += tensordict.numel()
        metrics = {}
        if collected_frames >= init_random_frames:
            for _ in range(num_updates):
                sampled_tensordict = replay_buffer.sample()
                metadata = update(sampled_tensordict)
                sampled_tensordict.set(
                    loss_module.tensor_keys.priority,
                    metadata.pop("td_error").detach().max(0).values,
                )
                replay_buffer.update_tensordict_priority(sampled_tensordict)
            metrics["train/q_loss"] = metadata["q_loss"].item()
            metrics["train/actor_loss"] = metadata["actor_loss"].item()
            metrics["train/value_loss"] = metadata["value_loss"].item()
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(200, model[0], break_when_any_done=True)
            metrics["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        logs.append(metrics)
    collector.shutdown()
    return logs


def test_discrete_iql_port_trains():
    logs = run()
    assert len(logs) == 3
    for metrics in logs:
        assert len(metrics) == 4 and all(math.isfinite(v) for v in metrics.values())


def test_discrete_q_is_read_at_the_batch_action():
    torch.manual_seed(0)
    env = make_env()
    model = make_discrete_iql_model(env, env)
    with torch.no_grad():
        data = env.rollout(16, model[0], break_when_any_done=False)
    loss_module, _ = make_discrete_loss(model)
    assert loss_module.tensor_keys.priority == "td_error"
    loss, metadata = loss_module.qvalue_loss(data.clone())
    assert metadata["td_error"].shape == (2, 16)
    with torch.no_grad():
        q = loss_module.qvalue_network_params(data["observation"])  # [2, 16, n]
        q_a = q.gather(-1, data["action"].reshape(1, 16, 1).expand(2, 16, 1))
        v_next = model[2](data["next"].clone())["state_value"]
        not_term = (~data["next", "terminated"]).float()
        target = data["next", "reward"] + 0.99 * not_term * v_next
    torch.testing.assert_close(metadata["td_error"], (q_a - target).abs().squeeze(-1))
    torch.testing.assert_close(loss, (q_a - target).pow(2).mean(1).sum())
    # the action key can be renamed (torchrl's set_keys(action=...)): Q is read there
    renamed = data.clone()
    renamed["other_action"] = renamed.pop("action")
    loss_module.set_keys(action="other_action")
    loss_renamed, _ = loss_module.qvalue_loss(renamed)
    torch.testing.assert_close(loss_renamed, loss)
