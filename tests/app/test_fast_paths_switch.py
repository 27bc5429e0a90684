"""One switch for every CPU fast path (:mod:`rl_trainers.fast`): a run with them all off (the
plain paths) learns the same weights as a run with them on, to float rounding."""

from __future__ import annotations

import pytest
import torch

from rl_trainers import fast
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.trainers.algorithms import build_trainer


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
        # SB3's Gaussian (state-independent scale): its acting, the one-node PPO terms
        ("ppo", ["experiment=ppo_halfcheetah", "env=pendulum"]),
        ("sac", ["env=pendulum"]),  # SAC's one-node losses, the critic ensemble
        ("td3", ["env=pendulum"]),  # the fused target actor
    ],
)
def test_a_run_on_the_plain_paths_learns_the_same_weights(
    algorithm, overrides, tiny_config, monkeypatch
):
    for name in fast.SWITCHES:
        monkeypatch.setattr(fast, name, True)
    config = tiny_config(algorithm, [*overrides, "logger=csv"])
    fast_weights = _trained_weights(config)
    with fast.plain():
        plain_weights = _trained_weights(config)
    assert len(fast_weights) == len(plain_weights)
    for a, b in zip(fast_weights, plain_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
