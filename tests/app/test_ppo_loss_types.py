"""``loss.loss_type`` picks the PPO objective: clipped surrogate, adaptive KL penalty, plain.

The KL penalty's ``beta`` adapts once per collected batch by default (Schulman et al.,
2017), or after every minibatch (``loss.beta_adaptation=minibatch``, torchrl's
``KLPENPPOLoss``); it is checkpointed with the loss (the resume case is in
tests/resume/test_bitwise_resume.py).
"""

from __future__ import annotations

import pytest

from rl_trainers.algorithms import build_trainer
from rl_trainers.app.overrides import translate_torchrl_overrides
from rl_trainers.app.run import run
from rl_trainers.errors import ConfigError
from rl_trainers.objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss

from .test_config_errors import assert_user_error, run_bad

# TINY["ppo"]: 256 frames in batches of 64, 2 epochs of 2 minibatches each
BATCHES, CALLS_PER_BATCH = 4, 4


@pytest.mark.parametrize(
    ("loss_type", "loss_class"),
    [("clip", ClipPPOLoss), ("kl", KLPENPPOLoss), ("ppo", PPOLoss)],
)
def test_loss_type_builds_its_loss(tiny_config, loss_type, loss_class, tmp_path):
    trainer = build_trainer(tiny_config("ppo", [f"loss.loss_type={loss_type}"]), tmp_path)
    assert type(trainer.loss_module) is loss_class


@pytest.mark.parametrize(
    ("dtarg", "adaptation", "expected_beta"),
    [
        # the policy moves in every update: the batch's KL is above 1.5 * 1e-9 after each
        (1e-9, "update", 2.0**BATCHES),
        # far below any target: beta halves once per batch, or after every minibatch
        (1e3, "update", 0.5**BATCHES),
        (1e3, "minibatch", 0.5 ** (BATCHES * CALLS_PER_BATCH)),
    ],
)
def test_kl_penalty_adapts_once_per_batch_or_per_minibatch(
    tiny_config, dtarg, adaptation, expected_beta, tmp_path
):
    cfg = tiny_config(
        "ppo",
        [
            "loss.loss_type=kl",
            f"loss.dtarg={dtarg}",
            f"loss.beta_adaptation={adaptation}",
            "logger=csv",
        ],
    )
    run(cfg, output_dir=tmp_path)
    trainer = build_trainer(cfg, tmp_path / "rebuilt")
    trainer.load_from_file(tmp_path / "checkpoints" / "trainer.pt")
    assert trainer.loss_module.beta.item() == pytest.approx(expected_beta)
    logged = (tmp_path / "logs").rglob("beta.csv")
    assert next(logged).read_text().strip(), "beta is logged"


def test_kl_penalty_trains_with_beta_changing_between_steps(tiny_config, tmp_path):
    """The penalty's backward uses the beta of its own step even after beta adapted."""
    cfg = tiny_config(
        "ppo", ["loss.loss_type=kl", "loss.beta_adaptation=minibatch", "loss.dtarg=1e-9"]
    )
    run(cfg, output_dir=tmp_path)


def test_clip_annealing_is_skipped_by_losses_without_a_clip_range(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["loss.loss_type=ppo", "trainer.anneal_clip_epsilon=true"])
    run(cfg, output_dir=tmp_path)
    assert not hasattr(build_trainer(cfg, tmp_path / "b").loss_module, "clip_epsilon")


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["loss.loss_type=kl_penalty"], ["loss.loss_type='kl_penalty'", "'clip'", "'kl'"]),
        (["loss.loss_type=kl", "loss.dtarg=0"], ["loss.dtarg=0", "positive"]),
        (["loss.loss_type=kl", "loss.beta=-1"], ["loss.beta=-1", "non-negative"]),
        (["loss.loss_type=kl", "loss.increment=0.5"], ["loss.increment=0.5", ">= 1"]),
        (["loss.loss_type=kl", "loss.decrement=2"], ["loss.decrement=2", "(0, 1]"]),
        (
            ["loss.loss_type=kl", "loss.beta_adaptation=epoch"],
            ["loss.beta_adaptation='epoch'", "'update'"],
        ),
        (["loss.clip_epsilon=0"], ["loss.clip_epsilon=0", "positive"]),
    ],
)
def test_bad_ppo_loss_value_names_the_field(tiny_config, overrides, expected, tmp_path):
    with pytest.raises(ConfigError) as err:
        build_trainer(tiny_config("ppo", overrides), tmp_path)
    for word in expected:
        assert word in str(err.value)


def test_bad_loss_type_from_the_command_line_is_one_line(tmp_path):
    proc = run_bad("ppo", tmp_path, "loss.loss_type=adaptive")
    assert_user_error(proc, "loss.loss_type='adaptive'", "'kl' (adaptive KL penalty)")


def test_torchrl_coefficient_names_are_accepted_on_the_command_line():
    argv = ["train.py", "loss.entropy_coeff=0.01", "loss.critic_coeff=0.25", "loss.gamma=0.9"]
    assert translate_torchrl_overrides(argv) == [
        "train.py",
        "loss.entropy_coef=0.01",
        "loss.critic_coef=0.25",
        "loss.gamma=0.9",
    ]
