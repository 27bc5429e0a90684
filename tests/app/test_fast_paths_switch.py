"""One switch for every CPU fast path: a run with them all off (the plain paths) learns the
same weights as a run with them on, to float rounding."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from rl_trainers import fast
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.trainers.algorithms import build_trainer


def test_plain_turns_every_switch_off_and_restores_them(monkeypatch):
    for name in fast.SWITCHES:  # as they start without RL_TRAINERS_FAST_PATHS=0
        monkeypatch.setattr(fast, name, True)
    with fast.plain():
        assert not any(fast.state().values())
    assert all(fast.state().values())
    with fast.plain("FUSE_MLP"):
        assert {k for k, v in fast.state().items() if not v} == {"FUSE_MLP"}
    assert all(fast.state().values())
    with pytest.raises(ValueError, match="unknown fast paths \\['FUSED'\\]"):
        with fast.plain("FUSED"):
            pass


def test_the_environment_variable_starts_every_switch_off():
    code = "from rl_trainers import fast; print(sorted(fast.state().values()))"
    env = dict(os.environ, RL_TRAINERS_FAST_PATHS="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str([False] * len(fast.SWITCHES))


def _trained_weights(config) -> list[torch.Tensor]:
    import tempfile
    from pathlib import Path

    trainer = build_trainer(config, Path(tempfile.mkdtemp(prefix="fast_paths_")))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    return [p.detach().clone() for p in trainer.loss_module.parameters()]


@pytest.mark.parametrize(
    ("algorithm", "overrides"),
    [
        ("ppo", ["env=cartpole"]),  # categorical acting, the fused actor-critic terms
        ("ppo", ["env=pendulum", "env.normalize_observations=true"]),  # Gaussian, VecNorm
        ("sac", ["env=pendulum"]),  # SAC's one-node losses, the critic ensemble
    ],
)
def test_a_run_on_the_plain_paths_learns_the_same_weights(
    algorithm, overrides, tiny_config, monkeypatch
):
    for name in fast.SWITCHES:
        monkeypatch.setattr(fast, name, True)
    config = tiny_config(algorithm, [*overrides, "logger=csv"])
    fast = _trained_weights(config)
    with fast.plain():
        plain = _trained_weights(config)
    assert len(fast) == len(plain)
    for a, b in zip(fast, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
