"""Data-processing hooks: masking, sub-sampling, key selection and value estimates."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = ["BatchSubSampler", "SelectKeys", "ValueEstimatorHook", "mask_batch"]

_MASK = ("collector", "mask")


def mask_batch(batch: TensorDictBase) -> TensorDictBase:
    """Keep only the valid steps of a batch of padded trajectories.

    A batch holding ``("collector", "mask")`` (trajectories split and zero-padded by the
    collector) is indexed by that mask, which gives a flat batch of its real steps; a
    batch without a mask is returned unchanged. Register it at ``"batch_process"`` when
    the following hooks need single transitions rather than trajectories.

    Args:
        batch: a collected batch.

    Examples:
        >>> trainer.register_op("batch_process", mask_batch)
    """
    mask = batch.get(_MASK, None)
    if mask is None:
        return batch
    return batch[mask.bool()]


class BatchSubSampler(TrainerHookBase):
    """Draw a random sub-batch of a collected batch for each optimisation step.

    Semantics follow torchrl's hook of the same name:

    - a 1-D batch ``[N]`` gives the first ``batch_size`` items of a random permutation
      (no replacement; fewer if ``N < batch_size``). Steps masked out by
      ``("collector", "mask")`` are dropped first.
    - a ``[B, T]`` batch (leading dimensions beyond two are merged into ``B``) gives
      ``batch_size // L`` windows of ``L`` consecutive steps, shaped
      ``[batch_size // L, L]``, each from a random row (drawn with replacement) and a
      random start. ``L = sub_traj_len``, or the full length ``T`` when
      ``sub_traj_len <= 0`` (the default), i.e. whole trajectories.

    With a ``("collector", "mask")`` entry, row ``i`` holds ``mask[i].sum()`` valid steps
    (left-aligned, as the collector pads) and only valid steps are drawn: ``L`` is cut to
    the shortest row, but not below ``min_sub_traj_len``, and rows shorter than ``L`` are
    skipped. Without a mask every row holds ``T`` steps, so a ``sub_traj_len`` above ``T``
    is cut to ``T``, again not below ``min_sub_traj_len``.

    Args:
        batch_size: number of transitions per sub-batch.
        sub_traj_len: length of the sampled windows; ``<= 0`` means the whole time axis.
        min_sub_traj_len: shortest acceptable window when rows are short (``<= 0``: none).

    Raises:
        ValueError: if no row holds ``max(L, min_sub_traj_len)`` valid steps.
        RuntimeError: if ``batch_size < L`` (the sub-batch would be empty).

    Examples:
        >>> td = TensorDict({"a": torch.arange(20).reshape(2, 10)}, [2, 10])
        >>> BatchSubSampler(batch_size=10, sub_traj_len=5)(td).shape
        torch.Size([2, 5])
        >>> BatchSubSampler(batch_size=20)(td).shape  # whole trajectories
        torch.Size([2, 10])
    """

    def __init__(self, batch_size: int, sub_traj_len: int = 0, min_sub_traj_len: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
        self.batch_size = int(batch_size)
        self.sub_traj_len = int(sub_traj_len)
        self.min_sub_traj_len = int(min_sub_traj_len)

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        if batch.ndim == 0:
            raise ValueError("BatchSubSampler needs a batch with at least one dimension.")
        if batch.ndim == 1:
            batch = mask_batch(batch)
            perm = torch.randperm(batch.shape[0], device=batch.device)
            return batch[perm[: self.batch_size]]
        rows = batch.reshape(-1, batch.shape[-1]) if batch.ndim > 2 else batch
        n_rows, t = rows.shape
        device = rows.device
        length = self.sub_traj_len if self.sub_traj_len > 0 else t
        mask = rows.get(_MASK, None)
        if mask is not None:
            traj_len = mask.reshape(n_rows, t).sum(-1)
        else:
            traj_len = torch.full((n_rows,), t, device=device, dtype=torch.long)
        length = max(self.min_sub_traj_len, min(length, int(traj_len.min())))
        valid_rows = (traj_len >= length).nonzero().squeeze(-1)
        if length < 1 or length > t or valid_rows.numel() == 0:
            raise ValueError(
                f"BatchSubSampler: no row of the batch holds {max(length, 1)} valid steps "
                f"(longest row: {int(traj_len.max())} of {t} steps; sub_traj_len="
                f"{self.sub_traj_len}, min_sub_traj_len={self.min_sub_traj_len})."
            )
        n = self.batch_size // length
        if n == 0:
            raise RuntimeError(
                f"BatchSubSampler: batch_size={self.batch_size} is smaller than the window "
                f"length {length}, so the sub-batch would be empty. batch_size counts the "
                "transitions of the sub-batch ([batch_size // L, L]); raise it or set "
                "sub_traj_len."
            )
        row = valid_rows[torch.randint(valid_rows.numel(), (n,), device=device)]
        n_starts = traj_len[row] - length + 1
        start = (torch.rand(n, device=device) * n_starts).long().clamp_max(n_starts - 1)
        time_idx = start.unsqueeze(-1) + torch.arange(length, device=device)
        return rows[row.unsqueeze(-1).expand(n, length), time_idx]

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


class ValueEstimatorHook(TrainerHookBase):
    """Compute value estimates (advantage, value target) over each collected batch.

    Applies a value estimator such as :class:`~rl_trainers.objectives.value.GAE` to the
    whole batch at the ``pre_epoch`` point, i.e. before each pass over the batch (with
    ``Trainer(num_epochs=N)`` the estimates are refreshed with the critic of that epoch),
    so the ``advantage`` and ``value_target`` entries are there when the loss reads
    sub-batches. The estimator's output replaces the batch if it returns a TensorDict.
    An empty batch (what the hooks see with ``async_collection=True``) or None is passed
    through untouched: compute the estimates elsewhere then (e.g. in the loss).

    Args:
        value_estimator: a callable mapping a ``[num_envs, T]`` TensorDict to the same
            TensorDict with the estimates written, e.g. ``GAE(gamma=0.99, lmbda=0.95,
            value_network=critic)``.

    Examples:
        >>> gae = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
        >>> ValueEstimatorHook(gae).register(trainer)
    """

    def __init__(self, value_estimator: Callable[[TensorDictBase], TensorDictBase]) -> None:
        if not callable(value_estimator):
            raise TypeError(
                f"value_estimator must be callable (e.g. a GAE module), got {value_estimator!r}."
            )
        self.value_estimator = value_estimator

    def __call__(self, batch: TensorDictBase | None) -> TensorDictBase | None:
        if batch is None or batch.is_empty():
            return batch
        out = self.value_estimator(batch)
        return out if isinstance(out, TensorDictBase) else batch

    def register(self, trainer: Trainer, name: str = "value_estimator") -> None:
        """Register at ``"pre_epoch"``."""
        trainer.register_op("pre_epoch", self)
