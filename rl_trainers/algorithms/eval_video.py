"""Videos of evaluation episodes (``eval.video=true``).

Only the evaluation env renders: it is built with ``render_mode="rgb_array"`` (the training
env is untouched). Each evaluation records the first episode of sub-env 0, one frame per
action (the frame the action was chosen from, so an episode of ``L`` steps gives ``L``
frames, at most ``eval.video_max_frames``), and logs it with
``logger.log_video("eval/video", video, step=<frames collected>)``. Frames are rendered
from the gymnasium env itself, beside the env's transforms: observation normalisers and
pixel transforms neither see nor change them.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict

from rl_trainers.errors import ConfigError

#: The tag of the videos in the logger.
VIDEO_TAG = "eval/video"
#: Frames per second of videos of envs whose metadata has no ``render_fps``.
DEFAULT_FPS = 30


def eval_env_overrides(cfg: DictConfig) -> dict[str, Any]:
    """Extra ``env`` node arguments for the evaluation env: with ``eval.video``, gymnasium
    makes its envs with ``render_mode="rgb_array"`` (added to ``env.make_kwargs``)."""
    if not cfg.eval.get("video", False):
        return {}
    make_kwargs = cfg.env.get("make_kwargs") or {}
    if isinstance(make_kwargs, DictConfig):
        make_kwargs = OmegaConf.to_container(make_kwargs, resolve=True)
    return {"make_kwargs": {**make_kwargs, "render_mode": "rgb_array"}}


@contextlib.contextmanager
def rendering_setup(enabled: bool) -> Iterator[None]:
    """While building a rendering env: headless defaults for pygame and MuJoCo (as for
    ``env.from_pixels``), and no gymnasium warning about an unsupported render mode
    (:func:`check_renders` reports it as an error instead)."""
    if not enabled:
        yield
        return
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("MUJOCO_GL", "egl")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*render_mode.*")
        yield


def check_video_config(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` for a video frame rate or length that is not positive."""
    fps = cfg.eval.get("video_fps")
    if fps is not None and fps <= 0:
        raise ConfigError("eval.video_fps", fps, "a positive frame rate, or null (the env's)")
    frames = cfg.eval.get("video_max_frames", 1)
    if frames is None or frames <= 0:
        raise ConfigError("eval.video_max_frames", frames, "a positive number of frames")
    if cfg.eval.get("video") and cfg.get("logger") is not None:
        fmt = cfg.logger.get("video_format")
        if fmt == "mp4" and not _can_write_mp4():  # found now, not at the first video
            raise ConfigError(
                "logger.video_format",
                fmt,
                "gif or pt: mp4 videos need imageio with its ffmpeg plugin (imageio-ffmpeg), "
                'which is not installed: pip install "rl_trainers[video]"',
            )


def _can_write_mp4() -> bool:
    """Whether imageio and a backend it writes mp4 with (imageio-ffmpeg or PyAV) import."""
    from importlib.util import find_spec

    return find_spec("imageio") is not None and (
        find_spec("imageio_ffmpeg") is not None or find_spec("av") is not None
    )


def video_fps(cfg: DictConfig, eval_env: Any) -> int | None:
    """``eval.video_fps``, else (with ``eval.video``) the env's ``render_fps`` over
    ``env.frame_skip`` (else :data:`DEFAULT_FPS`); None without ``eval.video``."""
    if not cfg.eval.get("video", False):
        return None
    fps = cfg.eval.get("video_fps")
    if fps:
        return int(fps)
    return SubEnvRenderer(eval_env).fps(frame_skip=cfg.env.get("frame_skip", 1))


class SubEnvRenderer:
    """Renders sub-env 0 of an rl_trainers gymnasium env (batched or not, transformed or not).

    Args:
        env: a ``GymEnv``/``SerialEnv``/``ParallelEnv``, or a ``TransformedEnv`` of one,
            whose gymnasium envs were made with ``render_mode="rgb_array"``.
    """

    def __init__(self, env: Any) -> None:
        base = env
        while hasattr(base, "base_env"):
            base = base.base_env
        gym_env = getattr(base, "env", None)
        if not isinstance(gym_env, gym.Env | gym.vector.VectorEnv):
            raise TypeError(
                f"cannot render {type(env).__name__}: not a gymnasium-backed rl_trainers env"
            )
        self.gym_env = gym_env
        self.frame_skip = int(vars(base).get("frame_skip", 1))

    @property
    def metadata(self) -> dict[str, Any]:
        """The gymnasium env's metadata (``render_modes``, ``render_fps``)."""
        return dict(self.gym_env.metadata or {})

    def fps(self, frame_skip: int | None = None) -> int:
        """Real-time frame rate: ``render_fps`` over the frame skip, else :data:`DEFAULT_FPS`."""
        render_fps = self.metadata.get("render_fps")
        if not render_fps:
            return DEFAULT_FPS
        skip = self.frame_skip if frame_skip is None else int(frame_skip)
        return max(1, round(float(render_fps) / max(skip, 1)))

    def render(self) -> np.ndarray:
        """Sub-env 0's current frame, ``[H, W, 3]`` uint8."""
        env = self.gym_env
        if isinstance(env, gym.vector.SyncVectorEnv):
            return env.envs[0].render()
        if isinstance(env, gym.vector.VectorEnv):  # sub-envs in worker processes: all render
            return env.call("render")[0]
        return env.render()

    def is_mujoco(self) -> bool:
        """Whether sub-env 0 is a MuJoCo env (rendered through OpenGL, ``MUJOCO_GL``)."""
        env = self.gym_env
        if isinstance(env, gym.vector.SyncVectorEnv):
            env = env.envs[0]
        if isinstance(env, gym.vector.VectorEnv):
            return False
        return "mujoco" in type(env.unwrapped).__module__

    def reset(self) -> None:
        """Reset sub-env 0 (gymnasium envs render only after a reset)."""
        env = self.gym_env
        if isinstance(env, gym.vector.SyncVectorEnv):
            env.envs[0].reset()
        else:
            env.reset()


def check_renders(env: Any, env_name: str) -> None:
    """Render one frame of ``env``'s sub-env 0 now, so that an env that cannot render stops
    the run at start-up with a :class:`ConfigError` on ``eval.video`` naming the cause.

    Resets sub-env 0 (every evaluation reseeds the evaluation env first, so no result
    changes).
    """
    renderer = SubEnvRenderer(env)
    modes = list(renderer.metadata.get("render_modes") or [])
    if "rgb_array" not in modes:
        raise ConfigError(
            "eval.video",
            True,
            f"{env_name} cannot render frames: its render modes are {modes}, without 'rgb_array'",
        )
    try:
        renderer.reset()
        frame = renderer.render()
    except Exception as err:  # noqa: BLE001 - any rendering failure is reported the same way
        cause = " ".join(f"{type(err).__name__}: {err}".split())
        hint = ""
        if renderer.is_mujoco():
            hint = (
                f" (MUJOCO_GL={os.environ.get('MUJOCO_GL')}; headless machines need "
                "MUJOCO_GL=egl or osmesa and their OpenGL libraries)"
            )
        raise ConfigError(
            "eval.video", True, f"{env_name} could not render a frame: {cause}{hint}"
        ) from None
    shape = getattr(frame, "shape", None)
    if shape is None or len(shape) != 3 or shape[-1] not in (3, 4):
        raise ConfigError(
            "eval.video",
            True,
            f"{env_name} rendered {type(frame).__name__} {shape}, not an [H, W, 3] image",
        )


class EpisodeVideo:
    """Records sub-env 0's first episode of an evaluation and logs it as one video.

    :func:`~rl_trainers.algorithms.build.evaluate_episodes` calls :meth:`start`
    after its reset and :meth:`step` after each step; :meth:`dump` logs the frames (through
    a :class:`~rl_trainers.record.VideoRecorder`) and clears them.

    Args:
        env: the evaluation env (see :class:`SubEnvRenderer`).
        logger: receives ``log_video(tag, [1, T, C, H, W] uint8, step=..., fps=...)``.
        fps: frame rate; None: :meth:`SubEnvRenderer.fps`.
        max_frames: stop recording after this many frames.
        tag: the video's name in the logger.
    """

    def __init__(
        self,
        env: Any,
        logger: Any,
        fps: int | None = None,
        max_frames: int = 1000,
        tag: str = VIDEO_TAG,
    ) -> None:
        from rl_trainers.record.recorder import VideoRecorder

        if max_frames < 1:
            raise ValueError(f"max_frames must be positive, got {max_frames}.")
        self.renderer = SubEnvRenderer(env)
        self.fps = int(fps) if fps else self.renderer.fps()
        self.max_frames = int(max_frames)
        self.recorder = VideoRecorder(logger, tag=tag, skip=1, fps=self.fps)
        self.recording = False

    @property
    def num_frames(self) -> int:
        """Frames recorded since the last :meth:`dump`."""
        return len(self.recorder.obs)

    def start(self) -> None:
        """Start a recording with the frame of the evaluation's first reset."""
        self.recorder.obs = []
        self.recording = True
        self._capture()

    def step(self, ended: bool) -> None:
        """After a step: stop when sub-env 0's episode ``ended`` (its env has already reset,
        so that frame is not the episode's) or the video is full, else record a frame."""
        if not self.recording:
            return
        if ended or self.num_frames >= self.max_frames:
            self.recording = False
            return
        self._capture()

    def _capture(self) -> None:
        frame = torch.from_numpy(np.ascontiguousarray(self.renderer.render()))
        self.recorder.forward(TensorDict({"pixels": frame}, batch_size=[]))

    def dump(self, step: int) -> None:
        """Log the recorded frames as one video at ``step`` and clear them."""
        self.recording = False
        self.recorder.dump(step=int(step))
