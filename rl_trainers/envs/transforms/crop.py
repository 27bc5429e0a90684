"""Cropping transforms: ``Crop`` and ``CenterCrop`` cut images (observations), and
``RandomCropTensorDict`` is a replay-buffer transform cutting random sub-trajectories.

``Crop(w, h, top, left)`` keeps rows ``top .. top + w - 1`` and columns ``left .. left + h - 1``
of ``[..., H, W]`` images (torchrl's argument order: ``w`` is the size along ``H``, as in
:class:`Resize`); ``CenterCrop(w, h)`` centres the same window. Parts of the window outside
the image are zeros (torchvision's crops, which torchrl uses, pad the same way).

A buffer storing whole ``[T]`` trajectories samples ``[B, T]`` batches; this transform keeps,
for each of the ``B`` items, a random window of ``sub_seq_len`` consecutive steps (the same
window for every entry of that item), as torchrl's transform of that name.

Example:
    >>> crop = RandomCropTensorDict(25, sample_dim=1)
    >>> crop(TensorDict({"obs": torch.randn(8, 200, 3)}, [8, 200])).batch_size
    torch.Size([8, 25])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Composite
from rl_trainers.envs.transforms.shapes import _reshaped
from rl_trainers.envs.transforms.transforms import Key, Transform, _keys

__all__ = ["Crop", "CenterCrop", "RandomCropTensorDict"]


def _crop(img: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """``img[..., top:top + height, left:left + width]``, zeros where that leaves the image."""
    rows, cols = img.shape[-2:]
    if top >= 0 and left >= 0 and top + height <= rows and left + width <= cols:
        return img[..., top : top + height, left : left + width]
    out = img.new_zeros((*img.shape[:-2], height, width))
    r0, r1 = max(top, 0), min(top + height, rows)
    c0, c1 = max(left, 0), min(left + width, cols)
    if r0 < r1 and c0 < c1:
        out[..., r0 - top : r1 - top, c0 - left : c1 - left] = img[..., r0:r1, c0:c1]
    return out


def _centre_offset(size: int, crop: int) -> int:
    """Where a centred window of ``crop`` starts in ``size`` pixels (torchvision's rounding;
    negative when the window is larger: the image is then centred in zeros)."""
    if crop > size:
        return -((crop - size) // 2)
    return int(round((size - crop) / 2.0))


class _ImageCrop(Transform):
    """Shared parts of the image crops: sizes, specs."""

    def __init__(
        self,
        w: int,
        h: int | None,
        in_keys: Key | Sequence[Key] | None,
        out_keys: Key | Sequence[Key] | None,
    ) -> None:
        super().__init__(_keys(in_keys, ["pixels"]), out_keys)
        self.w = int(w)
        self.h = int(h) if h else self.w
        if self.w < 1 or self.h < 1:
            raise ValueError(f"{type(self).__name__}: w and h must be >= 1, got w={w} and h={h}.")

    def _origin(self, rows: int, cols: int) -> tuple[int, int]:
        """``(top, left)`` of the window in an image of ``rows x cols`` pixels."""
        raise NotImplementedError

    def _apply_transform(self, img: torch.Tensor) -> torch.Tensor:
        if img.ndim < 2:
            raise ValueError(
                f"{type(self).__name__} expects [..., H, W] images, got shape {tuple(img.shape)}."
            )
        top, left = self._origin(*img.shape[-2:])
        return _crop(img, top, left, self.w, self.h)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            spec = observation_spec[ik]
            shape = torch.Size([*spec.shape[:-2], self.w, self.h])
            observation_spec[ok] = _reshaped(spec, shape, self._apply_transform)
        return observation_spec


class Crop(_ImageCrop):
    """Crop images ``[..., H, W]`` to ``[..., w, h]`` starting at pixel ``(top, left)``.

    Args:
        w: output size along ``H`` (torchrl's name).
        h: output size along ``W`` (default ``w``).
        top: first row kept.
        left: first column kept.
        in_keys: image keys (default ``["pixels"]``).
        out_keys: output keys (default: ``in_keys``).
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        top: int = 0,
        left: int = 0,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(w, h, in_keys, out_keys)
        self.top, self.left = int(top), int(left)

    def _origin(self, rows: int, cols: int) -> tuple[int, int]:
        return self.top, self.left

    def __repr__(self) -> str:
        return (
            f"Crop(w={self.w}, h={self.h}, top={self.top}, left={self.left}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys})"
        )


class CenterCrop(_ImageCrop):
    """Keep the central ``w x h`` window of images ``[..., H, W]``.

    Args:
        w: output size along ``H`` (torchrl's name).
        h: output size along ``W`` (default ``w``).
        in_keys: image keys (default ``["pixels"]``).
        out_keys: output keys (default: ``in_keys``).

    Example:
        >>> env = TransformedEnv(
        ...     GymEnv("CartPole-v1", from_pixels=True), Compose(ToTensorImage(), CenterCrop(84))
        ... )  # doctest: +SKIP
        >>> env.observation_spec["pixels"].shape  # doctest: +SKIP
        torch.Size([3, 84, 84])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(w, h, in_keys, out_keys)

    def _origin(self, rows: int, cols: int) -> tuple[int, int]:
        return _centre_offset(rows, self.w), _centre_offset(cols, self.h)

    def __repr__(self) -> str:
        return (
            f"CenterCrop(w={self.w}, h={self.h}, in_keys={self.in_keys}, out_keys={self.out_keys})"
        )


class RandomCropTensorDict(Transform):
    """Keep a random window of ``sub_seq_len`` steps along ``sample_dim`` of each item.

    Args:
        sub_seq_len: length of the windows.
        sample_dim: the time dim of the TensorDict's batch (default: the last one).
        mask_key: optional bool entry of the batch's shape marking valid steps (valid steps
            first): windows then start within the valid part of each item.
    """

    def __init__(self, sub_seq_len: int, sample_dim: int = -1, mask_key: Key | None = None):
        super().__init__()
        if int(sub_seq_len) < 1:
            raise ValueError(f"sub_seq_len must be >= 1, got {sub_seq_len}.")
        self.sub_seq_len = int(sub_seq_len)
        self.sample_dim = int(sample_dim)
        self.mask_key = mask_key

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        ndim = tensordict.batch_dims
        dim = self.sample_dim % ndim if ndim else 0
        if not ndim or not -ndim <= self.sample_dim < ndim:
            raise ValueError(
                f"RandomCropTensorDict(sample_dim={self.sample_dim}) needs a TensorDict with "
                f"that batch dim, got batch size {tuple(tensordict.batch_size)}."
            )
        length, window = tensordict.batch_size[dim], self.sub_seq_len
        if length < window:
            raise RuntimeError(
                f"Cannot crop windows of {window} steps from sequences of {length} steps."
            )
        starts = self._starts(tensordict, dim, length)  # batch shape without `dim`
        steps = torch.arange(window, device=starts.device)
        index = starts.unsqueeze(dim) + steps.view(*([1] * dim), window, *([1] * (ndim - dim - 1)))
        batch_size = list(tensordict.batch_size)
        batch_size[dim] = window

        def crop(value: torch.Tensor) -> torch.Tensor:
            idx = index.view(*index.shape, *([1] * (value.ndim - ndim)))
            return value.gather(dim, idx.expand(*index.shape, *value.shape[ndim:]))

        return tensordict.apply(crop, batch_size=batch_size)

    def _starts(self, tensordict: TensorDictBase, dim: int, length: int) -> torch.Tensor:
        shape = list(tensordict.batch_size)
        del shape[dim]
        device = tensordict.device
        if self.mask_key is None:
            return torch.randint(0, length - self.sub_seq_len + 1, shape, device=device)
        valid = tensordict.get(self.mask_key).reshape(tensordict.batch_size).sum(dim)
        room = (valid - self.sub_seq_len + 1).clamp(min=1)
        return (torch.rand(shape, device=device) * room).long()

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "RandomCropTensorDict crops sampled batches (a replay-buffer transform); it cannot "
            "be appended to an environment."
        )
