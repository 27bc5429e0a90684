"""Small fakes shared by the trainer tests: a collector, a loss and an in-memory logger."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

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


class MemLogger:
    """In-memory logger with the Logger.log_scalar signature."""

    def __init__(self) -> None:
        self.records: list[tuple[str, float, int]] = []

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.records.append((name, value, step))

    def values(self, name: str) -> list[tuple[int, float]]:
        return [(s, v) for n, v, s in self.records if n == name]


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
