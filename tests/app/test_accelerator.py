"""Training on an accelerator (``device=cuda``): networks, losses, their updates and replay
buffers live there, the envs step on the CPU. Runs only where CUDA is available
(``benchmarks/gpu.sh`` runs them with the GPU benchmark), except ``device=auto``'s."""

from __future__ import annotations

import math

import pytest
import torch

from rl_trainers.algorithms.build import close_trainer
from rl_trainers.trainers.algorithms import build_trainer

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _devices(module: torch.nn.Module) -> set[str]:
    return {t.device.type for t in [*module.parameters(), *module.buffers()]}


def _train(trainer) -> dict:
    losses: list[float] = []
    batches: list[str] = []
    trainer.register_op("post_loss", lambda out: losses.append(float(sum_losses(out))))
    trainer.register_op("batch_process", lambda batch: batches.append(batch.device.type))
    try:
        trainer.train()
        returns = trainer.evaluate_final()
    finally:
        close_trainer(trainer)
    return {"losses": losses, "batches": batches, "returns": returns}


def sum_losses(out) -> torch.Tensor:
    return sum(v.detach().sum() for k, v in out.items() if k.startswith("loss_"))


@needs_cuda
@pytest.mark.parametrize("algorithm", ["ppo", "sac", "td3", "dqn"])
def test_a_run_trains_on_cuda_with_finite_losses(algorithm, tiny_config, tmp_path):
    trainer = build_trainer(tiny_config(algorithm, ["device=cuda"]), tmp_path)
    assert _devices(trainer.loss_module) == {"cuda"}
    run = _train(trainer)
    assert run["losses"] and all(math.isfinite(v) for v in run["losses"])
    assert set(run["batches"]) == {"cuda"}  # batches arrive where the loss runs
    assert run["returns"] and all(math.isfinite(r) for r in run["returns"])


@needs_cuda
def test_the_replay_buffer_is_stored_on_the_device(tiny_config, tmp_path):
    trainer = build_trainer(tiny_config("sac", ["device=cuda"]), tmp_path)
    try:
        trainer.train()
        assert trainer.replay_buffer.sample().device.type == "cuda"
    finally:
        close_trainer(trainer)


def test_device_auto_trains_on_cuda_where_torch_sees_a_gpu_else_on_the_cpu(tiny_config, tmp_path):
    """Stable-Baselines3's ``device="auto"``: the networks live on the GPU where there is
    one, else on the CPU, and the run trains there."""
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    trainer = build_trainer(tiny_config("sac", ["device=auto"]), tmp_path)
    try:
        assert _devices(trainer.loss_module) == {expected}
        trainer.train()
    finally:
        close_trainer(trainer)
