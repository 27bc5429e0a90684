"""Env transforms that record rollouts: frames to a logger, tensordicts to disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from copy import copy
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.envs.transforms import Transform
from rl_trainers.record.loggers.common import Logger, _tile
from rl_trainers.record.rendering import PixelRenderTransform  # torchrl's import path

__all__ = ["VideoRecorder", "TensorDictRecorder", "PixelRenderTransform"]


def _to_chw_uint8(frame: torch.Tensor) -> torch.Tensor:
    """Returns ``[*B, C, H, W]`` uint8 from ``[*B, H, W, C]`` / ``[*B, C, H, W]`` / ``[H, W]``.

    Channel-last is assumed when the last dim has 1, 3 or 4 entries, channel-first when
    dim -3 does; when both do, uint8 frames (raw ``pixels``) are read as channel-last and
    float frames (``ToTensorImage`` output) as channel-first. Floats with a maximum of at
    most 1 are read as ``[0, 1]`` intensities.
    """
    if frame.ndim == 2:
        return _to_chw_uint8(frame.unsqueeze(0))
    last = frame.shape[-1] in (1, 3, 4)
    first = frame.shape[-3] in (1, 3, 4)
    if last and (not first or not frame.is_floating_point()):
        frame = frame.movedim(-1, -3)
    elif not first:
        raise RuntimeError(
            "VideoRecorder expects frames [*B, H, W, C] or [*B, C, H, W] with C in {1, 3, 4}, "
            f"got shape {tuple(frame.shape)}."
        )
    if frame.dtype != torch.uint8:
        frame = frame.float()
        if frame.numel() and frame.max() <= 1.0:
            frame = frame * 255
        frame = frame.round().clamp(0, 255).to(torch.uint8)
    return frame


def _center_crop(frame: torch.Tensor, size: int) -> torch.Tensor:
    """Crops the central ``size x size`` window of ``[..., H, W]`` (zero-padding if smaller)."""
    height, width = frame.shape[-2:]
    if height < size or width < size:
        pad_h, pad_w = max(size - height, 0), max(size - width, 0)
        frame = torch.nn.functional.pad(
            frame, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2)
        )
        height, width = frame.shape[-2:]
    top, left = (height - size) // 2, (width - size) // 2
    return frame[..., top : top + size, left : left + size]


class VideoRecorder(Transform):
    """Video Recorder transform: stores the frames seen in rollouts, logs them on ``dump``.

    Frames are read from ``in_keys`` on every reset and step (every ``skip``-th one is
    kept), converted to uint8 ``[C, H, W]`` and kept on CPU. :meth:`dump` sends the video
    ``[1, T, C, H, W]`` to ``logger.log_video(tag, video, step=..., **kwargs)`` and clears
    the buffer. The tensordict passes through unchanged.

    Args:
        logger: where :meth:`dump` writes (``None`` keeps frames but logs nothing).
        tag: the video name in the logger.
        in_keys: the frame keys; defaults to ``["pixels"]``.
        skip: keep one frame every ``skip``; defaults to 2 for a non-batched parent env and
            1 otherwise.
        center_crop: crop frames to a central square of this size.
        make_grid: tile batched frames (``[B, ...]``) into one grid frame; if ``False``
            batched frames are appended one after the other.
        out_keys: kept for API compatibility (frames are never modified); defaults to
            ``in_keys``.
        fps: frames per second passed to the logger.
        **kwargs: more keyword arguments for ``logger.log_video``.

    Examples:
        >>> logger = CSVLogger("exp", video_format="gif")  # doctest: +SKIP
        >>> env = TransformedEnv(GymEnv("CartPole-v1", from_pixels=True),
        ...                      VideoRecorder(logger, tag="eval"))  # doctest: +SKIP
        >>> env.rollout(100); env.transform.dump()  # doctest: +SKIP
    """

    def __init__(
        self,
        logger: Logger | None,
        tag: str,
        in_keys: Sequence[NestedKey] | None = None,
        skip: int | None = None,
        center_crop: int | None = None,
        make_grid: bool = True,
        out_keys: Sequence[NestedKey] | None = None,
        fps: int | None = None,
        **kwargs: Any,
    ) -> None:
        if in_keys is None:
            in_keys = ["pixels"]
        if out_keys is None:
            out_keys = copy(in_keys)
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if skip is not None and skip < 1:
            raise ValueError(f"skip must be a positive integer, got {skip}.")
        self.logger = logger
        self.tag = tag
        self._skip = skip
        self.center_crop = center_crop
        self.make_grid = make_grid
        self.video_kwargs = dict(kwargs)
        if fps is not None:
            self.video_kwargs["fps"] = fps
        self.obs: list[torch.Tensor] = []
        self.count = 0
        self.iter = 0

    @property
    def skip(self) -> int:
        """Frame interval: explicit value, else 2 for a non-batched parent env, else 1."""
        if self._skip is not None:
            return self._skip
        env = self.container
        while isinstance(env, Transform):  # a Compose: its env has the parent's batch size
            env = env.container
        if env is None:
            return 1  # not attached yet: decide again once attached
        self._skip = 2 if len(getattr(env, "batch_size", ())) == 0 else 1
        return self._skip

    @skip.setter
    def skip(self, value: int | None) -> None:
        self._skip = value

    def _record(self, frame: torch.Tensor) -> None:
        self.count += 1
        if self.count % self.skip:
            return
        frame = _to_chw_uint8(frame.detach())
        if self.center_crop:
            frame = _center_crop(frame, int(self.center_crop))
        frame = frame.to("cpu")
        if frame.ndim == 3:
            self.obs.append(frame.clone())
        elif self.make_grid:
            flat = frame.reshape(-1, *frame.shape[-3:])
            self.obs.append(_tile(flat.unsqueeze(1))[0])
        else:
            self.obs.extend(frame.reshape(-1, *frame.shape[-3:]).clone().unbind(0))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if value is not None:
                self._record(torch.as_tensor(value))
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Records the frames of ``tensordict`` (use outside an env, e.g. on a batch)."""
        return self._call(tensordict)

    def dump(self, suffix: str | None = None, step: int | None = None) -> None:
        """Logs the stored frames as one video and clears them (no-op without frames).

        Args:
            suffix: appended to the tag as ``<tag>_<suffix>``.
            step: the logger step; defaults to the number of previous dumps.
        """
        if self.obs and self.logger is not None:
            video = torch.stack(self.obs, 0).unsqueeze(0)
            tag = self.tag if suffix is None else f"{self.tag}_{suffix}"
            self.logger.log_video(
                tag, video, step=self.iter if step is None else step, **self.video_kwargs
            )
        self.obs = []
        self.count = 0
        self.iter += 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tag={self.tag!r}, in_keys={self.in_keys}, frames={len(self.obs)})"


class TensorDictRecorder(Transform):
    """TensorDict recorder: keeps the tensordicts of a rollout and saves them on ``dump``.

    Every ``skip``-th step tensordict (what the env produced after a step) is kept;
    reset tensordicts are kept too unless ``skip_reset``. :meth:`dump` stacks them along
    a new first dimension and writes them as a memory-mapped TensorDict directory
    ``<out_file_base>_<n>`` (read it back with ``TensorDict.load_memmap``).

    Args:
        out_file_base: path prefix of the saved tensordicts.
        skip_reset: do not record the tensordicts produced by ``reset``.
        skip: keep one step tensordict every ``skip``.
        in_keys: the entries to keep; ``None`` keeps all (only the keys common to every
            recorded tensordict are saved).
    """

    def __init__(
        self,
        out_file_base: str,
        skip_reset: bool = True,
        skip: int = 4,
        in_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if skip < 1:
            raise ValueError(f"skip must be a positive integer, got {skip}.")
        self._select = list(in_keys) if in_keys is not None else None
        super().__init__(in_keys=list(in_keys) if in_keys is not None else [])
        self.out_file_base = str(out_file_base)
        self.skip_reset = skip_reset
        self.skip = skip
        self.td: list[TensorDictBase] = []
        self.count = 0
        self.iter = 0

    def _store(self, tensordict: TensorDictBase) -> None:
        td = tensordict if self._select is None else tensordict.select(*self._select, strict=False)
        self.td.append(td.clone())

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self.skip == 0:
            self._store(tensordict)
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if not self.skip_reset:
            self._store(tensordict_reset)
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Records ``tensordict`` as a step tensordict."""
        return self._call(tensordict)

    def dump(self, suffix: str | None = None) -> Path | None:
        """Saves the recorded tensordicts and clears them; returns the directory written.

        Args:
            suffix: used instead of the dump counter in the directory name.
        """
        if not self.td:
            return None
        common = set(self.td[0].keys(include_nested=True, leaves_only=True))
        for td in self.td[1:]:
            common &= set(td.keys(include_nested=True, leaves_only=True))
        stacked = torch.stack([td.select(*common) for td in self.td], 0).contiguous()
        path = Path(f"{self.out_file_base}_{self.iter if suffix is None else suffix}")
        os.makedirs(path.parent, exist_ok=True)
        stacked.memmap(path)
        self.td = []
        self.count = 0
        self.iter += 1
        return path
