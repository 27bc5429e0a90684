"""torchrl's recurrent DQN tutorial, ported: an LSTM Q-policy collects CartPole frames with a
primer, a SliceSampler draws [B, T] slices, and DQNLoss runs the LSTM in recurrent mode."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer
from rl_trainers.envs import Compose, GymEnv, InitTracker, StepCounter, TransformedEnv
from rl_trainers.modules import MLP, EGreedyModule, LSTMModule, QValueModule, set_recurrent_mode
from rl_trainers.objectives import DQNLoss, SoftUpdate

SLICE, NUM_SLICES, GAMMA = 8, 4, 0.9


pytestmark = pytest.mark.usefixtures("one_thread")  # as every RNN test


def test_recurrent_dqn_tutorial_collect_sample_and_loss():
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("CartPole-v1"), Compose(StepCounter(), InitTracker()))
    env.set_seed(0)
    feature = Mod(MLP(out_features=8, num_cells=[16]), in_keys=["observation"], out_keys=["embed"])
    n_cells = feature(env.reset())["embed"].shape[-1]
    lstm = LSTMModule(
        input_size=n_cells, hidden_size=16, device="cpu", in_key="embed", out_key="embed"
    )
    env.append_transform(lstm.make_tensordict_primer())
    mlp = Mod(MLP(out_features=2, num_cells=[16]), in_keys=["embed"], out_keys=["action_value"])
    qval = QValueModule(action_space=None, spec=env.action_spec)
    stoch_policy = Seq(
        Seq(feature, lstm, mlp, qval), EGreedyModule(spec=env.action_spec, eps_init=0.2)
    )
    policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)
    policy(env.reset())
    loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True, gamma=GAMMA)
    updater = SoftUpdate(loss_fn, eps=0.95)

    collector = SyncDataCollector(env, stoch_policy, frames_per_batch=200, total_frames=400)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(1_000),
        sampler=SliceSampler(slice_len=SLICE, traj_key=("collector", "traj_ids")),
        batch_size=SLICE * NUM_SLICES,
    )
    optim = torch.optim.Adam(policy.parameters(), lr=1e-3)
    for i, data in enumerate(collector):
        assert data["recurrent_state_h"].shape == (200, 1, 16)
        starts = data["is_init"].squeeze(-1)
        assert starts[0] or i > 0
        assert not data["recurrent_state_h"][starts].any()  # the primer's zeros at resets
        rb.extend(data)
        s = rb.sample().reshape(NUM_SLICES, SLICE)
        if i == 0:
            # the weights have not moved: recurrent mode over the slices, started from the
            # stored states, gives back the Q-values the policy computed step by step
            with torch.no_grad():
                again = policy(s.exclude("embed", "action_value", "chosen_action_value").clone())
            torch.testing.assert_close(again["action_value"], s["action_value"])
            # DQN with a target copy of the same weights, by hand: the next Q-values of step
            # t are the collected ones of step t + 1; the last step's come from one LSTM step
            last_next = s["next"][:, -1].clone()
            with torch.no_grad():
                Seq(feature, lstm, mlp)(last_next)
            next_q = torch.cat([s["action_value"][:, 1:], last_next["action_value"][:, None]], 1)
            chosen = (s["action_value"] * s["action"]).sum(-1, keepdim=True)
            not_term = (~s["next", "terminated"]).float()
            target = s["next", "reward"] + GAMMA * not_term * next_q.max(-1, keepdim=True).values
            want = (chosen - target).square().mean()
        loss_vals = loss_fn(s)
        if i == 0:
            torch.testing.assert_close(loss_vals["loss"], want)
        loss_vals["loss"].backward()
        assert lstm.lstm.weight_hh_l0.grad.abs().sum() > 0
        optim.step()
        optim.zero_grad()
        updater.step()
    assert torch.isfinite(loss_vals["loss"])


def test_loss_under_the_context_manager_equals_the_recurrent_copy():
    torch.manual_seed(1)
    env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())
    env.set_seed(1)
    lstm = LSTMModule(input_size=4, hidden_size=8, in_key="observation", out_key="embed")
    env.append_transform(lstm.make_tensordict_primer())
    head = Mod(torch.nn.Linear(8, 2), in_keys=["embed"], out_keys=["action_value"])
    qval = QValueModule(spec=env.action_spec)
    policy = Seq(lstm, head, qval)
    data = env.rollout(40, policy, break_when_any_done=False)  # resets inside the batch
    assert data["is_init"][1:].any()
    batch = data.reshape(2, 20)
    copy_loss = DQNLoss(Seq(lstm.set_recurrent_mode(True), head, qval), delay_value=False)
    ctx_loss = DQNLoss(policy, delay_value=False)
    with set_recurrent_mode(True):
        want = ctx_loss(batch.clone())["loss"]
    torch.testing.assert_close(copy_loss(batch.clone())["loss"], want)
    # the step-by-step policy on [B, T] data treats each entry as its own step: not the same
    assert not torch.allclose(ctx_loss(batch.clone())["loss"], want)
