"""torchrl's trainer config fields that rl_trainers names differently or lacks say what to set."""

from __future__ import annotations

import pytest
from app.test_cli import train
from app.test_config_errors import assert_user_error
from omegaconf import OmegaConf

from rl_trainers.configs.validation import validate_config
from rl_trainers.errors import ConfigError


@pytest.mark.parametrize(
    ("algorithm", "key", "expected"),
    [
        ("sac", "trainer.optim_steps_per_batch", ["trainer.utd_ratio", "frames_per_batch"]),
        ("ppo", "trainer.optim_steps_per_batch", ["trainer.num_epochs", "trainer.minibatch_size"]),
        ("a2c", "trainer.optim_steps_per_batch", ["one gradient step per collected batch"]),
        ("ppo", "trainer.save_trainer_file", ["checkpoints/", "hydra.run.dir"]),
        ("sac", "trainer.async_collection", ["not a field of the app", "collector=multi_async"]),
    ],
)
def test_torchrl_trainer_fields_without_a_rename_say_what_to_set(
    algorithm, key, expected, tmp_path
):
    # torchrl's trainer configs have these fields (its Trainer's arguments); a porter's
    # override gets the field to use here rather than a bare "not a field"
    proc = train(algorithm, "--cfg", "job", f"{key}=4", cwd=tmp_path)
    assert_user_error(proc, f"{key} is not a field", f"torchrl's {key}", *expected)


@pytest.mark.parametrize(
    ("algorithm", "override", "expected"),
    [
        ("sac", "target_net_updater.tau=0.01", ["SAC soft-updates", "trainer.tau"]),
        ("td3", "target_net_updater.eps=0.995", ["TD3 soft-updates", "its eps is 1 - tau"]),
        ("dqn", "target_net_updater.eps=0.995", ["trainer.target_update_interval", "HardUpdate"]),
        ("ppo", "target_net_updater.tau=0.01", ["keep no target network"]),
    ],
)
def test_torchrl_target_net_updater_says_where_the_target_update_is_set(
    algorithm, override, expected, tmp_path
):
    # the app has no target_net_updater node: the error names the node, not the field
    proc = train(algorithm, "--cfg", "job", override, cwd=tmp_path)
    assert_user_error(
        proc, "target_net_updater is not a field", "torchrl's target_net_updater", *expected
    )


def test_torchrl_trainer_field_added_with_plus_says_what_to_set(tiny_config):
    cfg = tiny_config("dqn")
    # what +trainer.optim_steps_per_batch=4 adds
    OmegaConf.update(cfg, "trainer.optim_steps_per_batch", 4, force_add=True)
    with pytest.raises(ConfigError, match="trainer.utd_ratio") as err:
        validate_config(cfg)
    assert "a key added with '+' would be ignored" in str(err.value)
