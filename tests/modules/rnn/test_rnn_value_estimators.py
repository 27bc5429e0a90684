"""Value estimators and double DQN with a recurrent network in recurrent mode on [T] data (a
single-env batch): the next-step values come from the stored next states, as on [1, T]."""

from __future__ import annotations

import torch
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from rl_trainers.envs import GymEnv, InitTracker, TransformedEnv
from rl_trainers.modules import LSTMModule, QValueModule, set_recurrent_mode
from rl_trainers.objectives import DQNLoss
from rl_trainers.objectives.value import GAE


def _rollout(head_out: str, out_features: int):
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())
    env.set_seed(0)
    lstm = LSTMModule(input_size=4, hidden_size=8, in_key="observation", out_key="embed")
    env.append_transform(lstm.make_tensordict_primer())
    head = torch.nn.Linear(8, out_features)
    with torch.no_grad():
        head.weight.mul_(30.0)  # large values: a wrong recurrent state changes the argmax
    net = Seq(lstm, Mod(head, ["embed"], [head_out]))
    policy = Seq(net, QValueModule(spec=env.action_spec)) if head_out == "action_value" else net
    rand = env.action_spec

    def act(td):
        policy(td)
        if head_out != "action_value":
            td.set("action", rand.rand())
        return td

    with torch.no_grad():
        data = env.rollout(30, act, break_when_any_done=False)
    assert data["is_init"][1:].any()  # trajectories restart inside the batch
    return data, net, policy


def test_gae_next_values_of_a_recurrent_critic_on_T_data():
    data, critic, _ = _rollout("state_value", 1)
    gae = GAE(gamma=0.9, lmbda=0.95, value_network=critic)
    with set_recurrent_mode(True), torch.no_grad():
        flat = gae(data.clone())
        rows = gae(data.clone().unsqueeze(0))
    torch.testing.assert_close(flat["state_value"], data["state_value"])
    # in the first trajectory the next value of step t is the collected value of step t + 1
    # (after a reset inside the batch the next row runs on, as torchrl's stacked call does)
    k = int(data["is_init"][1:].squeeze(-1).nonzero()[0]) + 1
    torch.testing.assert_close(flat["next", "state_value"][: k - 1], data["state_value"][1:k])
    torch.testing.assert_close(flat["advantage"], rows["advantage"][0])


def test_double_dqn_with_a_recurrent_q_network_on_T_data():
    data, _, policy = _rollout("action_value", 2)
    loss = DQNLoss(policy, delay_value=False, double_dqn=True, gamma=0.9)
    seen, action_values = [], loss.value_network.action_values

    def recording(td):
        seen.append(td.batch_size)
        return action_values(td)

    loss.value_network.action_values = recording
    with set_recurrent_mode(True), torch.no_grad():
        flat = loss(data.clone())["loss"]
        rows = loss(data.clone().unsqueeze(0))["loss"]
    torch.testing.assert_close(flat, rows)
    # the online network read current and next steps as two 30-step sequences, not one of 60
    assert seen[0] == (2, 30) and seen[2] == (2, 30)
