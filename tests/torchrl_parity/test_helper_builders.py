"""torchrl's ``make_*`` helper forms (``rl_trainers.trainers.helpers``), driven by a
Namespace, a dict or an OmegaConf config."""

from __future__ import annotations

import argparse

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from rl_trainers.collectors import (
    MultiaSyncDataCollector,
    MultiSyncDataCollector,
    SyncDataCollector,
)
from rl_trainers.data import PrioritizedSampler, RandomSampler
from rl_trainers.modules import MLP, EGreedyWrapper, QValueActor
from rl_trainers.objectives import DQNLoss, HardUpdate, SoftUpdate
from rl_trainers.trainers import Trainer
from rl_trainers.trainers.helpers import (
    correct_for_frame_skip,
    get_stats_random_rollout,
    make_collector_offpolicy,
    make_collector_onpolicy,
    make_dqn_loss,
    make_replay_buffer,
    make_target_updater,
    make_trainer,
    parallel_env_constructor,
    sync_async_collector,
    sync_sync_collector,
    transformed_env_constructor,
)

BASE = {
    "env_name": "CartPole-v1",
    "frames_per_batch": 16,
    "total_frames": 64,
    "seed": 0,
    "loss": "double",
    "gamma": 0.9,
    "batch_size": 8,
    "buffer_size": 100,
    "optim_steps_per_batch": 2,
    "lr": 1e-3,
    "lr_scheduler": "",
    "record_interval": 2,
    "record_frames": 20,
    "log_interval": 16,
    "init_env_steps": 50,
}


def _ns(**kw):
    return argparse.Namespace(**{**BASE, **kw})


@pytest.fixture(params=["namespace", "dict", "omegaconf"])
def cfg(request):
    if request.param == "namespace":
        return _ns()
    if request.param == "dict":
        return dict(BASE)
    return OmegaConf.create(BASE)


def _actor(env):
    net = MLP(out_features=env.action_spec.shape[-1], num_cells=[16], activation_class=nn.ReLU)
    actor = QValueActor(net, in_keys=["observation"], spec=env.action_spec)
    actor(env.fake_tensordict())
    return actor


def test_correct_for_frame_skip_divides_frame_counts():
    cfg = _ns(frame_skip=4, init_random_frames=100, noops=8)
    assert correct_for_frame_skip(cfg) is cfg
    assert (cfg.total_frames, cfg.frames_per_batch, cfg.record_frames) == (16, 4, 5)
    assert (cfg.init_random_frames, cfg.noops, cfg.batch_size) == (25, 2, 8)
    d = {**BASE, "frame_skip": 2}
    assert correct_for_frame_skip(d)["total_frames"] == 32
    with pytest.raises(ValueError, match="frame_skip must be >= 1, got 0"):
        correct_for_frame_skip(_ns(frame_skip=0))


def test_transformed_env_constructor_builds_the_configured_env(cfg):
    make = transformed_env_constructor(cfg, stats={"loc": 1.0, "scale": 2.0})
    env = make()
    td = env.reset()
    names = [type(t).__name__ for t in env.transform]
    assert names == ["ObservationNorm", "RewardSum", "StepCounter"]
    assert td["observation"].shape == (4,)
    rollout = env.rollout(5)
    assert "episode_reward" in rollout["next"].keys()
    env.close()


def test_transformed_env_constructor_reward_scaling_and_step_limit():
    env = transformed_env_constructor(_ns(reward_scaling=0.5, max_frames_per_traj=3))()
    rollout = env.rollout(10, break_when_any_done=True)
    assert rollout.shape == (3,)  # StepCounter truncates after 3 steps
    assert torch.allclose(rollout["next", "reward"], torch.full((3, 1), 0.5))
    assert rollout["next", "truncated"][-1].item()
    env.close()


def test_transformed_env_constructor_video_tag_records_a_state_env(tmp_path):
    """torchrl renders pixels when a video tag is given, so the recorder env logs a video
    while the policy still reads the state observation."""
    from rl_trainers.record.loggers.csv import CSVLogger

    logger = CSVLogger("exp", log_dir=str(tmp_path))
    env = transformed_env_constructor(_ns(), video_tag="eval", logger=logger)()
    rollout = env.rollout(3)
    assert rollout["observation"].shape == (3, 4) and "pixels" in rollout.keys()
    env.transform[0].dump()
    env.close()
    assert [p.name for p in (tmp_path / "exp" / "videos").iterdir()] == ["eval_0.pt"]
    plain = transformed_env_constructor(_ns())()  # no video tag: no rendering
    assert "pixels" not in plain.reset().keys()
    plain.close()


def test_missing_field_names_it():
    with pytest.raises(KeyError, match="no field 'env_name'"):
        transformed_env_constructor(argparse.Namespace())()


def test_get_stats_random_rollout_matches_data(cfg):
    stats = get_stats_random_rollout(cfg)
    assert stats["loc"].shape == (4,) and stats["scale"].shape == (4,)
    assert (stats["scale"] > 0).all()
    # CartPole starts near 0 and random play keeps it within a few units
    assert stats["loc"].abs().max() < 1.0


def test_parallel_env_constructor_batches_envs():
    make = parallel_env_constructor(_ns(env_per_collector=2))
    env = make()
    assert env.batch_size == (2,)
    assert env.rollout(3, break_when_any_done=False).shape == (2, 3)
    env.close()
    single = parallel_env_constructor(_ns(env_per_collector=1))()
    assert single.batch_size == ()
    single.close()


def test_collector_helpers_pick_the_collector_class():
    make = transformed_env_constructor(_ns())
    sync = sync_sync_collector(
        make, {}, num_collectors=1, policy=None, frames_per_batch=8, total_frames=16
    )
    assert isinstance(sync, SyncDataCollector)
    assert [b.shape for b in sync] == [torch.Size([8]), torch.Size([8])]
    sync.shutdown()
    multi = sync_sync_collector(
        make, {}, num_collectors=2, policy=None, frames_per_batch=8, total_frames=16
    )
    assert isinstance(multi, MultiSyncDataCollector)
    multi.shutdown()
    asyn = sync_async_collector(
        [make, make], [{}, {}], policy=None, frames_per_batch=8, total_frames=16
    )
    assert isinstance(asyn, MultiaSyncDataCollector) and asyn.num_workers == 2
    assert sum(b.numel() for b in asyn) >= 16
    asyn.shutdown()
    with pytest.raises(ValueError, match="StepCounter"):
        sync_async_collector(
            make, {}, num_collectors=1, policy=None, frames_per_batch=8, max_frames_per_traj=5
        )


def test_make_collector_offpolicy_and_onpolicy(cfg):
    make = transformed_env_constructor(cfg)
    env = make()
    actor = _actor(env)
    env.close()
    off = make_collector_offpolicy(make, actor, {**BASE, "multi_step": True, "n_steps_return": 2})
    batch = next(iter(off))
    assert isinstance(off, SyncDataCollector) and batch.shape == (16,)
    assert "steps_to_next_obs" in batch.keys()  # MultiStep postproc
    off.shutdown()
    on = make_collector_onpolicy(make, actor, cfg)
    batch = next(iter(on))
    assert batch.shape == (16,) and "steps_to_next_obs" not in batch.keys()
    on.shutdown()
    asyn = make_collector_offpolicy(make, actor, _ns(async_collection=True, num_workers=2))
    assert isinstance(asyn, MultiaSyncDataCollector) and asyn.num_workers == 2
    asyn.shutdown()


def test_make_dqn_loss_and_target_updater():
    env = transformed_env_constructor(_ns())()
    actor = _actor(env)
    loss, updater = make_dqn_loss(actor, _ns(value_network_update_interval=50))
    assert isinstance(loss, DQNLoss) and loss.delay_value and loss.gamma == 0.9
    assert isinstance(updater, SoftUpdate) and updater.eps == pytest.approx(1 - 1 / 50)
    hard = make_target_updater(_ns(hard_update=True, value_network_update_interval=7), loss)
    assert isinstance(hard, HardUpdate) and hard.value_network_update_interval == 7
    single, none = make_dqn_loss(actor, _ns(loss="single"))
    assert not single.delay_value and none is None
    with pytest.raises(RuntimeError, match="hard_update needs a target network"):
        make_target_updater(_ns(loss="single", hard_update=True), single)
    with pytest.raises(ValueError, match="cfg.loss='triple'"):
        make_dqn_loss(actor, _ns(loss="triple"))
    env.close()


def test_make_dqn_loss_distributional_builds_c51():
    from rl_trainers.modules import DistributionalQValueActor
    from rl_trainers.objectives import DistributionalDQNLoss

    env = transformed_env_constructor(_ns())()
    atoms, n_actions = 11, env.action_spec.shape[-1]
    net = nn.Sequential(
        nn.Linear(env.observation_spec["observation"].shape[-1], atoms * n_actions),
        nn.Unflatten(-1, (atoms, n_actions)),
    )
    actor = DistributionalQValueActor(
        net, support=torch.linspace(-3, 3, atoms), in_keys=["observation"], spec=env.action_spec
    )
    loss, updater = make_dqn_loss(actor, _ns(distributional=True, loss_function="ignored"))
    assert isinstance(loss, DistributionalDQNLoss) and loss.delay_value and loss.gamma == 0.9
    assert isinstance(updater, SoftUpdate)
    with torch.no_grad():
        batch = env.rollout(8, actor)
    out = loss(batch)
    out["loss"].backward()
    assert out["loss"].isfinite() and all(p.grad is not None for p in net.parameters())
    env.close()


def test_make_replay_buffer_both_call_forms(tmp_path):
    rb = make_replay_buffer("cpu", _ns(buffer_scratch_dir=str(tmp_path / "rb")))
    assert isinstance(rb.sampler, RandomSampler)
    rb.extend(transformed_env_constructor(_ns())().rollout(20, break_when_any_done=False))
    assert len(rb) == 20 and rb.sample().shape == (8,)
    prb = make_replay_buffer(torch.device("cpu"), {**BASE, "prb": True})
    assert isinstance(prb.sampler, PrioritizedSampler)
    hydra = make_replay_buffer(size=10, batch_size=4, storage="list")
    assert type(hydra).__name__ == "TensorDictReplayBuffer"
    with pytest.raises(TypeError, match="size must be an int capacity"):
        make_replay_buffer("cpu", 4)
    with pytest.raises(RuntimeError):
        make_replay_buffer("not-a-device", _ns())


def test_make_replay_buffer_torchrl_keywords(tmp_path):
    """torchrl's ``make_replay_buffer(device=..., cfg=...)`` by keyword."""
    cfg = _ns(buffer_size=50, batch_size=4, buffer_scratch_dir=str(tmp_path / "rb"))
    rb = make_replay_buffer(device="cpu", cfg=cfg)
    assert type(rb).__name__ == "TensorDictReplayBuffer" and rb.batch_size == 4
    with pytest.raises(RuntimeError):
        make_replay_buffer(device="not-a-device", cfg=cfg)


def test_make_trainer_without_buffer_subsamples_like_torchrl():
    """No replay buffer: a BatchSubSampler with cfg.sub_traj_len (default -1: whole
    trajectories of a [B, T] batch, a permutation of a flat one)."""
    from tensordict import TensorDict

    from rl_trainers.trainers import BatchSubSampler

    class NoCollector:
        def __iter__(self):
            return iter(())

    loss = nn.Linear(2, 2)
    cfg = _ns(batch_size=8)
    trainer = make_trainer(NoCollector(), loss, cfg=cfg)
    (sampler,) = trainer._ops["process_optim_batch"]
    assert isinstance(sampler, BatchSubSampler) and sampler.sub_traj_len == -1
    rows = TensorDict({"t": torch.arange(8).expand(3, 8).clone()}, [3, 8])
    assert sampler(rows).shape == (1, 8) and sampler(rows)["t"].tolist() == [list(range(8))]
    flat = TensorDict({"t": torch.arange(8)}, [8])
    assert sorted(sampler(flat)["t"].tolist()) == list(range(8))  # no replacement
    windows = make_trainer(NoCollector(), loss, cfg=_ns(batch_size=8, sub_traj_len=4))
    assert windows._ops["process_optim_batch"][0](rows).shape == (2, 4)


def test_make_trainer_wires_hooks_and_trains(cfg, tmp_path):
    make = transformed_env_constructor(cfg)
    recorder_env = make()
    actor = _actor(recorder_env)
    explore = EGreedyWrapper(actor, eps_init=1.0, eps_end=0.1, annealing_num_steps=64)
    loss, updater = make_dqn_loss(actor, cfg)
    collector = make_collector_offpolicy(make, explore, cfg)
    rb = make_replay_buffer("cpu", {**BASE, "buffer_scratch_dir": str(tmp_path / "rb")})
    trainer = make_trainer(
        collector,
        loss,
        recorder=recorder_env,
        target_net_updater=updater,
        policy_exploration=explore,
        replay_buffer=rb,
        logger=None,
        cfg=cfg,
    )
    assert isinstance(trainer, Trainer)
    assert trainer.optim_steps_per_batch == 2 and trainer.total_frames == 64
    before = [t.clone() for t in loss.target_pairs()[1]]
    trainer.train()
    assert trainer._optim_count == 8 and len(rb) == 64
    assert explore.explorer.eps.item() == pytest.approx(0.1)  # annealed 4 x 16 frames
    assert any(not torch.equal(a, b) for a, b in zip(before, loss.target_pairs()[1]))
    recorder_env.close()
    with pytest.raises(ValueError, match="cfg.optimizer='rmsprop'"):
        make_trainer(collector, loss, cfg=_ns(optimizer="rmsprop"))
    with pytest.raises(ValueError, match="needs cfg"):
        make_trainer(collector, loss)
