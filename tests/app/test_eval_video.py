"""``eval.video=true``: each evaluation's first episode, rendered by the evaluation env only,
reaches the logger as a video (CSV file, TensorBoard image summary, MLflow artifact, W&B
media file)."""

from __future__ import annotations

import csv
import glob
import io

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.app.help_page import help_template
from rl_trainers.app.run import run
from rl_trainers.configs import PPOTrainerConfig
from rl_trainers.errors import ConfigError

from .conftest import PIXELS

#: CartPole-v1: 400x600 frames at 50 fps (a GIF frame of 20 ms).
CARTPOLE_FRAME = (400, 600, 3)
VIDEO = ["eval.episodes=1", "eval.video=true"]


def gif_frames(data: bytes, frame_ms: int) -> tuple[int, tuple[int, int]]:
    """The number of video frames of a GIF (Pillow merges identical consecutive frames into
    one longer frame, so frames are counted from the total duration) and its (H, W)."""
    image = Image.open(io.BytesIO(data))
    total = 0
    for i in range(image.n_frames):
        image.seek(i)
        total += image.info["duration"]
    assert total % frame_ms == 0
    return total // frame_ms, (image.height, image.width)


def rendered_frame_shape(env_name: str) -> tuple[int, ...]:
    env = gym.make(env_name, render_mode="rgb_array")
    env.reset(seed=0)
    shape = env.render().shape
    env.close()
    return shape


def render_modes(trainer) -> tuple[str | None, str | None]:
    """The render modes of the training env's and the evaluation env's gymnasium envs."""
    train_env = trainer.collector.env.base_env.env
    eval_env = trainer.eval_env.base_env.env
    return train_env.render_mode, eval_env.render_mode


def test_csv_gets_a_video_per_evaluation_as_long_as_the_episode(tiny_config, tmp_path):
    """Evaluations at 128 and 256 frames and the final one (also at 256: one video); each
    video holds one frame per step of the evaluation episode (CartPole: its return), capped
    at eval.video_max_frames, at the size env.render() gives."""
    assert rendered_frame_shape("CartPole-v1") == CARTPOLE_FRAME
    cap = 60
    overrides = [*VIDEO, "eval.interval=128", f"eval.video_max_frames={cap}"]
    run(tiny_config("ppo", overrides), output_dir=tmp_path)
    root = tmp_path / "logs" / "ppo_CartPole-v1"
    videos = sorted(p.name for p in (root / "videos").rglob("*") if p.is_file())
    assert videos == ["video_128.gif", "video_256.gif"]
    with open(root / "scalars" / "eval" / "return_mean.csv") as f:
        returns = {int(step): float(value) for step, value in csv.reader(f)}
    assert sorted(returns) == [128, 256]
    for step, episode_return in returns.items():
        data = (root / "videos" / "eval" / f"video_{step}.gif").read_bytes()
        frames, size = gif_frames(data, frame_ms=20)  # render_fps 50
        assert frames == min(int(episode_return), cap)
        assert size == CARTPOLE_FRAME[:2]

    # the video is not part of the checkpoint: it resumes without video, and evaluations
    # with and without a video return the same
    with_video = build_trainer(tiny_config("ppo", overrides), tmp_path / "again")
    without = build_trainer(tiny_config("ppo", ["eval.episodes=1"]), tmp_path / "plain")
    try:
        for trainer in (with_video, without):
            trainer.load_from_file(tmp_path / "checkpoints" / "trainer.pt")
        assert with_video.evaluate_final() == without.evaluate_final()
        assert render_modes(with_video) == (None, "rgb_array")
        assert render_modes(without) == (None, None) and without.eval_video is None
    finally:
        close_trainer(with_video)
        close_trainer(without)
    assert list((tmp_path / "plain" / "logs").rglob("*.gif")) == []
    (again,) = (tmp_path / "again" / "logs").rglob("*.gif")
    assert again.name == "video_256.gif"


def test_off_by_default_nothing_renders_nor_is_written(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["eval.episodes=1"])
    assert cfg.eval.video is False
    trainer = build_trainer(cfg, tmp_path)
    try:
        assert trainer.eval_video is None and render_modes(trainer) == (None, None)
        trainer.evaluate_final()
    finally:
        close_trainer(trainer)
    assert [p for p in (tmp_path / "logs").rglob("*") if p.is_file() and "videos" in p.parts] == []


def test_tensorboard_image_summary_at_the_evaluation_step(tiny_config, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    overrides = [*VIDEO, "logger=tensorboard", "eval.video_max_frames=5", "eval.video_fps=10"]
    run(tiny_config("ppo", overrides), output_dir=tmp_path)
    (run_dir,) = (tmp_path / "tensorboard").iterdir()
    events = EventAccumulator(str(run_dir), size_guidance={"images": 0})
    events.Reload()
    assert "eval/video" in events.Tags()["images"]
    (image,) = events.Images("eval/video")
    assert image.step == 256
    frames, size = gif_frames(image.encoded_image_string, frame_ms=100)
    assert frames <= 5 and size == CARTPOLE_FRAME[:2]


def test_pixel_env_videos_are_the_full_rendered_frames(tiny_config, tmp_path):
    """With env.from_pixels the policy sees 84x84 grey frames; the video is the env's own
    colour rendering."""
    overrides = [*PIXELS["ppo"], *VIDEO, "eval.video_max_frames=3", "logger.video_format=pt"]
    trainer = build_trainer(tiny_config("ppo", overrides), tmp_path)
    try:
        trainer.evaluate_final()
    finally:
        close_trainer(trainer)
    import torch

    (path,) = (tmp_path / "logs").rglob("video_0.pt")
    video = torch.load(path)
    assert video.dtype == torch.uint8 and tuple(video.shape[1:]) == (3, 400, 600)
    assert 1 <= video.shape[0] <= 3


@pytest.mark.parametrize("logger", ["mlflow", "wandb"])
def test_mlflow_artifact_and_wandb_media_file(logger, tiny_config, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    overrides = [*VIDEO, f"logger={logger}", "eval.video_max_frames=3"]
    trainer = build_trainer(tiny_config("ppo", overrides), tmp_path)
    try:
        trainer.evaluate_final()
        run_id = getattr(trainer.logger, "run_id", None)
    finally:
        close_trainer(trainer)
    if logger == "mlflow":
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=trainer.logger.tracking_uri)
        paths = [a.path for a in client.list_artifacts(run_id, "videos/eval")]
        assert paths == ["videos/eval/video_0.gif"]
        local = client.download_artifacts(run_id, paths[0], str(tmp_path / "download"))
        with open(local, "rb") as f:
            assert gif_frames(f.read(), frame_ms=20)[1] == CARTPOLE_FRAME[:2]
    else:
        pattern = str(tmp_path / "wandb" / "offline-run-*" / "files" / "media" / "videos")
        (media,) = glob.glob(pattern + "/eval/video_0_*.gif")
        with open(media, "rb") as f:
            assert gif_frames(f.read(), frame_ms=20)[1] == CARTPOLE_FRAME[:2]


class NoRenderEnv(gym.Env):
    """An env that cannot render (no ``rgb_array`` in its render modes)."""

    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, False, {}


def test_an_env_that_cannot_render_is_a_config_error_at_start(tiny_config, tmp_path):
    if "NoRenderEnv-v0" not in gym.registry:
        gym.register("NoRenderEnv-v0", entry_point=NoRenderEnv, max_episode_steps=20)
    with pytest.raises(ConfigError) as info:
        build_trainer(tiny_config("ppo", [*VIDEO, "env.env_name=NoRenderEnv-v0"]), tmp_path)
    message = str(info.value)
    assert message.startswith("eval.video=True is invalid: NoRenderEnv-v0 cannot render")
    assert "rgb_array" in message
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").rglob("*.csv"))


@pytest.mark.parametrize(
    "override, field",
    [("eval.video_fps=0", "eval.video_fps"), ("eval.video_max_frames=0", "eval.video_max_frames")],
)
def test_video_settings_must_be_positive(override, field, tiny_config, tmp_path):
    with pytest.raises(ConfigError, match=field):
        build_trainer(tiny_config("ppo", [*VIDEO, override]), tmp_path)


def test_help_lists_the_video_fields():
    text = help_template("ppo_trainer", PPOTrainerConfig)
    for field in ("eval.video (bool)", "eval.video_fps", "eval.video_max_frames"):
        assert field in text
    assert "logger.video_format" in text
