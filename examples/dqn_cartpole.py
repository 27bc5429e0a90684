"""DQN on CartPole-v1 from state observations, with the Trainer and its hooks.

The same pieces as the DQN tutorial (tests/torchrl_parity/tutorials/test_dqn_tutorial.py), sized to learn:
a QValueActor over an MLP, epsilon-greedy exploration annealed per collected frame, a replay
buffer, 3-step returns (MultiStep), double DQN with a soft-updated target network, and a
deterministic evaluation every few batches.

    python examples/dqn_cartpole.py --seed 0 --total-frames 50000 --log-dir dqn_logs

prints the final mean evaluation return (500 is the maximum).
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

import torch
from torch import nn

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, MultiStep, TensorDictReplayBuffer
from rl_trainers.envs import ExplorationType, GymEnv, RewardSum, TransformedEnv
from rl_trainers.modules import MLP, EGreedyWrapper, QValueActor
from rl_trainers.objectives import DQNLoss, SoftUpdate
from rl_trainers.record.loggers.csv import CSVLogger
from rl_trainers.trainers import (
    LogReward,
    Recorder,
    ReplayBufferTrainer,
    Trainer,
    UpdateWeights,
)

HPARAMS: dict[str, Any] = {
    "num_envs": 4,
    "frames_per_batch": 64,
    "optim_steps_per_batch": 16,
    "batch_size": 128,
    "buffer_size": 50_000,
    "init_random_frames": 1_000,
    "lr": 1e-3,
    "gamma": 0.99,
    "n_steps": 3,
    "tau": 0.01,
    "eps_init": 1.0,
    "eps_end": 0.02,
    "annealing_frames": 10_000,
    "num_cells": [128, 128],
    "record_interval": 50,
    "record_frames": 1_000,
}


def make_env(num_envs: int = 0, seed: int | None = None) -> TransformedEnv:
    """CartPole-v1 (``num_envs > 0``: that many in one batched env) tracking episode returns."""
    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=num_envs), RewardSum())
    if seed is not None:
        env.set_seed(seed)
    return env


def make_model(env: TransformedEnv, hp: dict[str, Any]) -> tuple[QValueActor, EGreedyWrapper]:
    """The greedy Q-value actor and its epsilon-greedy exploration wrapper."""
    n_actions = env.action_spec.shape[-1]
    net = MLP(out_features=n_actions, num_cells=hp["num_cells"], activation_class=nn.ReLU)
    actor = QValueActor(net, in_keys=["observation"], spec=env.action_spec)
    actor(env.fake_tensordict())  # materialise lazy layers
    actor_explore = EGreedyWrapper(
        actor,
        eps_init=hp["eps_init"],
        eps_end=hp["eps_end"],
        annealing_num_steps=hp["annealing_frames"],
    )
    return actor, actor_explore


@torch.no_grad()
def evaluate(actor: QValueActor, episodes: int = 5, seed: int = 1000) -> float:
    """Mean return of the greedy policy over ``episodes`` full episodes."""
    env = make_env(seed=seed)
    returns = []
    with torch.inference_mode():
        for _ in range(episodes):
            rollout = env.rollout(500, actor)  # stops at the end of the episode
            returns.append(rollout.get(("next", "reward")).sum().item())
    env.close()
    return sum(returns) / len(returns)


def main(
    seed: int = 0,
    total_frames: int = 50_000,
    log_dir: str | None = None,
    progress_bar: bool = True,
    num_threads: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """Train DQN on CartPole and return ``{"eval_return", "trainer", "actor", "log_dir"}``.

    Small networks run fastest on one intra-op thread (``num_threads``); ``overrides``
    replace entries of :data:`HPARAMS`.
    """
    unknown = sorted(set(overrides) - set(HPARAMS))
    if unknown:
        raise ValueError(f"Unknown hyperparameters {unknown}; known: {sorted(HPARAMS)}.")
    hp = {**HPARAMS, **overrides}
    torch.set_num_threads(num_threads)
    torch.manual_seed(seed)
    env = make_env(hp["num_envs"], seed=seed)
    actor, actor_explore = make_model(env, hp)

    loss_module = DQNLoss(actor, delay_value=True, double_dqn=True, loss_function="smooth_l1")
    loss_module.make_value_estimator(gamma=hp["gamma"])
    target_net_updater = SoftUpdate(loss_module, tau=hp["tau"])

    collector = SyncDataCollector(
        env,
        actor_explore,
        frames_per_batch=hp["frames_per_batch"],
        total_frames=total_frames,
        init_random_frames=hp["init_random_frames"],
        exploration_type=ExplorationType.RANDOM,
        postproc=MultiStep(gamma=hp["gamma"], n_steps=hp["n_steps"]),
    )
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=hp["lr"])
    log_dir = log_dir or tempfile.mkdtemp(prefix="dqn_cartpole_")
    logger = CSVLogger(exp_name=f"dqn_cartpole_seed{seed}", log_dir=log_dir)

    trainer = Trainer(
        collector=collector,
        total_frames=total_frames,
        frame_skip=1,
        loss_module=loss_module,
        optimizer=optimizer,
        logger=logger,
        optim_steps_per_batch=hp["optim_steps_per_batch"],
        clip_norm=10.0,
        log_interval=5_000,
        progress_bar=progress_bar,
    )
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(hp["buffer_size"]), batch_size=hp["batch_size"]
    )
    ReplayBufferTrainer(buffer, flatten_tensordicts=True).register(trainer)
    UpdateWeights(collector, update_weights_interval=1).register(trainer)
    trainer.register_op("post_optim", target_net_updater.step)
    trainer.register_op("post_steps", actor_explore.step, frames=hp["frames_per_batch"])
    Recorder(
        record_interval=hp["record_interval"],
        record_frames=hp["record_frames"],
        policy_exploration=actor,
        environment=make_env(seed=seed + 1),
        exploration_type=ExplorationType.DETERMINISTIC,
        log_pbar=True,
    ).register(trainer)
    LogReward(log_pbar=True).register(trainer)

    trainer.train()
    logger.close()
    return {
        "eval_return": evaluate(actor, seed=seed + 1000),
        "trainer": trainer,
        "actor": actor,
        "log_dir": log_dir,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-frames", type=int, default=50_000)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    result = main(seed=args.seed, total_frames=args.total_frames, log_dir=args.log_dir)
    print(f"mean evaluation return: {result['eval_return']:.1f}  (logs: {result['log_dir']})")
