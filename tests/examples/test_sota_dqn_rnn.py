"""torchrl's recurrent DQN tutorial (tutorials/sphinx-tutorials/dqn_with_rnn.py), ported by
renaming the imports, on CartPole state observations (an MLP feature layer instead of the
ConvNet over pixels).

The tutorial's own construction: StepCounter/InitTracker/RewardScaling/ObservationNorm (with
``init_stats``), an LSTM (or GRU) module with its primer, a Q-value MLP with zeroed last bias,
QValueModule, an EGreedyModule, the loss policy built with ``lstm.set_recurrent_mode(True)``,
DQNLoss(delay_value=True) + SoftUpdate(eps=0.95), SyncDataCollector(frames_per_batch=50),
``rb.extend(data.unsqueeze(0).to_tensordict().cpu())``, 16 updates per batch, MODE rollouts.
"""

from __future__ import annotations

import math

import pytest
import torch
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential
from tensordict.nn import TensorDictSequential as Seq

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyMemmapStorage, TensorDictReplayBuffer
from rl_trainers.envs import (
    Compose,
    GymEnv,
    InitTracker,
    ObservationNorm,
    RewardScaling,
    StepCounter,
    TransformedEnv,
)
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, EGreedyModule, GRUModule, LSTMModule, QValueModule
from rl_trainers.objectives import DQNLoss, SoftUpdate

device = torch.device("cpu")


def build(rnn_class=LSTMModule, hidden_size=32):
    torch.manual_seed(0)
    env = TransformedEnv(
        GymEnv("CartPole-v1", device=device),
        Compose(
            StepCounter(),
            InitTracker(),
            RewardScaling(loc=0.0, scale=0.1),
            ObservationNorm(standard_normal=True, in_keys=["observation"]),
        ),
    )
    env.set_seed(0)
    env.transform[-1].init_stats(200, reduce_dim=0, cat_dim=0)
    feature = Mod(
        MLP(out_features=16, num_cells=[32], device=device),
        in_keys=["observation"],
        out_keys=["embed"],
    )
    n_cells = feature(env.reset())["embed"].shape[-1]
    rnn = rnn_class(
        input_size=n_cells, hidden_size=hidden_size, device=device, in_key="embed", out_key="embed"
    )
    env.append_transform(rnn.make_tensordict_primer())
    mlp = MLP(out_features=2, num_cells=[32], device=device)
    mlp[-1].bias.data.fill_(0.0)
    mlp = Mod(mlp, in_keys=["embed"], out_keys=["action_value"])
    qval = QValueModule(action_space=None, spec=env.action_spec)
    stoch_policy = Seq(feature, rnn, mlp, qval)
    exploration_module = EGreedyModule(
        annealing_num_steps=1_000_000, spec=env.action_spec, eps_init=0.2
    )
    stoch_policy = TensorDictSequential(stoch_policy, exploration_module)
    policy = Seq(feature, rnn.set_recurrent_mode(True), mlp, qval)
    policy(env.reset())
    return env, rnn, stoch_policy, exploration_module, policy


@pytest.mark.parametrize("rnn_class", [LSTMModule, GRUModule])
def test_recurrent_dqn_tutorial_runs(tmp_path, rnn_class):
    env, rnn, stoch_policy, exploration_module, policy = build(rnn_class)
    loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)
    updater = SoftUpdate(loss_fn, eps=0.95)
    optim = torch.optim.Adam(policy.parameters(), lr=3e-4)
    collector = SyncDataCollector(env, stoch_policy, frames_per_batch=50, total_frames=200)
    rb = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(20_000, scratch_dir=str(tmp_path)), batch_size=4, prefetch=10
    )
    utd, longest, traj_lens, losses = 16, 0, [], []
    for i, data in enumerate(collector):
        if i == 0:
            # the recurrent state travels with the data: primer entries, and the module's
            # outputs in "next"
            keys = set(data.keys(True, True))
            for key in rnn.in_keys[1:]:
                assert key in keys and ("next", key) in keys, key
            assert "is_init" in keys
        rb.extend(data.unsqueeze(0).to_tensordict().cpu())
        assert len(rb) == i + 1  # one [50] item per batch, as in torchrl
        for _ in range(utd):
            s = rb.sample().to(device, non_blocking=True)
            assert s.batch_size == (4, 50)  # 4 whole sequences for the recurrent loss
            loss_vals = loss_fn(s)
            loss_vals["loss"].backward()
            optim.step()
            optim.zero_grad()
            losses.append(loss_vals["loss"].item())
        longest = max(longest, data["step_count"].max().item())
        exploration_module.step(data.numel())
        updater.step()
        with set_exploration_type(ExplorationType.MODE), torch.no_grad():
            rollout = env.rollout(10000, stoch_policy)
            traj_lens.append(rollout.get(("next", "step_count")).max().item())
    collector.shutdown()
    assert len(losses) == 4 * utd and all(math.isfinite(v) for v in losses)
    assert len(traj_lens) == 4 and all(n >= 1 for n in traj_lens)
    assert longest >= 1
    # EGreedyModule.step annealed epsilon linearly from 0.2 towards eps_end=0.1 over 1M frames
    assert exploration_module.eps_end.item() == pytest.approx(0.1)
    torch.testing.assert_close(
        exploration_module.eps, torch.tensor(0.2 - 0.1 * 200 / 1_000_000), atol=1e-7, rtol=0
    )


def test_recurrent_loss_on_whole_batches_matches_a_step_by_step_unroll():
    """``[T]`` batches stored as items (``rb.add(data)``, the same as the tutorial's
    ``rb.extend(data.unsqueeze(0))``): samples are [B, T] and the recurrent-mode policy gives
    the values a step-by-step unroll of the same LSTM gives, the state zeroed where
    ``is_init``."""
    env, lstm, stoch_policy, _, policy = build(LSTMModule, hidden_size=8)
    collector = SyncDataCollector(env, stoch_policy, frames_per_batch=20, total_frames=40)
    rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(100), batch_size=2)
    for data in collector:
        rb.add(data.to_tensordict().cpu())
    collector.shutdown()
    s = rb.sample()
    assert s.shape == (2, 20)
    with torch.no_grad():
        values = policy(s.clone())["action_value"]
        feature, mlp = policy[0], policy[2]
        emb = feature(s.clone())["embed"]
        weights = lstm.lstm
        expected = torch.zeros_like(values)
        for b in range(2):
            h = s[b, 0]["recurrent_state_h"].unsqueeze(1)
            c = s[b, 0]["recurrent_state_c"].unsqueeze(1)
            for t in range(20):
                if s[b, t]["is_init"].item():
                    h, c = torch.zeros_like(h), torch.zeros_like(c)
                out, (h, c) = weights(emb[b, t].view(1, 1, -1), (h, c))
                expected[b, t] = mlp.module(out.view(-1))
    torch.testing.assert_close(values, expected, atol=1e-5, rtol=1e-5)
