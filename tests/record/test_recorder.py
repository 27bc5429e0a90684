"""Recording transforms: VideoRecorder, TensorDictRecorder, PixelRenderTransform."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.record.loggers import CSVLogger

try:
    from rl_trainers.envs.transforms import Compose, TransformedEnv

    HAVE_TRANSFORMS = True
except ImportError:
    HAVE_TRANSFORMS = False

needs_env_transforms = pytest.mark.skipif(
    not HAVE_TRANSFORMS, reason="rl_trainers.envs.transforms (Transform base) is not there yet"
)


class _FakeTransform(nn.Module):
    """The smallest torchrl-like Transform base, used only while the real one is missing."""

    def __init__(self, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None):
        super().__init__()
        self.in_keys = list(in_keys or [])
        self.out_keys = list(out_keys or self.in_keys)
        self.parent = None


@pytest.fixture(scope="module")
def rec():
    """The recorder modules, imported over a fake Transform base if the real one is missing."""
    names = ("rl_trainers.record.recorder", "rl_trainers.record.rendering")
    if HAVE_TRANSFORMS:
        yield types.SimpleNamespace(
            **{n.rsplit(".", 1)[1]: importlib.import_module(n) for n in names}
        )
        return
    saved = {k: sys.modules.get(k) for k in (*names, "rl_trainers.envs.transforms")}
    fake = types.ModuleType("rl_trainers.envs.transforms")
    fake.Transform = _FakeTransform
    sys.modules["rl_trainers.envs.transforms"] = fake
    try:
        yield types.SimpleNamespace(
            **{n.rsplit(".", 1)[1]: importlib.import_module(n) for n in names}
        )
    finally:
        for key, module in saved.items():
            if module is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = module


def _frames(n, h=6, w=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, h, w, 3), dtype=torch.uint8, generator=g)


def test_video_recorder_standalone_to_csv(rec, tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    recorder = rec.recorder.VideoRecorder(logger, tag="eval", skip=2, fps=7)
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


def test_video_recorder_grid_float_and_crop(rec):
    spy = _SpyLogger()
    grid = rec.recorder.VideoRecorder(spy, tag="g", skip=1, fps=3)
    batch = torch.stack([torch.full((4, 4, 3), v, dtype=torch.uint8) for v in (10, 20)])
    grid(TensorDict({"pixels": batch}, [2]))
    grid.dump()
    name, video, step, kwargs = spy.calls[0]
    assert (name, step, kwargs) == ("g", 0, {"fps": 3})
    assert video.shape == (1, 1, 3, 4, 8)  # two 4x4 frames side by side
    assert video[0, 0, 0, 0, 0] == 10 and video[0, 0, 0, 0, 4] == 20

    flat = rec.recorder.VideoRecorder(spy, tag="f", skip=1, make_grid=False)
    flat(TensorDict({"pixels": batch}, [2]))
    assert len(flat.obs) == 2

    floats = rec.recorder.VideoRecorder(spy, tag="c", skip=1, center_crop=2)
    chw = torch.zeros(3, 4, 4)  # ambiguous shape: a float frame is read as [C, H, W]
    chw[:, 1:3, 1:3] = 1.0  # a white centre in [0, 1] floats, channel-first
    floats(TensorDict({"pixels": chw}, []))
    assert floats.obs[0].dtype == torch.uint8 and floats.obs[0].shape == (3, 2, 2)
    assert bool((floats.obs[0] == 255).all())

    with pytest.raises(RuntimeError, match=r"\[\*B, H, W, C\]"):
        floats(TensorDict({"pixels": torch.zeros(5, 5, 5)}, []))
    with pytest.raises(ValueError, match="skip"):
        rec.recorder.VideoRecorder(spy, tag="x", skip=0)


def test_tensordict_recorder_saves_every_skip(rec, tmp_path):
    recorder = rec.recorder.TensorDictRecorder(str(tmp_path / "rollout"), skip=2)
    for step in range(5):
        recorder(TensorDict({"obs": torch.full((3,), float(step)), "r": torch.ones(1)}, []))
    path = recorder.dump()
    assert path == tmp_path / "rollout_0"
    loaded = TensorDict.load_memmap(path)
    assert loaded.batch_size == (2,)
    assert loaded["obs"][:, 0].tolist() == [1.0, 3.0]
    assert recorder.dump() is None

    keep = rec.recorder.TensorDictRecorder(
        str(tmp_path / "sel"), skip_reset=False, skip=1, in_keys=["obs"]
    )
    keep._reset(TensorDict(), TensorDict({"obs": torch.zeros(2)}, []))
    keep(TensorDict({"obs": torch.ones(2), "other": torch.ones(1)}, []))
    loaded = TensorDict.load_memmap(keep.dump())
    assert set(loaded.keys()) == {"obs"} and loaded["obs"].sum() == 2


@needs_env_transforms
def test_video_recorder_in_env_rollout(rec, tmp_path):
    from rl_trainers.envs import GymEnv

    logger = CSVLogger("exp", log_dir=str(tmp_path))
    recorder = rec.recorder.VideoRecorder(logger, tag="rollout")
    env = TransformedEnv(GymEnv("CartPole-v1", from_pixels=True, pixels_only=False), recorder)
    env.set_seed(0)
    env.rollout(6, break_when_any_done=False)
    assert recorder.skip == 2  # single env default
    env.transform.dump()
    video = torch.load(tmp_path / "exp" / "videos" / "rollout_0.pt")
    assert video.shape[0] == 3 and video.shape[1] == 3  # (reset + 6 steps) // 2 frames, RGB
    env.close()


@needs_env_transforms
def test_pixel_render_transform_feeds_recorder(rec):
    from rl_trainers.envs import GymEnv

    spy = _SpyLogger()
    env = TransformedEnv(
        GymEnv("CartPole-v1", render_mode="rgb_array"),
        Compose(
            rec.rendering.PixelRenderTransform(),
            rec.recorder.VideoRecorder(spy, tag="render", skip=1),
        ),
    )
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "pixels"].dtype == torch.uint8 and td["next", "pixels"].shape[-1] == 3
    env.transform[-1].dump()
    assert spy.calls[0][1].shape[1] == 4  # reset frame + 3 step frames
    env.close()


def test_find_render_walks_wrapped_envs(rec):
    class Gym:
        def render(self):
            return "frame"

    class Wrapper:  # like GymEnv: no render of its own, the gymnasium env in ``.env``
        env = Gym()

    class Outer:  # like TransformedEnv: the wrapped env in ``.base_env``
        base_env = Wrapper()

    assert rec.rendering._find_render(Outer())() == "frame"
    with pytest.raises(RuntimeError, match="render_mode='rgb_array'"):
        rec.rendering._find_render(object())
    with pytest.raises(ValueError, match="one key"):
        rec.rendering.PixelRenderTransform(out_keys=["a", "b"])
