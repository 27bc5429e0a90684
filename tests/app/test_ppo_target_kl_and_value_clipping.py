"""PPO's ``trainer.target_kl`` (SB3's early stop of a batch's epochs on the approximate KL)
and ``loss.clip_value`` (the PPO2 value clipping of CleanRL and torchrl), through the app."""

from __future__ import annotations

import math

import pytest
import torch

from rl_trainers.algorithms import build_trainer
from rl_trainers.app.run import run
from rl_trainers.objectives import ClipPPOLoss

from .test_config_errors import assert_user_error, run_bad

# TINY["ppo"]: 256 frames in batches of 64, 2 epochs of 2 minibatches each
BATCHES, STEPS_PER_BATCH = 4, 4


def _trained(tiny_config, overrides: list[str], out):
    cfg = tiny_config("ppo", ["logger=csv", "seed=3", *overrides])
    run(cfg, output_dir=out)
    trainer = build_trainer(cfg, out / "rebuilt")
    trainer.load_from_file(out / "checkpoints" / "trainer.pt")
    return trainer


def _logged(out, name: str) -> list[float]:
    path = next((out / "logs").rglob(f"{name}.csv"))
    return [float(line.split(",")[1]) for line in path.read_text().split()]


def test_a_bound_never_reached_changes_nothing(tiny_config, tmp_path):
    plain = _trained(tiny_config, [], tmp_path / "plain")
    bounded = _trained(tiny_config, ["trainer.target_kl=1e9"], tmp_path / "bounded")
    assert bounded._optim_count == plain._optim_count == BATCHES * STEPS_PER_BATCH
    for a, b in zip(plain.loss_module.parameters(), bounded.loss_module.parameters()):
        assert torch.equal(a, b)
    assert _logged(tmp_path / "bounded", "kl_early_stop") == [0.0] * BATCHES


def test_each_batch_stops_at_the_first_minibatch_past_the_bound(tiny_config, tmp_path):
    # the first minibatch of a batch meets the collecting policy itself (KL ~0); after one
    # step the policy has moved, so the second minibatch is past any tiny bound
    out = tmp_path / "stopped"
    trainer = _trained(tiny_config, ["trainer.target_kl=1e-9"], out)
    assert trainer._optim_count == BATCHES
    assert _logged(out, "kl_early_stop") == [1.0] * BATCHES
    assert _logged(out, "optim_steps") == [1.0, 2.0, 3.0, 4.0]


def test_value_clipping_reaches_the_loss_and_trains(tiny_config, tmp_path):
    trainer = _trained(tiny_config, ["loss.clip_value=0.2"], tmp_path)
    loss = trainer.loss_module
    assert type(loss) is ClipPPOLoss and loss.clip_value == pytest.approx(0.2)
    assert "state_value" in loss.in_keys  # the collected value travels with the minibatches
    critic_losses = _logged(tmp_path, "loss_critic")
    assert critic_losses and all(math.isfinite(v) for v in critic_losses)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("trainer.target_kl=0", "trainer.target_kl=0.0 is invalid: a positive KL"),
        ("loss.clip_value=-0.2", "loss.clip_value=-0.2 is invalid: a positive distance"),
    ],
)
def test_bad_values_are_one_error_line(tmp_path, override, expected):
    assert_user_error(run_bad("ppo", tmp_path, override), expected)
