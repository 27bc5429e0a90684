"""torchrl's collector keywords compile_policy, cudagraph_policy and trust_policy."""

from __future__ import annotations

import pytest
import torch
from collector_fake_env import CountingEnv
from tensordict import TensorDictBase

from rl_trainers.collectors import MultiSyncDataCollector, SyncDataCollector


class HalfPolicy(torch.nn.Module):
    """action = 0.5 * observation (a float copy), so compiled and eager outputs can be compared."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(0.5))

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        td.set("action", td.get("observation").float() * self.scale)
        return td


def make_env():
    return CountingEnv((3, 5))


class RecordingBackend:
    """A torch.compile backend that counts the graphs it receives and runs them eagerly."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"compile_policy": None, "cudagraph_policy": False, "trust_policy": None},
        {"compile_policy": False, "cudagraph_policy": {}, "trust_policy": True},
    ],
)
def test_falsy_values_are_accepted_and_change_nothing(kwargs):
    collector = SyncDataCollector(
        make_env(), HalfPolicy(), frames_per_batch=8, total_frames=8, **kwargs
    )
    batch = next(iter(collector))
    assert torch.equal(batch["action"], batch["observation"].float() * 0.5)
    assert collector._policy_call is collector.policy


@pytest.mark.parametrize("warmup", [1, 3])
def test_compile_policy_dict_compiles_with_its_options(warmup):
    backend = RecordingBackend()
    policy = HalfPolicy()
    collector = SyncDataCollector(
        make_env(),
        policy,
        frames_per_batch=8,
        total_frames=16,
        compile_policy={"backend": backend, "warmup": warmup},
    )
    it = iter(collector)
    first = next(it)
    assert backend.graphs >= 1  # 4 policy calls per batch: compiled after `warmup` of them
    assert torch.equal(first["action"], first["observation"].float() * 0.5)
    assert collector.policy is policy  # weights still updated through the module given
    with torch.no_grad():
        policy.scale.fill_(2.0)
    second = next(it)
    assert torch.equal(second["action"], second["observation"].float() * 2.0)


def test_compile_policy_true_uses_torch_compile(monkeypatch):
    seen = {}

    def fake_compile(model, **kwargs):
        seen["model"], seen["kwargs"] = model, kwargs
        return model

    monkeypatch.setattr(torch, "compile", fake_compile)
    policy = HalfPolicy()
    collector = SyncDataCollector(
        make_env(), policy, frames_per_batch=8, total_frames=8, compile_policy=True
    )
    next(iter(collector))
    assert seen == {"model": policy, "kwargs": {}}


def test_cudagraph_policy_on_cpu_raises_a_clear_error():
    with pytest.raises(ValueError, match="cudagraph_policy needs the policy on a CUDA device"):
        SyncDataCollector(
            make_env(), HalfPolicy(), frames_per_batch=8, total_frames=8, cudagraph_policy=True
        )
    with pytest.raises(ValueError, match="CUDA"):
        MultiSyncDataCollector(
            [make_env] * 2,
            HalfPolicy(),
            frames_per_batch=8,
            total_frames=8,
            cudagraph_policy={"warmup": 2},
        )


def test_multi_collector_accepts_the_keywords_and_compiles_in_workers():
    collector = MultiSyncDataCollector(
        [make_env] * 2,
        HalfPolicy(),
        frames_per_batch=16,
        total_frames=16,
        compile_policy={"backend": "eager"},
        cudagraph_policy=False,
        trust_policy=True,
    )
    try:
        batch = next(iter(collector))
        assert torch.equal(batch["action"], batch["observation"].float() * 0.5)
    finally:
        collector.shutdown()
