"""Behaviour of each hook, with hand-computed expectations."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.core import Trainer, TrainerHookBase
from rl_trainers.hooks import (
    BatchSubSampler,
    ClearCudaCache,
    CountFramesLog,
    LogReward,
    LogScalar,
    LogValidationReward,
    OptimizerHook,
    Recorder,
    ReplayBufferTrainer,
    RewardNormalizer,
    SelectKeys,
    TargetNetUpdaterHook,
    UpdateWeights,
    UTDRHook,
    mask_batch,
)
from rl_trainers.hooks.evaluation import episode_returns, trajectory_returns


def trainer_for(collector, loss, **kw):
    kw.setdefault("total_frames", 10_000)
    kw.setdefault("optim_steps_per_batch", 1)
    return Trainer(collector=collector, frame_skip=1, loss_module=loss, progress_bar=False, **kw)


def seq_batch(B=2, T=5):
    return TensorDict(
        {
            "t": torch.arange(T).expand(B, T).clone(),
            "env": torch.arange(B).unsqueeze(-1).expand(B, T).clone(),
            "next": {"reward": torch.arange(B * T, dtype=torch.float32).reshape(B, T, 1)},
        },
        batch_size=[B, T],
    )


# ----------------------------------------------------------------------- data hooks
def test_batch_subsampler_flat_batch_is_a_permutation():
    flat = seq_batch().reshape(-1)  # 10 steps, rewards 0..9
    out = BatchSubSampler(batch_size=10)(flat)
    assert out.shape == (10,)
    assert sorted(out["next", "reward"].flatten().tolist()) == list(range(10))  # no repeats
    assert BatchSubSampler(batch_size=4)(flat).shape == (4,)
    assert BatchSubSampler(batch_size=32)(flat).shape == (10,)  # never more than the batch
    flat.set(("collector", "mask"), torch.arange(10) < 6)
    out = BatchSubSampler(batch_size=10)(flat)
    assert sorted(out["next", "reward"].flatten().tolist()) == list(range(6))


def test_batch_subsampler_default_takes_whole_trajectories():
    """torchrl: sub_traj_len <= 0 means the full length T -> [batch_size // T, T]."""
    torch.manual_seed(0)
    for sub_traj_len in (0, -1):
        out = BatchSubSampler(batch_size=10, sub_traj_len=sub_traj_len)(seq_batch(B=3, T=5))
        assert out.shape == (2, 5)
        assert (out["t"] == torch.arange(5)).all()  # each row a whole trajectory
        assert (out["env"] == out["env"][:, :1]).all()
    with pytest.raises(RuntimeError, match="batch_size=4 is smaller"):
        BatchSubSampler(batch_size=4)(seq_batch(T=5))


def test_batch_subsampler_honours_collector_mask():
    torch.manual_seed(0)
    batch = seq_batch(B=3, T=6)
    lengths = torch.tensor([6, 4, 2])
    batch.set(("collector", "mask"), torch.arange(6) < lengths.unsqueeze(-1))
    for _ in range(20):
        out = BatchSubSampler(batch_size=6)(batch)  # full length cut to the shortest row: 2
        assert out.shape == (3, 2) and out["collector", "mask"].all()
        out = BatchSubSampler(batch_size=8, min_sub_traj_len=4)(batch)  # rows >= 4 steps
        assert out.shape == (2, 4) and out["collector", "mask"].all()
        assert set(out["env"][:, 0].tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="no row"):
        BatchSubSampler(batch_size=8, min_sub_traj_len=7)(batch)


def test_mask_batch_selects_valid_steps():
    batch = seq_batch(B=2, T=5)
    assert mask_batch(batch) is batch  # no mask: unchanged
    batch.set(("collector", "mask"), torch.tensor([[True] * 5, [True, True] + [False] * 3]))
    out = mask_batch(batch)
    assert out.shape == (7,)
    assert out["next", "reward"].flatten().tolist() == [0, 1, 2, 3, 4, 5, 6]
    from rl_trainers.hooks import mask_batch as from_hooks

    assert from_hooks is mask_batch


def test_batch_subsampler_windows_are_contiguous():
    torch.manual_seed(0)
    out = BatchSubSampler(batch_size=12, sub_traj_len=3)(seq_batch(B=4, T=10))
    assert out.shape == (4, 3)
    t = out["t"]
    assert (t[:, 1:] - t[:, :-1] == 1).all()
    assert (out["env"] == out["env"][:, :1]).all()  # one env per window


def test_batch_subsampler_short_batches():
    out = BatchSubSampler(batch_size=8, sub_traj_len=10, min_sub_traj_len=4)(seq_batch(T=5))
    assert out.shape == (1, 5)
    with pytest.raises(ValueError, match="min_sub_traj_len=6"):
        BatchSubSampler(batch_size=8, sub_traj_len=10, min_sub_traj_len=6)(seq_batch(T=5))


def test_select_keys(collector, loss_module):
    trainer = trainer_for(collector, loss_module)
    SelectKeys(["observation", ("next", "reward")]).register(trainer)
    assert trainer._ops["batch_process"]
    out = trainer._ops["batch_process"][0](collector.make_batch())
    assert set(out.keys(include_nested=True, leaves_only=True)) == {
        "observation",
        ("next", "reward"),
    }
    with pytest.raises(KeyError):
        SelectKeys(["missing"])(collector.make_batch())


# ----------------------------------------------------------------------- logging hooks
def test_count_frames_log():
    hook = CountFramesLog(frame_skip=4, log_pbar=True)
    assert hook(seq_batch()) == {"n_frames": 40, "log_pbar": True}
    assert hook(seq_batch())["n_frames"] == 80
    hook2 = CountFramesLog()
    hook2.load_state_dict(hook.state_dict())
    assert hook2.frame_count == 80


def test_log_scalar_and_reductions():
    batch = seq_batch()  # rewards 0..9
    out = LogScalar()(batch)
    assert out["r_training"].item() == pytest.approx(4.5)
    assert out["r_training_std"].item() == pytest.approx(torch.arange(10.0).std().item())
    out = LogScalar(key="t", logname="tmax", reduction="max", include_std=False)(batch)
    assert set(out) == {"tmax", "log_pbar"} and out["tmax"].item() == 4
    batch.set(("collector", "mask"), torch.tensor([[True] * 5, [False] * 5]))
    assert LogScalar()(batch)["r_training"].item() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="reduction"):
        LogScalar(reduction="median")


def test_log_scalar_accepts_torchrl_signature():
    batch = seq_batch()  # rewards 0..9, key "t" 0..4
    hook = LogScalar(logname="r_training", log_pbar=True, reward_key=("next", "reward"))
    assert (hook.key, hook.logname, hook.log_pbar) == (("next", "reward"), "r_training", True)
    assert hook.reward_key == ("next", "reward")
    hook = LogScalar("r_training", True)  # torchrl's positional order
    assert (hook.key, hook.logname, hook.log_pbar) == (("next", "reward"), "r_training", True)
    assert hook(batch)["r_training"].item() == pytest.approx(4.5)
    hook = LogScalar("tmean", False, "t")
    assert (hook.key, hook.logname, hook.log_pbar) == ("t", "tmean", False)
    assert hook(batch)["tmean"].item() == pytest.approx(2.0)
    assert LogScalar(reward_key="t", logname="x").key == "t"
    with pytest.raises(TypeError, match="reward_key"):
        LogScalar(key="t", reward_key="env")
    with pytest.raises(KeyError, match="logname='r_eval'"):  # torchrl's one-argument form
        LogScalar("r_eval")(batch)


def test_log_reward_alias():
    hook = LogReward(log_pbar=True)
    assert isinstance(hook, LogScalar) and hook.key == ("next", "reward") and hook.log_pbar
    assert LogReward(reward_key="r").key == "r"


def test_utdr_hook(collector, loss_module, logger):
    trainer = trainer_for(
        collector,
        loss_module,
        total_frames=32,
        optim_steps_per_batch=4,
        logger=logger,
        log_interval=16,
    )
    UTDRHook(trainer).register(trainer)
    trainer.train()
    assert logger.values("utd_ratio") == [(16, 4 / 16), (32, 8 / 32)]


# ----------------------------------------------------------------------- optimizer hook
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1, 1, bias=False)
        self.b = nn.Linear(1, 1, bias=False)
        nn.init.constant_(self.a.weight, 1.0)
        nn.init.constant_(self.b.weight, 2.0)

    def forward(self, td):
        x = torch.ones(1, 1)
        # loss_a = a^2 * b (depends on both), loss_b = 3 b
        return TensorDict(loss_a=(self.a(x) ** 2 * self.b(x)).sum(), loss_b=3 * self.b(x).sum())


def test_optimizer_hooks_tied_to_components(collector):
    loss = TwoHeads()
    trainer = trainer_for(collector, loss)
    OptimizerHook(torch.optim.SGD(loss.a.parameters(), lr=0.1), "loss_a").register(trainer)
    OptimizerHook(torch.optim.SGD(loss.b.parameters(), lr=0.1), ["loss_b"]).register(trainer)
    assert {"optimizer", "optimizer_1"} <= set(trainer._modules)
    trainer.optim_steps(collector.make_batch())
    # d loss_a / d a = 2 a b = 4 -> a = 1 - 0.4; b only sees loss_b: d/db = 3 -> b = 2 - 0.3
    assert loss.a.weight.item() == pytest.approx(0.6)
    assert loss.b.weight.item() == pytest.approx(1.7)


def _ppo_cartpole_trainer(separate_optimizers: bool):
    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.envs import GymEnv
    from rl_trainers.modules import make_actor, make_value
    from rl_trainers.objectives import ClipPPOLoss
    from rl_trainers.objectives.value import GAE

    torch.manual_seed(0)
    env = GymEnv("CartPole-v1", num_envs=2)
    env.set_seed(0)
    actor = make_actor(env.observation_spec, env.action_spec, num_cells=(16,))
    critic = make_value(env.observation_spec, num_cells=(16,))
    loss = ClipPPOLoss(actor, critic)
    collector = SyncDataCollector(env, actor, frames_per_batch=32, total_frames=64)
    trainer = trainer_for(collector, loss, total_frames=64, optim_steps_per_batch=2)
    trainer.register_op("batch_process", GAE(gamma=0.99, lmbda=0.95, value_network=critic))
    if separate_optimizers:  # torchrl's pattern: one optimizer per network and loss term
        actor_opt = torch.optim.SGD(actor.parameters(), lr=0.1)
        OptimizerHook(actor_opt, ["loss_objective"]).register(trainer, name="actor")
        critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)
        OptimizerHook(critic_opt, ["loss_critic"]).register(trainer, name="critic")
    else:
        OptimizerHook(torch.optim.SGD(loss.parameters(), lr=0.1)).register(trainer)
    return trainer, loss


def test_separate_actor_and_critic_optimizers_train_ppo_as_one_optimizer_does():
    # each hook runs its own backward pass on the same loss output; with plain SGD, the
    # actor's on loss_objective and the critic's on loss_critic make the updates of one
    # optimizer on their sum
    separate, separate_loss = _ppo_cartpole_trainer(separate_optimizers=True)
    separate.train()
    one, one_loss = _ppo_cartpole_trainer(separate_optimizers=False)
    initial = [p.detach().clone() for p in one_loss.parameters()]
    one.train()
    assert separate._optim_count == one._optim_count == 4
    moved = [not torch.equal(a, p) for a, p in zip(initial, one_loss.parameters(), strict=True)]
    assert all(moved)
    for a, b in zip(separate_loss.parameters(), one_loss.parameters(), strict=True):
        # the same updates, computed along other paths: equal to float rounding
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


def test_optimizer_hook_sums_all_loss_entries_and_clips_norm(collector):
    loss = TwoHeads()
    trainer = trainer_for(collector, loss, clip_norm=0.5, clip_grad_norm=True)
    hook = OptimizerHook(torch.optim.SGD(loss.parameters(), lr=1.0))
    hook.register(trainer)
    losses = loss(None)
    hook(losses)
    # grads: a: 2ab = 4, b: a^2 + 3 = 4 -> norm sqrt(32), clipped to 0.5
    assert losses["grad_norm"].item() == pytest.approx(math.sqrt(32))
    step = 0.5 / math.sqrt(32) * 4
    assert loss.a.weight.item() == pytest.approx(1 - step, rel=1e-4)
    assert loss.b.weight.item() == pytest.approx(2 - step, rel=1e-4)


def test_optimizer_hook_clips_values(collector):
    loss = TwoHeads()
    trainer = trainer_for(collector, loss, clip_norm=0.25, clip_grad_norm=False)
    hook = OptimizerHook(torch.optim.SGD(loss.parameters(), lr=1.0))
    hook.register(trainer)
    hook(loss(None))
    assert loss.a.weight.item() == pytest.approx(0.75)
    assert loss.b.weight.item() == pytest.approx(1.75)


def test_optimizer_hook_errors():
    loss = TwoHeads()
    with pytest.raises(KeyError, match="'loss_c' is not in the loss TensorDict"):
        OptimizerHook(torch.optim.SGD(loss.parameters(), lr=1.0), "loss_c")(loss(None))
    with pytest.raises(ValueError, match="no entry starting with 'loss'"):
        OptimizerHook(torch.optim.SGD(loss.parameters(), lr=1.0))(TensorDict(x=torch.ones(())))
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        OptimizerHook(loss)


# ----------------------------------------------------------------------- weights hooks
def test_update_weights_interval(collector, loss_module):
    trainer = trainer_for(collector, loss_module, total_frames=16 * 5)
    hook = UpdateWeights(collector, update_weights_interval=2)
    hook.register(trainer)
    trainer.train()
    assert collector.weight_updates == 2 and hook.state_dict() == {"counter": 5}
    with pytest.raises(TypeError, match="update_policy_weights_"):
        UpdateWeights(object(), 1)


def test_target_net_updater_hook(collector, loss_module):
    class Updater:
        steps = 0

        def step(self):
            self.steps += 1

    up = Updater()
    trainer = trainer_for(collector, loss_module, total_frames=32, optim_steps_per_batch=3)
    TargetNetUpdaterHook(up).register(trainer)
    trainer.train()
    assert up.steps == 6
    with pytest.raises(TypeError, match="step"):
        TargetNetUpdaterHook(object())


def test_clear_cuda_cache_counts():
    hook = ClearCudaCache(2)
    hook()
    hook()
    assert hook.state_dict() == {"count": 2}
    with pytest.raises(ValueError):
        ClearCudaCache(0)


# ----------------------------------------------------------------------- normaliser
def test_reward_normalizer_statistics_and_output():
    norm = RewardNormalizer(decay=0.5, scale=2.0, eps=1e-8)
    b1 = TensorDict({"next": {"reward": torch.tensor([[1.0], [3.0]])}}, batch_size=[2])
    b2 = TensorDict({"next": {"reward": torch.tensor([[5.0], [5.0]])}}, batch_size=[2])
    norm.update_reward_stats(b1)
    norm.update_reward_stats(b2)
    # S = 0.5*4 + 10 = 12, Q = 0.5*10 + 50 = 55, N = 0.5*2 + 2 = 3
    mean, std = norm.stats()
    assert mean.item() == pytest.approx(4.0)
    assert std.item() == pytest.approx(math.sqrt(55 / 3 - 16))
    out = norm.normalize_reward(b1)
    expected = 2.0 * (torch.tensor([[1.0], [3.0]]) - 4.0) / math.sqrt(55 / 3 - 16)
    assert torch.allclose(out["next", "reward"], expected)
    assert b1["next", "reward"][0].item() == 1.0  # input untouched
    other = RewardNormalizer()
    other.load_state_dict(norm.state_dict())
    assert torch.equal(other.stats()[0], mean)


def test_reward_normalizer_eps_none_is_dtype_eps():
    finfo_eps = torch.finfo(torch.get_default_dtype()).eps
    assert RewardNormalizer(eps=None).eps == finfo_eps
    assert RewardNormalizer().eps == finfo_eps  # torchrl's default
    norm = RewardNormalizer(eps=None)
    constant = TensorDict({"next": {"reward": torch.full((4, 1), 2.0)}}, batch_size=[4])
    norm.update_reward_stats(constant)
    assert norm.stats()[1].item() == pytest.approx(math.sqrt(finfo_eps))  # variance 0 -> eps
    assert torch.isfinite(norm.normalize_reward(constant)["next", "reward"]).all()


def test_reward_normalizer_before_stats_raises():
    with pytest.raises(RuntimeError, match="update_reward_stats"):
        RewardNormalizer().normalize_reward(seq_batch())


def test_reward_normalizer_in_loop_does_not_compound(collector):
    seen = []

    def loss(td):
        seen.append(td["next", "reward"].clone())
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = trainer_for(collector, loss, total_frames=16, optim_steps_per_batch=2)
    RewardNormalizer().register(trainer)
    trainer.train()
    assert torch.equal(seen[0], seen[1])


# ----------------------------------------------------------------------- replay buffer
class FakeBuffer:
    def __init__(self):
        self.data = []
        self.priorities = []
        self.sampler = type("PrioritizedSampler", (), {})()

    def extend(self, td):
        self.data.append(td)

    def sample(self, batch_size=None):
        return torch.cat([d.reshape(-1) for d in self.data])[: batch_size or 4]

    def update_tensordict_priority(self, td):
        self.priorities.append(td["td_error"])

    def state_dict(self):
        return {"n": len(self.data)}

    def load_state_dict(self, sd):
        self.n_loaded = sd["n"]


def test_replay_buffer_trainer_with_fake(collector):
    rb = FakeBuffer()
    seen = []

    def loss(td):
        seen.append(td.shape)
        td.set("td_error", torch.ones(td.shape))
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = trainer_for(collector, loss, total_frames=32, optim_steps_per_batch=2)
    ReplayBufferTrainer(rb, batch_size=5, flatten_tensordicts=True).register(trainer)
    trainer.train()
    assert [d.shape for d in rb.data] == [(16,), (16,)]
    assert seen == [(5,)] * 4 and len(rb.priorities) == 4
    assert trainer.state_dict()["modules"]["replay_buffer"] == {"replay_buffer": {"n": 2}}


def test_replay_buffer_trainer_max_dims_pads():
    rb = FakeBuffer()
    ReplayBufferTrainer(rb, max_dims=(7,)).extend(seq_batch(B=2, T=5))
    assert rb.data[0].shape == (2, 7)
    assert (rb.data[0]["next", "reward"][:, 5:] == 0).all()


def test_replay_buffer_trainer_stores_trajectories_unless_flattening():
    data = pytest.importorskip("rl_trainers.data")

    def buffer(**storage_kwargs):
        storage = data.LazyTensorStorage(100, **storage_kwargs)
        return data.TensorDictReplayBuffer(storage=storage, batch_size=3)

    trajectories, transitions, flattened = buffer(), buffer(ndim=2), buffer()
    ReplayBufferTrainer(trajectories).extend(seq_batch(B=2, T=5))  # torchrl's default
    ReplayBufferTrainer(transitions).extend(seq_batch(B=2, T=5))
    ReplayBufferTrainer(flattened, flatten_tensordicts=True).extend(seq_batch(B=2, T=5))
    assert len(trajectories) == 2 and trajectories.sample().batch_size == (3, 5)
    assert len(transitions) == len(flattened) == 10
    assert transitions.sample().batch_size == flattened.sample().batch_size == (3,)


def test_replay_buffer_trainer_with_real_buffer(collector, loss_module, tmp_path):
    data = pytest.importorskip("rl_trainers.data")
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(1000), batch_size=8)
    trainer = trainer_for(
        collector,
        loss_module,
        total_frames=48,
        optim_steps_per_batch=2,
        optimizer=torch.optim.Adam(loss_module.parameters()),
        save_trainer_file=tmp_path / "c.pt",
    )
    hook = ReplayBufferTrainer(rb, flatten_tensordicts=True)
    hook.register(trainer)
    assert not trainer._ops["post_loss"]  # not prioritized: no priority updates
    trainer.train()
    assert len(rb) == 48
    assert hook.sample().shape == (8,)
    rb2 = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(1000), batch_size=8)
    t2 = trainer_for(
        type(collector)(),
        type(loss_module)(),
        total_frames=48,
        optimizer=torch.optim.Adam(loss_module.parameters()),
    )
    ReplayBufferTrainer(rb2, flatten_tensordicts=True).register(t2)
    t2.load_from_file(tmp_path / "c.pt")
    assert len(rb2) == 48


def test_replay_buffer_trainer_prioritized_real(collector):
    data = pytest.importorskip("rl_trainers.data")
    rb = data.TensorDictReplayBuffer(
        storage=data.LazyTensorStorage(100),
        sampler=data.PrioritizedSampler(100, alpha=1.0, beta=1.0),
        batch_size=4,
    )

    def loss(td):
        td.set("td_error", torch.full(td.shape, 5.0))
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = trainer_for(collector, loss, total_frames=16, optim_steps_per_batch=1)
    ReplayBufferTrainer(rb, flatten_tensordicts=True).register(trainer)
    assert trainer._ops["post_loss"]
    trainer.train()
    assert "_weight" in rb.sample().keys()


@pytest.mark.parametrize("kind", ["slice", "ensemble"])
def test_replay_buffer_trainer_updates_priorities_of_other_prioritized_samplers(collector, kind):
    data = pytest.importorskip("rl_trainers.data")
    if kind == "slice":
        sampler = data.PrioritizedSliceSampler(100, alpha=1.0, beta=1.0, slice_len=2)
        rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100), sampler=sampler)
    else:
        prioritized = data.TensorDictReplayBuffer(
            storage=data.LazyTensorStorage(100), sampler=data.PrioritizedSampler(100, 1.0, 1.0)
        )
        rb = data.ReplayBufferEnsemble(
            prioritized, data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100))
        )
    trainer = trainer_for(collector, lambda td: td, total_frames=16)
    ReplayBufferTrainer(rb, batch_size=4).register(trainer)
    assert trainer._ops["post_loss"]


# ----------------------------------------------------------------------- evaluation
def test_episode_returns_hand_computed():
    reward = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]]).unsqueeze(-1)
    done = torch.tensor([[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]], dtype=torch.bool).unsqueeze(-1)
    td = TensorDict({"next": {"reward": reward, "done": done}}, batch_size=[2, 5])
    rets, lens = episode_returns(td)
    assert rets.tolist() == [3.0, 12.0, 3.0]
    assert lens.tolist() == [2.0, 3.0, 3.0]


class CountingEnv:
    """Reward 1 per step; episodes last 4 steps. Records the interaction type."""

    def __init__(self):
        self.modes = []

    def rollout(self, max_steps, policy=None, auto_reset=True, break_when_any_done=True):
        from tensordict.nn import interaction_type

        self.modes.append(interaction_type())
        td = TensorDict({"observation": torch.zeros(max_steps, 1)}, batch_size=[max_steps])
        td = policy(td)
        done = (torch.arange(max_steps) % 4 == 3).unsqueeze(-1)
        td.set(("next", "reward"), torch.ones(max_steps, 1) + td["action"])
        td.set(("next", "done"), done)
        return td


def test_log_validation_reward_with_fake_env():
    env = CountingEnv()
    policy = nn.Linear(1, 1)
    nn.init.zeros_(policy.weight)
    nn.init.zeros_(policy.bias)

    def act(td):
        return td.set("action", policy(td["observation"]))

    hook = LogValidationReward(
        record_interval=2, record_frames=10, policy_exploration=act, environment=env, suffix="x"
    )
    out = hook()
    assert out["r_evaluation"] == pytest.approx(1.0)  # torchrl: suffix names the video only
    assert out["eval/episode_return_mean_x"] == pytest.approx(4.0)
    assert out["eval/episode_return_std_x"] == 0.0
    assert out["eval/num_episodes_x"] == 2  # 10 steps: two complete 4-step episodes
    assert hook() is None and hook() is not None
    from tensordict.nn import InteractionType

    assert env.modes == [InteractionType.DETERMINISTIC] * 2
    assert Recorder is LogValidationReward


def test_trajectory_returns_include_the_cut_trajectory():
    reward = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]]).unsqueeze(-1)
    done = torch.tensor([[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]], dtype=torch.bool).unsqueeze(-1)
    td = TensorDict({"next": {"reward": reward, "done": done}}, batch_size=[2, 5])
    assert trajectory_returns(td).tolist() == [3.0, 12.0, 3.0, 2.0]
    assert trajectory_returns(td[1]).tolist() == [3.0, 2.0]


@pytest.mark.parametrize("frame_skip", [1, 2])
def test_log_validation_reward_torchrl_keys(frame_skip):
    """torchrl: out_keys[reward] = mean reward / frame_skip, "total_" + it = mean return."""
    env = CountingEnv()  # reward 1 per step, 4-step episodes

    def act(td):
        return td.set("action", torch.zeros(*td.batch_size, 1))

    hook = Recorder(
        record_interval=1,
        record_frames=10,  # 10 env steps (torchrl's max_steps): episodes of 4, 4, a cut 2
        frame_skip=frame_skip,
        policy_exploration=act,
        environment=env,
        log_keys=[("next", "reward")],
        out_keys={("next", "reward"): "rewards"},
        log_pbar=True,
    )
    out = hook()
    assert out["rewards"] == pytest.approx(1.0 / frame_skip)
    assert out["total_rewards"] == pytest.approx(10 / 3)
    assert out["total_rewards"].dtype == out["rewards"].dtype == torch.float32
    assert out["eval/episode_return_mean"] == pytest.approx(4.0)  # complete episodes only
    assert out["log_pbar"] is True
    default = LogValidationReward(
        record_interval=1, record_frames=8, policy_exploration=act, environment=env
    )()
    assert default["r_evaluation"] == pytest.approx(1.0)
    assert default["total_r_evaluation"] == pytest.approx(4.0)
    assert default["log_pbar"] is False


def test_log_validation_reward_with_gym_env(collector, logger):
    envs = pytest.importorskip("rl_trainers.envs")
    env = envs.GymEnv("CartPole-v1")
    env.set_seed(0)
    calls = []

    def policy(td):
        calls.append(1)
        action = torch.zeros(*td.batch_size, 2)
        action[..., 0] = 1.0  # always push left: short episodes
        return td.set("action", action)

    hook = LogValidationReward(
        record_interval=1, record_frames=100, policy_exploration=policy, environment=env
    )
    trainer = trainer_for(
        collector,
        lambda td: None,
        total_frames=16,
        optim_steps_per_batch=0,
        logger=logger,
        log_interval=16,
    )
    hook.register(trainer)
    trainer.train()
    ((step, mean),) = logger.values("eval/episode_return_mean")
    assert step == 16 and 5 <= mean <= 20  # constant push topples the pole quickly
    assert logger.values("r_evaluation") == [(16, 1.0)]
    assert len(calls) == 100


def test_hook_base_defaults():
    class NoState(TrainerHookBase):
        def register(self, trainer, name):
            pass

    hook = NoState()
    assert hook.state_dict() == {}
    hook.load_state_dict({})
    with pytest.raises(ValueError, match="NoState defines no load_state_dict"):
        hook.load_state_dict({"x": 1})


def test_hook_without_register_goes_through_register_op():
    """torchrl's base class does not force ``register``: such a hook is placed with
    ``register_op``, and calling the missing ``register`` says so."""

    class Counter(TrainerHookBase):
        def __init__(self):
            self.calls = 0

        def __call__(self):
            self.calls += 1

    hook = Counter()
    with pytest.raises(
        NotImplementedError, match=r"Counter does not define register\(\).*register_op"
    ):
        hook.register(None, "counter")


@pytest.mark.parametrize("scale", [1e-3, 10.0])
def test_clip_grad_norm_matches_torch_bitwise(scale):
    from rl_trainers.core.loop import clip_grad_norm_

    shapes = [(64, 4), (64,), (64, 64), (64,), (2, 64), (2,)]

    def params_with_grads():
        gen = torch.Generator().manual_seed(1)
        params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen) * scale
        return params

    theirs, ours = params_with_grads(), params_with_grads()
    norm_theirs = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
    norm_ours = clip_grad_norm_(ours, 0.5)
    assert torch.equal(norm_ours, norm_theirs)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    clipped = float(torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in ours])))
    assert clipped == pytest.approx(min(float(norm_ours), 0.5), rel=1e-5)


def test_clip_grad_norm_mixed_dtypes_falls_back_to_torch():
    from rl_trainers.core.loop import clip_grad_norm_

    a = torch.nn.Parameter(torch.zeros(3))
    b = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    a.grad = torch.tensor([3.0, 0.0, 0.0])
    b.grad = torch.tensor([4.0, 0.0], dtype=torch.float64)
    norm = clip_grad_norm_([a, b], 1.0)
    assert float(norm) == pytest.approx(5.0)
    assert float(a.grad[0]) == pytest.approx(0.6, rel=1e-5)
    assert float(b.grad[0]) == pytest.approx(0.8, rel=1e-5)


def test_a_replay_buffer_hook_without_a_buffer_is_refused_when_built():
    with pytest.raises(TypeError, match="NoneType has no extend.. and sample.. methods"):
        ReplayBufferTrainer(None)
