"""``RandomCropTensorDict``: a replay-buffer transform cutting random sub-trajectories.

A buffer storing whole ``[T]`` trajectories samples ``[B, T]`` batches; this transform keeps,
for each of the ``B`` items, a random window of ``sub_seq_len`` consecutive steps (the same
window for every entry of that item), as torchrl's transform of that name.

Example:
    >>> crop = RandomCropTensorDict(25, sample_dim=1)
    >>> crop(TensorDict({"obs": torch.randn(8, 200, 3)}, [8, 200])).batch_size
    torch.Size([8, 25])
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.transforms.transforms import Key, Transform

__all__ = ["RandomCropTensorDict"]


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
