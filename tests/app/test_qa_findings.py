"""Found by exploratory QA as a new user and as a torchrl porter: each test pins a message
or a behaviour that was wrong or confusing before its fix."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.algorithms.validation import validate_config

from .test_cli import train
from .test_config_errors import assert_user_error


@pytest.mark.parametrize(
    ("algorithm", "key", "expected"),
    [
        ("sac", "trainer.optim_steps_per_batch", ["trainer.utd_ratio", "frames_per_batch"]),
        ("ppo", "trainer.optim_steps_per_batch", ["trainer.num_epochs", "trainer.minibatch_size"]),
        ("a2c", "trainer.optim_steps_per_batch", ["one gradient step per collected batch"]),
        ("ppo", "trainer.save_trainer_file", ["checkpoints/", "hydra.run.dir"]),
    ],
)
def test_torchrl_trainer_fields_without_a_rename_say_what_to_set(
    algorithm, key, expected, tmp_path
):
    # torchrl's trainer configs have these fields (its Trainer's arguments); a porter's
    # override gets the field to use here rather than a bare "not a field"
    proc = train(algorithm, "--cfg", "job", f"{key}=4", cwd=tmp_path)
    assert_user_error(proc, f"{key} is not a field", f"torchrl's {key}", *expected)


def test_torchrl_trainer_field_added_with_plus_says_what_to_set(tiny_config):
    cfg = tiny_config("dqn")
    # what +trainer.optim_steps_per_batch=4 adds
    OmegaConf.update(cfg, "trainer.optim_steps_per_batch", 4, force_add=True)
    with pytest.raises(ConfigError, match="trainer.utd_ratio") as err:
        validate_config(cfg)
    assert "a key added with '+' would be ignored" in str(err.value)


def test_mp4_videos_without_an_mp4_writer_stop_before_training(tiny_config, tmp_path):
    # this machine has imageio but neither imageio-ffmpeg nor PyAV: the first video (at
    # the end of training) used to raise an ImportError traceback
    from importlib.util import find_spec

    from rl_trainers.trainers.algorithms import build_trainer

    if find_spec("imageio_ffmpeg") is not None or find_spec("av") is not None:
        pytest.skip("an mp4 writer is installed here")
    cfg = tiny_config("ppo", ["eval.video=true", "logger.video_format=mp4"])
    with pytest.raises(ConfigError, match="logger.video_format='mp4' is invalid") as err:
        build_trainer(cfg, tmp_path)
    assert "imageio-ffmpeg" in str(err.value) and "gif" in str(err.value)


def test_ppo_trainer_built_by_hand_on_an_env_without_reward_sum_trains():
    # a porter's env has no RewardSum: the episode-return log is skipped with a warning
    # (it raised "'NoneType' object is not subscriptable" at the first finished episode)
    import torch

    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.envs import GymEnv
    from rl_trainers.modules import make_actor, make_value
    from rl_trainers.objectives import ClipPPOLoss, ValueEstimators
    from rl_trainers.trainers.algorithms import PPOTrainer

    torch.manual_seed(0)
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    actor = make_actor(env.observation_spec, env.action_spec, num_cells=(16,))
    loss = ClipPPOLoss(actor, make_value(env.observation_spec, num_cells=(16,)))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    trainer = PPOTrainer(
        collector=SyncDataCollector(env, actor, frames_per_batch=64, total_frames=256),
        total_frames=256,
        frames_per_batch=64,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        num_epochs=2,
        minibatch_size=32,
        progress_bar=False,
    )
    with pytest.warns(UserWarning, match="add the RewardSum transform"):
        trainer.train()
    assert trainer.collected_frames == 256 and trainer._optim_count == 4 * 2 * 2
