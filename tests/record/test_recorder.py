"""Recording transforms: VideoRecorder, TensorDictRecorder, PixelRenderTransform."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_trainers.envs import GymEnv
from rl_trainers.envs.transforms import Compose, TransformedEnv
from rl_trainers.record import PixelRenderTransform, TensorDictRecorder, VideoRecorder
from rl_trainers.record.loggers import CSVLogger
from rl_trainers.record.rendering import _find_render


def _frames(n, h=6, w=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, h, w, 3), dtype=torch.uint8, generator=g)


def test_video_recorder_standalone_to_csv(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    recorder = VideoRecorder(logger, tag="eval", skip=2, fps=7)
    frames = _frames(6)
    for frame in frames:
        td = TensorDict({"pixels": frame}, [])
        assert recorder(td) is td  # frames pass through untouched
    assert len(recorder.obs) == 3
    recorder.dump()
    video = torch.load(tmp_path / "exp" / "videos" / "eval_0.pt")
    assert torch.equal(video, frames[1::2].permute(0, 3, 1, 2))
    assert recorder.obs == [] and recorder.iter == 1
    recorder.dump()  # nothing recorded: no file
    recorder(TensorDict({"pixels": frames[0]}, []))
    recorder(TensorDict({"pixels": frames[1]}, []))
    recorder.dump(suffix="final", step=42)
    names = sorted(p.name for p in (tmp_path / "exp" / "videos").iterdir())
    assert names == ["eval_0.pt", "eval_final_42.pt"]
    logger.close()


class _SpyLogger:
    def __init__(self):
        self.calls = []

    def log_video(self, name, video, step=None, **kwargs):
        self.calls.append((name, video, step, kwargs))


def test_video_recorder_grid_float_and_crop():
    spy = _SpyLogger()
    grid = VideoRecorder(spy, tag="g", skip=1, fps=3)
    batch = torch.stack([torch.full((4, 4, 3), v, dtype=torch.uint8) for v in (10, 20)])
    grid(TensorDict({"pixels": batch}, [2]))
    grid.dump()
    name, video, step, kwargs = spy.calls[0]
    assert (name, step, kwargs) == ("g", 0, {"fps": 3})
    assert video.shape == (1, 1, 3, 4, 8)  # two 4x4 frames side by side
    assert video[0, 0, 0, 0, 0] == 10 and video[0, 0, 0, 0, 4] == 20

    flat = VideoRecorder(spy, tag="f", skip=1, make_grid=False)
    flat(TensorDict({"pixels": batch}, [2]))
    assert len(flat.obs) == 2

    floats = VideoRecorder(spy, tag="c", skip=1, center_crop=2)
    chw = torch.zeros(3, 4, 4)  # ambiguous shape: a float frame is read as [C, H, W]
    chw[:, 1:3, 1:3] = 1.0  # a white centre in [0, 1] floats, channel-first
    floats(TensorDict({"pixels": chw}, []))
    assert floats.obs[0].dtype == torch.uint8 and floats.obs[0].shape == (3, 2, 2)
    assert bool((floats.obs[0] == 255).all())

    with pytest.raises(RuntimeError, match=r"\[\*B, H, W, C\]"):
        floats(TensorDict({"pixels": torch.zeros(5, 5, 5)}, []))
    with pytest.raises(ValueError, match="skip"):
        VideoRecorder(spy, tag="x", skip=0)


def test_tensordict_recorder_saves_every_skip(tmp_path):
    recorder = TensorDictRecorder(str(tmp_path / "rollout"), skip=2)
    for step in range(5):
        recorder(TensorDict({"obs": torch.full((3,), float(step)), "r": torch.ones(1)}, []))
    path = recorder.dump()
    assert path == tmp_path / "rollout_0"
    loaded = TensorDict.load_memmap(path)
    assert loaded.batch_size == (2,)
    assert loaded["obs"][:, 0].tolist() == [1.0, 3.0]
    assert recorder.dump() is None

    keep = TensorDictRecorder(str(tmp_path / "sel"), skip_reset=False, skip=1, in_keys=["obs"])
    keep._reset(TensorDict(), TensorDict({"obs": torch.zeros(2)}, []))
    keep(TensorDict({"obs": torch.ones(2), "other": torch.ones(1)}, []))
    loaded = TensorDict.load_memmap(keep.dump())
    assert set(loaded.keys()) == {"obs"} and loaded["obs"].sum() == 2


def test_video_recorder_in_env_rollout(tmp_path):

    logger = CSVLogger("exp", log_dir=str(tmp_path))
    recorder = VideoRecorder(logger, tag="rollout")
    env = TransformedEnv(GymEnv("CartPole-v1", from_pixels=True, pixels_only=False), recorder)
    env.set_seed(0)
    env.rollout(6, break_when_any_done=False)
    assert recorder.skip == 2  # single env default
    env.transform.dump()
    video = torch.load(tmp_path / "exp" / "videos" / "rollout_0.pt")
    assert video.shape[0] == 3 and video.shape[1] == 3  # (reset + 6 steps) // 2 frames, RGB
    env.close()


def test_pixel_render_transform_feeds_recorder():

    spy = _SpyLogger()
    env = TransformedEnv(
        GymEnv("CartPole-v1", render_mode="rgb_array"),
        Compose(
            PixelRenderTransform(),
            VideoRecorder(spy, tag="render", skip=1),
        ),
    )
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "pixels"].dtype == torch.uint8 and td["next", "pixels"].shape[-1] == 3
    env.transform[-1].dump()
    assert spy.calls[0][1].shape[1] == 4  # reset frame + 3 step frames
    env.close()


def test_pixel_render_transform_torchrl_options():
    """torchrl's ``out_keys="..."``, ``render_method``, ``pass_tensordict`` and ``switch()``."""
    seen = []

    class Renderer(GymEnv):
        def draw(self, tensordict, scale=1):
            seen.append(tensordict is not None)
            return np.full((2, 3, 3), scale, dtype=np.uint8)

    render = PixelRenderTransform(
        out_keys="frame", render_method="draw", pass_tensordict=True, scale=7
    )
    env = TransformedEnv(Renderer("CartPole-v1"), render)
    td = env.rollout(2, break_when_any_done=False)
    assert td["next", "frame"].shape == (2, 2, 3, 3) and int(td["next", "frame"].max()) == 7
    assert seen and all(seen[-3:])
    render.switch()
    assert not render.enabled and "frame" not in env.rollout(1)["next"].keys()
    render.switch("on")
    assert render.enabled and "frame" in env.rollout(1)["next"].keys()
    with pytest.raises(ValueError, match="'on' or 'off'"):
        render.switch("maybe")
    env.close()


def test_find_render_walks_wrapped_envs():
    class Gym:
        def render(self):
            return "frame"

    class Wrapper:  # like GymEnv: no render of its own, the gymnasium env in ``.env``
        env = Gym()

    class Outer:  # like TransformedEnv: the wrapped env in ``.base_env``
        base_env = Wrapper()

    assert _find_render(Outer())() == "frame"
    with pytest.raises(RuntimeError, match="render_mode='rgb_array'"):
        _find_render(object())
    with pytest.raises(ValueError, match="one key"):
        PixelRenderTransform(out_keys=["a", "b"])
