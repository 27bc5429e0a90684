"""torchrl's "Get started with your own first training loop" (getting-started-5), ported.

DQN on CartPole with EGreedyModule, QValueModule, DQNLoss, SoftUpdate, a ReplayBuffer, a
SyncDataCollector, a CSVLogger and a VideoRecorder, as the tutorial writes them with
``torchrl`` replaced by ``rl_trainers``. Sizes shrink (and ``total_frames`` bounds the loop,
which the tutorial leaves to the ``max_length > 200`` stop) so the script runs in seconds.
The video is written as mp4 as the tutorial asks when an mp4 encoder (imageio-ffmpeg) is
installed, as a GIF otherwise.
"""

from __future__ import annotations

import importlib.util
import math
import time

import pytest
import torch

pytest.importorskip("pygame")  # CartPole's rgb_array rendering

VIDEO_FORMAT = "mp4" if importlib.util.find_spec("imageio_ffmpeg") else "gif"


def test_getting_started_5_dqn_training_loop(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)

    from rl_trainers.envs import GymEnv, StepCounter, TransformedEnv

    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
    env.set_seed(0)

    from tensordict.nn import TensorDictModule as Mod
    from tensordict.nn import TensorDictSequential as Seq

    from rl_trainers.modules import MLP, EGreedyModule, QValueModule

    value_mlp = MLP(out_features=env.action_spec.shape[-1], num_cells=[64, 64])
    value_net = Mod(value_mlp, in_keys=["observation"], out_keys=["action_value"])
    policy = Seq(value_net, QValueModule(spec=env.action_spec))
    exploration_module = EGreedyModule(env.action_spec, annealing_num_steps=100_000, eps_init=0.5)
    policy_explore = Seq(policy, exploration_module)

    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.data import LazyTensorStorage, ReplayBuffer

    init_rand_steps = 200  # 5000
    frames_per_batch = 100
    optim_steps = 10
    total_frames = 600  # -1: the tutorial stops when an episode lasts 200 steps
    collector = SyncDataCollector(
        env,
        policy_explore,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        init_random_frames=init_rand_steps,
    )
    rb = ReplayBuffer(storage=LazyTensorStorage(100_000))

    from torch.optim import Adam

    from rl_trainers.objectives import DQNLoss, SoftUpdate

    loss = DQNLoss(value_network=policy, action_space=env.action_spec, delay_value=True)
    optim = Adam(loss.parameters(), lr=0.02)
    updater = SoftUpdate(loss, eps=0.99)

    from rl_trainers._utils import logger as torchrl_logger
    from rl_trainers.record import CSVLogger, VideoRecorder

    path = "./training_loop"
    logger = CSVLogger(exp_name="dqn", log_dir=path, video_format=VIDEO_FORMAT)
    video_recorder = VideoRecorder(logger, tag="video")
    record_env = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True, pixels_only=False), video_recorder
    )

    losses, before = [], {}

    total_count = 0
    total_episodes = 0
    t0 = time.time()
    for i, data in enumerate(collector):
        # Write data in replay buffer
        rb.extend(data)
        max_length = rb[:]["next", "step_count"].max()
        if len(rb) > init_rand_steps:
            # Optim loop (we do several optim steps
            # per batch collected for efficiency)
            for _ in range(optim_steps):
                sample = rb.sample(128)
                loss_vals = loss(sample)
                if not before:  # the lazy MLP has its weights after its first call
                    before["weights"] = [p.detach().clone() for p in value_mlp.parameters()]
                    before["targets"] = [p.detach().clone() for p in loss.target_pairs()[1]]
                loss_vals["loss"].backward()
                optim.step()
                optim.zero_grad()
                # Update exploration factor
                exploration_module.step(data.numel())
                # Update target params
                updater.step()
                if i % 10:
                    torchrl_logger.info(f"Max num steps: {max_length}, rb length {len(rb)}")
                total_count += data.numel()
                total_episodes += data["next", "done"].sum()
                losses.append(loss_vals["loss"].item())
        if max_length > 200:
            break

    t1 = time.time()

    torchrl_logger.info(
        f"solved after {total_count} steps, {total_episodes} episodes and in {t1 - t0}s."
    )

    # the collector ran to total_frames; the first two batches were random, no optimisation
    n_optim = optim_steps * (total_frames - init_rand_steps) // frames_per_batch
    assert len(rb) == total_frames and len(losses) == n_optim
    assert all(math.isfinite(v) for v in losses)
    assert rb[:]["next", "step_count"].max() == max_length
    assert all(not torch.equal(a, b) for a, b in zip(before["weights"], value_mlp.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(before["targets"], loss.target_pairs()[1]))
    # epsilon annealed linearly from 0.5 towards eps_end by the frames counted at each step
    eps_end = float(exploration_module.eps_end)
    want_eps = 0.5 - (0.5 - eps_end) * n_optim * frames_per_batch / 100_000
    assert exploration_module.eps.item() == pytest.approx(want_eps)
    assert f"solved after {n_optim * frames_per_batch} steps" in capfd.readouterr().err

    record_env.rollout(max_steps=1000, policy=policy)
    video_recorder.dump()

    video = tmp_path / "training_loop" / "dqn" / "videos" / f"video_0.{VIDEO_FORMAT}"
    assert video.stat().st_size > 0
