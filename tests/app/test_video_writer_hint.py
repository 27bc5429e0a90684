"""An mp4 video asked for without a writer installed is refused with the extra that
installs one: ``pip install "rl_trainers[video]"``."""

from __future__ import annotations

import re
import sys

import pytest
import torch

from rl_trainers.algorithms import eval_video
from rl_trainers.errors import ConfigError

INSTALL = 'pip install "rl_trainers[video]"'


def test_the_config_error_names_the_video_extra(tiny_config, monkeypatch):
    monkeypatch.setattr(eval_video, "_can_write_mp4", lambda: False)
    cfg = tiny_config("ppo", ["eval.video=true", "logger.video_format=mp4"])
    with pytest.raises(ConfigError) as err:
        eval_video.check_video_config(cfg)
    assert str(err.value) == (
        "logger.video_format='mp4' is invalid: gif or pt: mp4 videos need imageio with its "
        f"ffmpeg plugin (imageio-ffmpeg), which is not installed: {INSTALL}"
    )


def test_the_csv_logger_names_the_video_extra(tmp_path, monkeypatch):
    from rl_trainers.record.loggers.csv import CSVLogger

    monkeypatch.setitem(sys.modules, "imageio", None)
    monkeypatch.setitem(sys.modules, "imageio.v2", None)
    logger = CSVLogger("run", log_dir=str(tmp_path), video_format="mp4")
    with pytest.raises(ImportError, match=f"imageio-ffmpeg.*{re.escape(INSTALL)}"):
        logger.log_video("eval", torch.zeros(1, 2, 3, 8, 8, dtype=torch.uint8), step=0)


@pytest.mark.parametrize("blocked", ["imageio", "imageio_ffmpeg"])
def test_enjoy_names_the_video_extra(tmp_path, monkeypatch, blocked):
    from rl_trainers.agents.cli import _video_writer
    from rl_trainers.agents.policy import RunError

    monkeypatch.setitem(sys.modules, blocked, None)
    if blocked == "imageio":
        monkeypatch.setitem(sys.modules, "imageio.v2", None)
    with pytest.raises(RunError, match=re.escape(INSTALL)):
        _video_writer(tmp_path / "a.mp4", fps=30)
