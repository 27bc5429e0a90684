"""``train.py --help``: every value loss the losses accept, the fields of options extending
another option."""

from __future__ import annotations

from rl_trainers.app.help_page import help_template
from rl_trainers.configs import PPOTrainerConfig, SACTrainerConfig


def test_help_names_every_value_loss_the_losses_accept():
    ppo = help_template("ppo_trainer", PPOTrainerConfig)
    sac = help_template("sac_trainer", SACTrainerConfig)
    assert "l2 | smooth_l1 | l1 value loss" in ppo
    assert "l2 | smooth_l1 | l1 Q loss" in sac


def test_help_lists_the_fields_of_options_extending_another_option():
    """optimizer=adamw takes betas/eps/fused as adam does; multi_async takes num_workers."""
    text = help_template("ppo_trainer", PPOTrainerConfig)
    options = text.split("== Fields of group options")[1].split("Network input")[0]
    adamw = options.split("optimizer=adamw:")[1].split("optimizer=sgd:")[0]
    assert "optimizer.betas" in adamw and "optimizer.fused" in adamw
    multi_async = options.split("collector=multi_async:")[1].split("logger=")[0]
    assert "collector.num_workers" in multi_async
