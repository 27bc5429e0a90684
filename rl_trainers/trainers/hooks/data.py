"""Data-processing hooks: sub-sampling and key selection."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.trainers.trainer import Trainer, TrainerHookBase

__all__ = ["BatchSubSampler", "SelectKeys"]


class BatchSubSampler(TrainerHookBase):
    """Draw a random sub-batch from a collected ``[*B, T]`` batch for each optimisation step.

    With ``sub_traj_len=0`` it returns ``batch_size`` transitions drawn uniformly (with
    replacement) from the flattened batch, shaped ``[batch_size]``. With ``sub_traj_len=L``
    it returns ``batch_size // L`` contiguous time windows of length ``L``, shaped
    ``[batch_size // L, L]``, each from a random environment row and start step. If the
    batch holds fewer than ``L`` steps, the whole time axis is used, provided it holds at
    least ``min_sub_traj_len`` steps.

    Args:
        batch_size: number of transitions per sub-batch.
        sub_traj_len: length of the sampled windows (0: independent transitions).
        min_sub_traj_len: shortest acceptable window when the batch is short.
    """

    def __init__(self, batch_size: int, sub_traj_len: int = 0, min_sub_traj_len: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
        if sub_traj_len < 0 or min_sub_traj_len < 0:
            raise ValueError(
                f"sub_traj_len and min_sub_traj_len must be >= 0, got {sub_traj_len} and "
                f"{min_sub_traj_len}."
            )
        self.batch_size = batch_size
        self.sub_traj_len = sub_traj_len
        self.min_sub_traj_len = min_sub_traj_len

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        if self.sub_traj_len == 0:
            flat = batch.reshape(-1)
            idx = torch.randint(flat.shape[0], (self.batch_size,), device=flat.device)
            return flat[idx]
        if batch.ndim < 1:
            raise ValueError("BatchSubSampler with sub_traj_len > 0 needs a batch with a time dim.")
        rows = batch.reshape(-1, batch.shape[-1]) if batch.ndim != 2 else batch
        n_rows, t = rows.shape
        length = min(self.sub_traj_len, t)
        if length < max(self.min_sub_traj_len, 1):
            raise ValueError(
                f"The batch has {t} time steps, fewer than min_sub_traj_len="
                f"{self.min_sub_traj_len}."
            )
        n = max(1, self.batch_size // length)
        row = torch.randint(n_rows, (n, 1), device=rows.device)
        start = torch.randint(t - length + 1, (n, 1), device=rows.device)
        time_idx = start + torch.arange(length, device=rows.device)
        return rows[row.expand(n, length), time_idx]

    def register(self, trainer: Trainer, name: str = "batch_subsampler") -> None:
        """Register at ``"process_optim_batch"``."""
        trainer.register_op("process_optim_batch", self)


class SelectKeys(TrainerHookBase):
    """Keep only ``keys`` in each collected batch (``batch_process``).

    Args:
        keys: the (possibly nested) keys to keep; missing keys raise a KeyError.
    """

    def __init__(self, keys: Sequence[NestedKey]) -> None:
        if isinstance(keys, (str, tuple)):
            keys = [keys]
        self.keys = list(keys)

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        return batch.select(*self.keys, strict=True)

    def register(self, trainer: Trainer, name: str = "select_keys") -> None:
        """Register at ``"batch_process"``."""
        trainer.register_op("batch_process", self)
