"""torchrl's "Get started with logging" (getting-started-4), ported, and the recorders page's
``PixelRenderTransform`` example (torchrl docs, reference/envs_recorders).

The scripts run as written with ``torchrl`` replaced by ``rl_trainers`` (videos as GIF where
the page asks for mp4 and no mp4 encoder is installed).
"""

from __future__ import annotations

import gc
import importlib.util

import pytest
import torch

from rl_trainers.envs import Compose, RewardSum, StepCounter, Transform

pytest.importorskip("pygame")  # CartPole's rgb_array rendering

HAS_MP4 = importlib.util.find_spec("imageio_ffmpeg") is not None


def test_getting_started_4_csv_logger_and_video_recorder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    from rl_trainers.record import CSVLogger

    logger = CSVLogger(exp_name="my_exp")

    logger.log_scalar("my_scalar", 0.4)
    # the CSV logger writes under ./csv_logs/<exp_name>, one file per scalar
    scalar_file = tmp_path / "csv_logs" / "my_exp" / "scalars" / "my_scalar.csv"
    assert scalar_file.read_text().strip().split(",") == ["0", "0.4"]

    from rl_trainers.envs import GymEnv

    env = GymEnv("CartPole-v1", from_pixels=True, pixels_only=False)

    rollout = env.rollout(max_steps=3)
    print(rollout)
    assert rollout["pixels"].shape == (3, 400, 600, 3) and rollout["pixels"].dtype == torch.uint8
    assert rollout["observation"].shape == (3, 4)  # pixels_only=False keeps the observations

    from rl_trainers.envs import TransformedEnv
    from rl_trainers.record import VideoRecorder

    recorder = VideoRecorder(logger, tag="my_video")
    record_env = TransformedEnv(env, recorder)

    rollout = record_env.rollout(max_steps=3)
    # the reset frame and 3 steps, one frame in two kept (skip=2 for a single env)
    assert len(recorder.obs) == 2
    recorder.dump()
    videos = list((tmp_path / "csv_logs" / "my_exp" / "videos").iterdir())
    assert [v.name for v in videos] == ["my_video_0.pt"]
    video = torch.load(videos[0])
    assert video.shape[-4:] == (2, 3, 400, 600) and video.dtype == torch.uint8
    # frames 2 and 4 of [reset, step 1, step 2, step 3]: the frames after steps 1 and 3
    kept = rollout["next", "pixels"][[0, 2]].permute(0, 3, 1, 2)
    torch.testing.assert_close(video.reshape(2, 3, 400, 600), kept)


@pytest.mark.skipif(HAS_MP4, reason="an mp4 encoder is installed")
def test_mp4_videos_without_an_encoder_say_what_to_install(tmp_path):
    from rl_trainers.record import CSVLogger

    logger = CSVLogger(exp_name="dqn", log_dir=str(tmp_path), video_format="mp4")
    with pytest.raises(ImportError, match="imageio-ffmpeg"):
        logger.log_video("video", torch.zeros(1, 2, 3, 8, 8, dtype=torch.uint8))


def _make_env():
    from rl_trainers.envs import GymEnv

    return GymEnv("CartPole-v1", render_mode="rgb_array")


def _make_rendered_env():
    from rl_trainers.record.recorder import PixelRenderTransform

    env = _make_env()
    env = env.append_transform(PixelRenderTransform())
    return env


def test_pixel_render_transform_on_a_single_env_has_a_pixels_spec(tmp_path):
    from rl_trainers.envs import check_env_specs
    from rl_trainers.record.loggers import CSVLogger
    from rl_trainers.record.recorder import PixelRenderTransform, VideoRecorder

    logger = CSVLogger("dummy", log_dir=str(tmp_path), video_format="gif")
    env = _make_env().append_transform(PixelRenderTransform())
    env = env.append_transform(VideoRecorder(logger=logger, tag="pixels_record"))
    env.rollout(3)
    # gymnasium cannot render before a reset: the frame's spec is added at the first one
    assert env.observation_spec["pixels"].shape == (400, 600, 3)
    assert env.observation_spec["pixels"].dtype == torch.uint8
    check_env_specs(env)
    r = env.rollout(30)
    assert r["pixels"].shape[1:] == (400, 600, 3)
    env.transform.dump()  # a Compose of two transforms dumps its recorder
    assert (tmp_path / "dummy" / "videos" / "pixels_record_0.gif").stat().st_size > 0


@pytest.mark.parametrize("per_env", [False, True], ids=["batched-transform", "per-env"])
def test_pixel_render_transform_docs_example_on_a_parallel_env(tmp_path, per_env):
    from rl_trainers.envs import EnvCreator, ParallelEnv, check_env_specs
    from rl_trainers.record.loggers import CSVLogger
    from rl_trainers.record.recorder import PixelRenderTransform, VideoRecorder

    logger = CSVLogger("dummy", log_dir=str(tmp_path), video_format="mp4" if HAS_MP4 else "gif")
    env = ParallelEnv(2, EnvCreator(_make_rendered_env if per_env else _make_env))
    try:
        env.start()
        if not per_env:
            env = env.append_transform(PixelRenderTransform())
        env = env.append_transform(VideoRecorder(logger=logger, tag="pixels_record"))
        env.rollout(3)

        check_env_specs(env)

        r = env.rollout(30)  # stops at the first end of episode of either sub-env
        assert r["pixels"].shape[0] == 2 and r["pixels"].shape[-1] == 3
        assert r["pixels"].shape[1] == 30 or r["next", "done"][:, -1].any()
        print(env)
        env.transform.dump()
    finally:
        env.close()
    videos = list((tmp_path / "dummy" / "videos").iterdir())
    assert len(videos) == 1 and videos[0].stat().st_size > 0


def test_a_transform_parent_view_does_not_close_a_parallel_env():
    from rl_trainers.envs import EnvCreator, ParallelEnv, TransformedEnv

    env = TransformedEnv(ParallelEnv(2, EnvCreator(_make_env)), Compose(StepCounter(), RewardSum()))
    try:
        td = env.reset()
        view = env.transform[1].parent  # the base env seen through the StepCounter
        assert "step_count" in view.observation_spec.keys()
        del view
        gc.collect()
        assert not env.base_env.is_closed  # e.g. a recorder asking its parent mid-rollout
        assert env.rand_step(td)["next", "step_count"].shape == (2, 1)
    finally:
        env.close()


class _Unspecced(Transform):
    """Writes an entry that no spec describes."""

    def _call(self, tensordict):
        tensordict.set("extra", torch.zeros(tensordict.batch_size))
        return tensordict

    def _reset(self, tensordict, tensordict_reset):
        return self._call(tensordict_reset)


def test_check_env_specs_names_rollout_entries_missing_from_the_specs():
    from rl_trainers.envs import TransformedEnv, check_env_specs

    env = TransformedEnv(_make_env(), _Unspecced())
    with pytest.raises(AssertionError, match=r"'extra'\] are in a rollout but not in the specs"):
        check_env_specs(env)
