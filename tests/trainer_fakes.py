"""Fakes shared by the tests of the loop (tests/core) and of the hooks (tests/hooks): two
collectors, two losses, an in-memory logger, ``make_trainer`` and the fixtures
(``collector``, ``loss_module``, ``logger``, ``fakes``) their conftest files import."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.core import Trainer

OBS_DIM = 3


class FakeCollector:
    """Yields ``[num_envs, T]`` TensorDicts with the keys of docs/architecture.md."""

    def __init__(self, num_envs: int = 2, T: int = 8, n_batches: int = 100) -> None:
        self.num_envs, self.T, self.n_batches = num_envs, T, n_batches
        self.shutdown_calls = 0
        self.seed = None
        self.batches_yielded = 0
        self.weight_updates = 0

    def set_seed(self, seed: int) -> int:
        self.seed = seed
        return seed

    def update_policy_weights_(self) -> None:
        self.weight_updates += 1

    def make_batch(self) -> TensorDict:
        B, T = self.num_envs, self.T
        obs = torch.randn(B, T, OBS_DIM)
        done = torch.zeros(B, T, 1, dtype=torch.bool)
        done[:, -1] = True
        return TensorDict(
            {
                "observation": obs,
                "action": torch.randn(B, T, 1),
                "done": torch.zeros(B, T, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, T, 1, dtype=torch.bool),
                "truncated": torch.zeros(B, T, 1, dtype=torch.bool),
                "next": {
                    "observation": obs + 0.1,
                    "reward": obs.sum(-1, keepdim=True),
                    "done": done,
                    "terminated": done.clone(),
                    "truncated": torch.zeros(B, T, 1, dtype=torch.bool),
                },
                "collector": {"traj_ids": torch.arange(B).unsqueeze(-1).expand(B, T).clone()},
            },
            batch_size=[B, T],
        )

    def __iter__(self):
        for _ in range(self.n_batches):
            self.batches_yielded += 1
            yield self.make_batch()

    def shutdown(self) -> None:
        self.shutdown_calls += 1

    def state_dict(self) -> dict:
        return {"batches_yielded": self.batches_yielded}

    def load_state_dict(self, sd: dict) -> None:
        self.batches_yielded = int(sd["batches_yielded"])


class FakeLoss(nn.Module):
    """Regresses the reward on the observation; returns a loss TensorDict."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(OBS_DIM, 1)
        self.calls = 0

    def forward(self, td: TensorDict) -> TensorDict:
        self.calls += 1
        pred = self.net(td["observation"])
        err = pred - td["next", "reward"]
        return TensorDict(
            {"loss_value": err.pow(2).mean(), "abs_error": err.detach().abs().mean()},
            batch_size=[],
        )


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
    """In-memory logger with the Logger.log_scalar signature."""

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


@pytest.fixture
def collector() -> FakeCollector:
    return FakeCollector()


@pytest.fixture
def loss_module() -> FakeLoss:
    return FakeLoss()


@pytest.fixture
def logger() -> MemLogger:
    return MemLogger()


@pytest.fixture
def fakes():
    """The fake classes, for tests that build several."""
    return type("Fakes", (), {"Collector": FakeCollector, "Loss": FakeLoss, "Logger": MemLogger})
