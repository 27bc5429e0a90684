"""IMPALA (an actor-learner setup corrected by V-trace) on CartPole-v1 from state observations.

The shape of torchrl's sota-implementations/impala/impala_single_node.py, sized for CartPole
on a 2-core CPU: two collector worker processes (a MultiaSyncDataCollector) act with a copy
of the policy that lags the learner's; for each ``[envs, T]`` batch of trajectories the
learner computes V-trace advantages and value targets (importance weights ``pi / mu``
clipped at 1 correct for the lag), takes one A2C step and copies its weights back to the
workers. RMSprop with the IMPALA paper's ``eps=0.01`` keeps the late updates small: with
Adam about a quarter of the runs fell back below 400 after reaching 500.

    python examples/impala_cartpole.py --seed 0 --total-frames 100000 --log-dir impala_logs

prints the final mean evaluation return (500 is the maximum), reached in about 10-15 s.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.collectors import MultiaSyncDataCollector
from rl_trainers.envs import (
    ExplorationType,
    GymEnv,
    RewardSum,
    TransformedEnv,
    set_exploration_type,
)
from rl_trainers.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from rl_trainers.objectives import A2CLoss, VTrace
from rl_trainers.record.loggers.csv import CSVLogger

HPARAMS: dict[str, Any] = {
    "num_workers": 2,
    "envs_per_worker": 8,
    "frames_per_batch": 256,  # one worker's batch: [envs_per_worker, 32]
    "lr": 1e-2,  # annealed linearly to 0 over total_frames, as torchrl's IMPALA
    "rmsprop_alpha": 0.99,
    "rmsprop_eps": 0.01,
    "max_grad_norm": 1.0,
    "gamma": 0.99,
    "rho_thresh": 1.0,
    "c_thresh": 1.0,
    "entropy_coef": 0.01,
    "critic_coef": 0.5,
    "num_cells": [64, 64],
}


def make_env(num_envs: int = 0, seed: int | None = None) -> TransformedEnv:
    """CartPole-v1 (``num_envs > 0``: that many in one batched env) tracking episode returns."""
    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=num_envs), RewardSum())
    if seed is not None:
        env.set_seed(seed)
    return env


def make_models(hp: dict[str, Any]) -> tuple[ProbabilisticActor, ValueOperator]:
    """A categorical policy over the two actions and a state-value critic, both small MLPs."""
    env = make_env()
    logits = MLP(
        out_features=env.action_spec.shape[-1], num_cells=hp["num_cells"], activation_class=nn.Tanh
    )
    actor = ProbabilisticActor(
        TensorDictModule(logits, in_keys=["observation"], out_keys=["logits"]),
        in_keys=["logits"],
        spec=env.action_spec,
        distribution_class=OneHotCategorical,
        return_log_prob=True,  # the workers' log mu, read by V-trace
    )
    critic = ValueOperator(
        MLP(out_features=1, num_cells=hp["num_cells"], activation_class=nn.Tanh),
        in_keys=["observation"],
    )
    td = env.fake_tensordict()
    actor(td), critic(td)  # materialise lazy layers
    env.close()
    return actor, critic


@torch.no_grad()
def evaluate(actor: ProbabilisticActor, episodes: int = 10, seed: int = 1000) -> float:
    """Mean return of the deterministic policy (most likely action) over ``episodes``."""
    env = make_env(seed=seed)
    returns = []
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        for _ in range(episodes):
            rollout = env.rollout(500, actor)  # stops at the end of the episode
            returns.append(rollout.get(("next", "reward")).sum().item())
    env.close()
    return sum(returns) / len(returns)


def main(
    seed: int = 0,
    total_frames: int = 100_000,
    log_dir: str | None = None,
    num_threads: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """Train IMPALA on CartPole; returns ``{"eval_return", "frames", "wall_time",
    "max_log_ratio", "actor", "critic"}``.

    ``max_log_ratio`` holds, per batch, ``max |log pi - log mu|`` between the learner's
    policy and the workers' on arrival (0 for data collected with the learner's weights).
    ``overrides`` replace entries of :data:`HPARAMS`; the learner runs on ``num_threads``
    intra-op threads, each worker on one. With ``log_dir``, training and evaluation
    scalars go to a CSV logger there.
    """
    unknown = sorted(set(overrides) - set(HPARAMS))
    if unknown:
        raise ValueError(f"Unknown hyperparameters {unknown}; known: {sorted(HPARAMS)}.")
    hp = {**HPARAMS, **overrides}
    torch.set_num_threads(num_threads)
    torch.manual_seed(seed)
    actor, critic = make_models(hp)

    collector = MultiaSyncDataCollector(
        [
            lambda i=i: make_env(hp["envs_per_worker"], seed=seed + 100 * i)
            for i in range(hp["num_workers"])
        ],
        actor,  # each worker acts with a copy, refreshed by update_policy_weights_()
        frames_per_batch=hp["frames_per_batch"],
        total_frames=total_frames,
        exploration_type=ExplorationType.RANDOM,
    )
    vtrace = VTrace(
        gamma=hp["gamma"],
        value_network=critic,
        actor_network=actor,
        rho_thresh=hp["rho_thresh"],
        c_thresh=hp["c_thresh"],
    )
    loss_module = A2CLoss(
        actor,
        critic,
        entropy_coef=hp["entropy_coef"],
        critic_coef=hp["critic_coef"],
        loss_critic_type="l2",
    )
    optimizer = torch.optim.RMSprop(
        loss_module.parameters(), lr=hp["lr"], alpha=hp["rmsprop_alpha"], eps=hp["rmsprop_eps"]
    )
    logger = CSVLogger(exp_name=f"impala_cartpole_seed{seed}", log_dir=log_dir) if log_dir else None

    frames, max_log_ratios, start = 0, [], time.perf_counter()
    for i, batch in enumerate(collector):  # [envs_per_worker, T]: time on the last dim
        frames += batch.numel()
        with torch.no_grad():
            log_pi = actor.get_dist(batch).log_prob(batch.get("action"))
            max_log_ratios.append((log_pi - batch.get("sample_log_prob")).abs().max().item())
            vtrace(batch)  # writes "advantage" (rho-weighted) and "value_target"
        losses = loss_module(batch.reshape(-1))
        loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(loss_module.parameters(), hp["max_grad_norm"])
        for group in optimizer.param_groups:
            group["lr"] = hp["lr"] * max(0.0, 1.0 - frames / total_frames)
        optimizer.step()
        collector.update_policy_weights_()

        if logger is not None and i % 10 == 0:
            ended = batch.get(("next", "done")).squeeze(-1)
            if ended.any():
                returns = batch.get(("next", "episode_reward"))[ended]
                logger.log_scalar("train/episode_return", returns.mean().item(), step=frames)
            for key in ("loss_objective", "loss_critic", "entropy"):
                logger.log_scalar(f"train/{key}", losses[key].item(), step=frames)
            logger.log_scalar("train/grad_norm", grad_norm.item(), step=frames)
            logger.log_scalar("train/max_log_ratio", max_log_ratios[-1], step=frames)
    collector.shutdown()
    wall_time = time.perf_counter() - start

    eval_return = evaluate(actor, seed=seed + 1000)
    if logger is not None:
        logger.log_scalar("eval/episode_return_mean", eval_return, step=frames)
        logger.close()
    return {
        "eval_return": eval_return,
        "frames": frames,
        "wall_time": wall_time,
        "max_log_ratio": max_log_ratios,
        "actor": actor,
        "critic": critic,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-frames", type=int, default=100_000)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    result = main(seed=args.seed, total_frames=args.total_frames, log_dir=args.log_dir)
    print(
        f"mean evaluation return: {result['eval_return']:.1f} after {result['frames']} frames "
        f"({result['wall_time']:.1f} s of training)"
    )
