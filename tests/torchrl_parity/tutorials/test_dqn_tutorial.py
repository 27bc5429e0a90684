"""The "TorchRL trainer: a DQN example" tutorial (seed 004), ported by changing the imports.

The functions below keep the tutorial's names, structure and calls: only ``torchrl`` became
``rl_trainers`` and the sizes shrank so the whole script runs in a few seconds (pixel CartPole,
two asynchronous collectors each running a two-worker ParallelEnv). The test then checks
what the tutorial prints at its end: the CSV files the logger wrote.

Two spots of the original fail in torchrl itself and work here: the evaluation rollout that
raised "Env was done after reset" (our Recorder evaluates the same env repeatedly), and the
ParallelEnv *instances* handed to ``MultiaSyncDataCollector`` (``[env] * n``) whose worker
processes are re-created in each collector process.
"""

from __future__ import annotations

import math
import os
import uuid
import warnings

import pytest
import torch
from torch import nn

from rl_trainers.collectors import MultiaSyncDataCollector
from rl_trainers.data import LazyMemmapStorage, MultiStep, TensorDictReplayBuffer
from rl_trainers.envs import EnvCreator, ExplorationType, ParallelEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.transforms import (
    CatFrames,
    Compose,
    GrayScale,
    ObservationNorm,
    Resize,
    RewardScaling,
    StepCounter,
    ToTensorImage,
    TransformedEnv,
)
from rl_trainers.modules import DuelingCnnDQNet, EGreedyWrapper, QValueActor
from rl_trainers.objectives import DQNLoss, SoftUpdate
from rl_trainers.record.loggers.csv import CSVLogger
from rl_trainers.trainers import (
    LogReward,
    Recorder,
    ReplayBufferTrainer,
    Trainer,
    UpdateWeights,
)

pytest.importorskip("pygame")  # CartPole's rgb_array rendering

# --- hyperparameters (the tutorial's, with its "for real training" values in comments) ---
device = "cpu"
mp_context = "fork"
lr = 2e-3
wd = 1e-5
betas = (0.9, 0.999)
n_optim = 4  # 8
gamma = 0.99
tau = 0.02
total_frames = 384  # 500000
init_random_frames = 64  # 1000
frames_per_batch = 32  # 128
batch_size = 32  # 256
buffer_size = min(total_frames, 100000)
num_workers = 2  # 8
num_collectors = 2  # 4
eps_greedy_val = 0.1
eps_greedy_val_env = 0.005
init_bias = 2.0
log_interval = 100  # 500
norm_stats_iter = 16  # 1000


def make_env(parallel=False, obs_norm_sd=None, num_workers=1):
    if obs_norm_sd is None:
        obs_norm_sd = {"standard_normal": True}
    if parallel:

        def maker():
            return GymEnv("CartPole-v1", from_pixels=True, pixels_only=True, device=device)

        base_env = ParallelEnv(
            num_workers,
            EnvCreator(maker),
            # Don't create a sub-process if we have only one worker
            serial_for_single=True,
            mp_start_method=mp_context,
        )
    else:
        base_env = GymEnv("CartPole-v1", from_pixels=True, pixels_only=True, device=device)

    env = TransformedEnv(
        base_env,
        Compose(
            StepCounter(),  # to count the steps of each trajectory
            ToTensorImage(),
            RewardScaling(loc=0.0, scale=0.1),
            GrayScale(),
            Resize(64, 64),
            CatFrames(4, in_keys=["pixels"], dim=-3),
            ObservationNorm(in_keys=["pixels"], **obs_norm_sd),
        ),
    )
    return env


def get_norm_stats():
    test_env = make_env()
    test_env.transform[-1].init_stats(
        num_iter=norm_stats_iter, cat_dim=0, reduce_dim=[-1, -2, -4], keep_dims=(-1, -2)
    )
    obs_norm_sd = test_env.transform[-1].state_dict()
    # let's check that normalizing constants have a size of ``[C, 1, 1]`` where
    # ``C=4`` (because of :class:`~rl_trainers.envs.CatFrames`).
    print("state dict of the observation norm:", obs_norm_sd)
    test_env.close()
    del test_env
    return obs_norm_sd


def make_model(dummy_env):
    cnn_kwargs = {
        "num_cells": [32, 64, 64],
        "kernel_sizes": [6, 4, 3],
        "strides": [2, 2, 1],
        "activation_class": nn.ELU,
    }
    mlp_kwargs = {
        "depth": 2,
        "num_cells": [64, 64],
        "activation_class": nn.ELU,
    }
    net = DuelingCnnDQNet(dummy_env.action_spec.shape[-1], 1, cnn_kwargs, mlp_kwargs).to(device)
    net.value[-1].bias.data.fill_(init_bias)

    actor = QValueActor(net, in_keys=["pixels"], spec=dummy_env.action_spec).to(device)
    # init actor: because the model is composed of lazy conv/linear layers,
    # we must pass a fake batch of data through it to instantiate them.
    tensordict = dummy_env.fake_tensordict()
    actor(tensordict)

    # we wrap our actor in an EGreedyWrapper for data collection
    actor_explore = EGreedyWrapper(
        actor,
        annealing_num_steps=total_frames,
        eps_init=eps_greedy_val,
        eps_end=eps_greedy_val_env,
    )
    return actor, actor_explore


def get_replay_buffer(buffer_size, n_optim, batch_size):
    replay_buffer = TensorDictReplayBuffer(
        batch_size=batch_size,
        storage=LazyMemmapStorage(buffer_size),
        prefetch=n_optim,
    )
    return replay_buffer


def get_collector(stats, num_collectors, actor_explore, frames_per_batch, total_frames, device):
    data_collector = MultiaSyncDataCollector(
        [make_env(parallel=True, obs_norm_sd=stats, num_workers=num_workers)] * num_collectors,
        policy=actor_explore,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        # this is the default behaviour: the collector runs in ``"random"`` (or explorative) mode
        exploration_type=ExplorationType.RANDOM,
        # We set the all the devices to be identical.
        device=device,
        storing_device=device,
        split_trajs=False,
        postproc=MultiStep(gamma=gamma, n_steps=5),
    )
    return data_collector


def get_loss_module(actor, gamma):
    loss_module = DQNLoss(actor, delay_value=True)
    loss_module.make_value_estimator(gamma=gamma)
    target_updater = SoftUpdate(loss_module, eps=0.995)
    return loss_module, target_updater


def read_csv_files_in_folder(folder_path):
    """Every CSV file under ``folder_path`` (the tutorial prints them) -> its rows."""
    out = {}
    for dirpath, _, filenames in os.walk(folder_path):
        for file in filenames:
            if file.endswith(".csv"):
                path = os.path.join(dirpath, file)
                with open(path) as f:
                    out[os.path.relpath(path, folder_path)] = [
                        line.strip().split(",") for line in f if line.strip()
                    ]
    return out


def test_dqn_tutorial_runs_and_logs_finite_csvs(tmp_path):
    torch.manual_seed(0)
    stats = get_norm_stats()
    assert stats["loc"].shape == (4, 1, 1) and stats["scale"].shape == (4, 1, 1)
    test_env = make_env(parallel=False, obs_norm_sd=stats)
    # Get model
    actor, actor_explore = make_model(test_env)
    loss_module, target_net_updater = get_loss_module(actor, gamma)

    collector = get_collector(
        stats, num_collectors, actor_explore, frames_per_batch, total_frames, device
    )
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=lr, weight_decay=wd, betas=betas)
    exp_name = f"dqn_exp_{uuid.uuid1()}"
    logger = CSVLogger(exp_name=exp_name, log_dir=str(tmp_path))
    warnings.warn(f"log dir: {logger.experiment.log_dir}", stacklevel=1)

    trainer = Trainer(
        collector=collector,
        total_frames=total_frames,
        frame_skip=1,
        loss_module=loss_module,
        optimizer=optimizer,
        logger=logger,
        optim_steps_per_batch=n_optim,
        log_interval=log_interval,
    )

    buffer_hook = ReplayBufferTrainer(
        get_replay_buffer(buffer_size, n_optim, batch_size=batch_size),
        flatten_tensordicts=True,
    )
    buffer_hook.register(trainer)
    weight_updater = UpdateWeights(collector, update_weights_interval=1)
    weight_updater.register(trainer)
    recorder = Recorder(
        record_interval=4,  # 100: log every 4 batches
        record_frames=64,  # 1000: maximum number of frames in the record
        frame_skip=1,
        policy_exploration=actor_explore,
        environment=test_env,
        exploration_type=ExplorationType.DETERMINISTIC,
        log_keys=[("next", "reward")],
        out_keys={("next", "reward"): "rewards"},
        log_pbar=True,
    )
    recorder.register(trainer)
    trainer.register_op("post_optim", target_net_updater.step)
    trainer.register_op("post_steps", actor_explore.step, frames=frames_per_batch)

    log_reward = LogReward(log_pbar=True)
    log_reward.register(trainer)

    target_before = [p.clone() for p in loss_module.target_pairs()[1]]
    trainer.train()
    logger.close()
    test_env.close()

    assert trainer.collected_frames >= total_frames
    assert trainer._optim_count == n_optim * trainer.iteration
    # the target network moved (SoftUpdate ran) and epsilon was annealed to its end value
    assert any(not torch.equal(a, b) for a, b in zip(target_before, loss_module.target_pairs()[1]))
    assert actor_explore.explorer.eps.item() == pytest.approx(eps_greedy_val_env)

    csvs = read_csv_files_in_folder(tmp_path)
    scalars = os.path.join(exp_name, "scalars")
    names = ("loss", "r_training", "rewards", "total_rewards", "eval/episode_length_mean")
    for name in (*names, "optim_steps"):
        rows = csvs.get(os.path.join(scalars, f"{name}.csv"))
        assert rows, f"{name}.csv missing or empty; files: {sorted(csvs)}"
        steps = [int(s) for s, _ in rows]
        assert steps == sorted(steps) and all(0 < s <= trainer.collected_frames for s in steps)
        assert all(math.isfinite(float(v)) for _, v in rows), (name, rows)
    # rewards are scaled by 0.1 (RewardScaling) in the evaluation rollouts
    assert all(
        float(v) == pytest.approx(0.1) for _, v in csvs[os.path.join(scalars, "rewards.csv")]
    )
