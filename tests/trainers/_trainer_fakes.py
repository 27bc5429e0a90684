"""Small fakes for the Trainer-loop and hook tests: a collector, a loss and a logger."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.trainers import Trainer

OBS_DIM = 3


class Collector:
    """Yields ``[num_envs, T]`` batches whose reward is ``rewards[i]`` for the i-th batch."""

    def __init__(self, rewards=None, num_envs: int = 2, T: int = 4) -> None:
        self.rewards = list(rewards) if rewards is not None else [0.0] * 50
        self.num_envs, self.T = num_envs, T
        self.updates: list = []

    def update_policy_weights_(self, weights=None) -> None:
        self.updates.append(weights)

    def __iter__(self):
        B, T = self.num_envs, self.T
        for reward in self.rewards:
            obs = torch.randn(B, T, OBS_DIM)
            yield TensorDict(
                {
                    "observation": obs,
                    "next": {
                        "observation": obs + 0.1,
                        "reward": torch.full((B, T, 1), float(reward)),
                        "done": torch.zeros(B, T, 1, dtype=torch.bool),
                        "terminated": torch.zeros(B, T, 1, dtype=torch.bool),
                    },
                },
                batch_size=[B, T],
            )


class Loss(nn.Module):
    """Regresses the reward on the observation."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(OBS_DIM, 1)
        self.actor_network = nn.Linear(OBS_DIM, 2)

    def forward(self, td: TensorDict) -> TensorDict:
        err = self.net(td["observation"]) - td["next", "reward"]
        return TensorDict({"loss_value": err.pow(2).mean()}, batch_size=[])


class MemLogger:
    def __init__(self) -> None:
        self.records: list[tuple[str, float, int]] = []

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.records.append((name, value, step))

    def names(self) -> set[str]:
        return {n for n, _, _ in self.records}

    def values(self, name: str) -> list[tuple[int, float]]:
        return [(s, v) for n, v, s in self.records if n == name]


def make_trainer(rewards=None, **kwargs) -> Trainer:
    collector = kwargs.pop("collector", None) or Collector(rewards)
    loss = kwargs.pop("loss_module", None) or Loss()
    kwargs.setdefault("total_frames", 8 * len(collector.rewards))
    kwargs.setdefault("optim_steps_per_batch", 2)
    kwargs.setdefault("optimizer", torch.optim.SGD(loss.parameters(), lr=0.01))
    return Trainer(collector=collector, loss_module=loss, progress_bar=False, **kwargs)
