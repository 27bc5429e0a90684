"""torchrl's "Get started with TorchRL's modules" (getting-started-1), ported.

The tutorial's code runs as written with ``torchrl`` replaced by ``rl_trainers``; the
asserts check what the tutorial says each policy writes. One documented difference: the
log-probability of ``ProbabilisticActor(return_log_prob=True)`` is ``"sample_log_prob"``
(torchrl: ``"action_log_prob"``), see docs/porting.md.
"""

from __future__ import annotations

import torch
from torch.distributions import Normal

FLAGS = {"done", "terminated", "truncated"}


def test_getting_started_1_policies_exploration_and_qvalue_actors():
    torch.manual_seed(0)
    from tensordict.nn import TensorDictModule

    from rl_trainers.envs import GymEnv

    env = GymEnv("Pendulum-v1")
    module = torch.nn.LazyLinear(out_features=env.action_spec.shape[-1])
    policy = TensorDictModule(
        module,
        in_keys=["observation"],
        out_keys=["action"],
    )
    rollout = env.rollout(max_steps=10, policy=policy)
    print(rollout)
    assert rollout.batch_size == (10,) and rollout["action"].shape == (10, 1)
    torch.testing.assert_close(rollout["action"], module(rollout["observation"]))

    from rl_trainers.modules import Actor

    policy = Actor(module)
    rollout = env.rollout(max_steps=10, policy=policy)
    print(rollout)
    # Actor's defaults: reads "observation", writes "action"
    assert policy.in_keys == ["observation"] and policy.out_keys == ["action"]
    torch.testing.assert_close(rollout["action"], module(rollout["observation"]))

    from rl_trainers.modules import MLP

    module = MLP(
        out_features=env.action_spec.shape[-1],
        num_cells=[32, 64],
        activation_class=torch.nn.Tanh,
    )
    policy = Actor(module)
    rollout = env.rollout(max_steps=10, policy=policy)
    assert rollout["action"].shape == (10, 1)

    from tensordict.nn.distributions import NormalParamExtractor

    from rl_trainers.modules import ProbabilisticActor

    backbone = MLP(in_features=3, out_features=2)
    extractor = NormalParamExtractor()
    module = torch.nn.Sequential(backbone, extractor)
    td_module = TensorDictModule(module, in_keys=["observation"], out_keys=["loc", "scale"])
    policy = ProbabilisticActor(
        td_module,
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=Normal,
        return_log_prob=True,
    )

    rollout = env.rollout(max_steps=10, policy=policy)
    print(rollout)
    # the log-probability and the distribution's parameters are written too
    assert {"loc", "scale", "sample_log_prob"} <= set(rollout.keys())
    assert (rollout["scale"] > 0).all()
    want = Normal(rollout["loc"], rollout["scale"]).log_prob(rollout["action"])
    torch.testing.assert_close(
        rollout["sample_log_prob"], want.reshape_as(rollout["sample_log_prob"])
    )

    from rl_trainers.envs.utils import ExplorationType, set_exploration_type

    with set_exploration_type(ExplorationType.MEAN):
        # takes the mean as action
        rollout = env.rollout(max_steps=10, policy=policy)
    torch.testing.assert_close(rollout["action"], rollout["loc"])
    with set_exploration_type(ExplorationType.RANDOM):
        # Samples actions according to the dist
        rollout = env.rollout(max_steps=10, policy=policy)
    assert not torch.allclose(rollout["action"], rollout["loc"])

    from tensordict.nn import TensorDictSequential

    from rl_trainers.modules import EGreedyModule

    policy = Actor(MLP(3, 1, num_cells=[32, 64]))
    exploration_module = EGreedyModule(spec=env.action_spec, annealing_num_steps=1000, eps_init=0.5)
    exploration_policy = TensorDictSequential(policy, exploration_module)

    with set_exploration_type(ExplorationType.MEAN):
        # Turns off exploration
        rollout = env.rollout(max_steps=10, policy=exploration_policy)
    torch.testing.assert_close(rollout["action"], policy(rollout.clone())["action"])
    with set_exploration_type(ExplorationType.RANDOM):
        # Turns on exploration
        rollout = env.rollout(max_steps=10, policy=exploration_policy)
    greedy = policy(rollout.exclude("action"))["action"]
    assert not torch.allclose(rollout["action"], greedy)  # eps=0.5: some actions are random
    assert env.action_spec.is_in(rollout["action"])

    env = GymEnv("CartPole-v1")
    print(env.action_spec)
    assert env.action_spec.shape == (2,) and env.action_spec.n == 2  # one-hot actions

    num_actions = 2
    value_net = TensorDictModule(
        MLP(out_features=num_actions, num_cells=[32, 32]),
        in_keys=["observation"],
        out_keys=["action_value"],
    )

    from rl_trainers.modules import QValueModule

    policy = TensorDictSequential(
        value_net,  # writes action values in our tensordict
        QValueModule(action_space=env.action_spec),  # Reads the "action_value" entry by default
    )

    rollout = env.rollout(max_steps=3, policy=policy)
    print(rollout)
    # "action_value" and "chosen_action_value" entries, the action is the argmax, one-hot
    assert rollout["action_value"].shape == (3, 2)
    assert rollout["chosen_action_value"].shape == (3, 1)
    argmax = rollout["action_value"].argmax(-1)
    assert torch.equal(rollout["action"].long().argmax(-1), argmax)
    assert (rollout["action"].sum(-1) == 1).all()
    torch.testing.assert_close(
        rollout["chosen_action_value"].squeeze(-1), rollout["action_value"].max(-1).values
    )

    policy_explore = TensorDictSequential(policy, EGreedyModule(env.action_spec))

    with set_exploration_type(ExplorationType.RANDOM):
        rollout_explore = env.rollout(max_steps=3, policy=policy_explore)
    assert rollout_explore["action"].shape == (3, 2)
    assert env.action_spec.is_in(rollout_explore["action"])
