"""Logging, video and checkpoint backends that cannot work (wandb without an API key, an
mlflow server that is down, no mp4 writer, an object that is not a logger) stop the run
before training; torchsnapshot checkpoints print no scheduler table."""

from __future__ import annotations

import os

import pytest

from rl_trainers.errors import ConfigError

from .test_config_errors import assert_user_error, run_bad


def test_a_logger_that_is_not_a_logger_is_refused_when_the_trainer_is_built():
    """``Trainer(logger="csv")`` (a string, not a logger) raises when the trainer is built,
    not at the first log."""
    import torch

    from rl_trainers.core import Trainer

    loss = torch.nn.Linear(2, 1)
    with pytest.raises(TypeError, match=r"logger must be a Logger .* got 'csv'.*get_logger"):
        Trainer(
            collector=[],
            total_frames=10,
            loss_module=loss,
            optimizer=torch.optim.SGD(loss.parameters(), lr=0.1),
            logger="csv",
        )


def test_wandb_online_without_an_api_key_stops_before_training(tmp_path):
    """A 37-line traceback before, after the training had started (W&B opens its run at the
    first log; closing the logger then tried again and masked the first failure)."""
    pytest.importorskip("wandb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env["HOME"] = str(tmp_path)  # no ~/.netrc holding a key
    env["WANDB_CONFIG_DIR"] = str(tmp_path / "wandb_config")
    proc = run_bad("ppo", tmp_path, "logger=wandb", "logger.offline=false", env=env)
    assert_user_error(proc, "logger.offline=False is invalid", "wandb login", "WANDB_API_KEY")
    assert not list((tmp_path / "run").glob("checkpoints/*.pt"))  # nothing trained


@pytest.mark.parametrize("given_by", ["override", "environment"])
def test_an_mlflow_server_that_is_down_stops_before_training(given_by, tmp_path):
    """MLflow's client retried for minutes (urllib3 warnings), then failed mid-run."""
    pytest.importorskip("mlflow")
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    if given_by == "override":
        proc = run_bad("ppo", tmp_path, "logger=mlflow", f"logger.tracking_uri={uri}")
        field = "logger.tracking_uri"
    else:
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
        proc = run_bad("ppo", tmp_path, "logger=mlflow", env=env)
        field = "logger.tracking_uri (from MLFLOW_TRACKING_URI)"
    assert_user_error(
        proc, f"{field}='{uri}' is invalid: no server answers", "logger.tracking_uri=mlruns"
    )
    assert "Retrying" not in proc.stderr


def test_torchsnapshot_checkpoints_do_not_print_the_scheduler_table(tmp_path):
    """Saving with torchsnapshot prints none of its scheduler's INFO lines."""
    pytest.importorskip("torchsnapshot")
    env = {**os.environ, "CKPT_BACKEND": "torchsnapshot"}
    proc = run_bad("ppo", tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "run" / "checkpoints").glob("trainer_*"))
    assert "torchsnapshot.scheduler" not in proc.stdout + proc.stderr


def test_mp4_videos_without_an_mp4_writer_stop_before_training(tiny_config, tmp_path):
    # without imageio-ffmpeg or PyAV no mp4 can be written: the run stops before training
    # with one error line instead of failing at the first video (the end of training)
    from importlib.util import find_spec

    from rl_trainers.algorithms import build_trainer

    if find_spec("imageio_ffmpeg") is not None or find_spec("av") is not None:
        pytest.skip("an mp4 writer is installed here")
    cfg = tiny_config("ppo", ["eval.video=true", "logger.video_format=mp4"])
    with pytest.raises(ConfigError, match="logger.video_format='mp4' is invalid") as err:
        build_trainer(cfg, tmp_path)
    assert "imageio-ffmpeg" in str(err.value) and "gif" in str(err.value)
