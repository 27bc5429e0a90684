"""Replay-buffer hook: extend with collected batches, sample for each optimisation step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, pad

from rl_trainers.core.loop import Trainer, TrainerHookBase
from rl_trainers.data.replay_buffers import PrioritizedSampler, SamplerEnsemble
from rl_trainers.envs.utils import flatten_batch

__all__ = ["ReplayBufferTrainer"]


def _is_prioritized(replay_buffer: Any) -> bool:
    """True if the buffer can update priorities from a TensorDict and samples by priority."""
    if not hasattr(replay_buffer, "update_tensordict_priority"):
        return False
    return _samples_by_priority(getattr(replay_buffer, "sampler", None))


def _samples_by_priority(sampler: Any) -> bool:
    """A prioritized sampler (by type, or by name for samplers written elsewhere), or an
    ensemble with one among its members."""
    if isinstance(sampler, SamplerEnsemble):
        return any(_samples_by_priority(member) for member in sampler)
    return isinstance(sampler, PrioritizedSampler) or (
        sampler is not None and "prioritized" in type(sampler).__name__.lower()
    )


class ReplayBufferTrainer(TrainerHookBase):
    """Connect a replay buffer to the trainer.

    ``register`` places three operations: :meth:`extend` at ``batch_process`` (store the
    collected batch), :meth:`sample` at ``process_optim_batch`` (replace the batch with a
    sample for each optimisation step) and :meth:`update_priority` at ``post_loss`` (feed the
    loss's priority entry, e.g. ``td_error``, back to the buffer; registered only when the
    buffer's sampler is a prioritized one).

    Args:
        replay_buffer: a ``rl_trainers.data`` replay buffer (``extend``, ``sample``,
            ``update_tensordict_priority``, ``state_dict``/``load_state_dict``).
        batch_size: sample size; None uses the buffer's own ``batch_size``.
        memmap: kept for torchrl compatibility; where data lives is the storage's choice
            (use ``LazyMemmapStorage`` for memory-mapped storage). True moves batches to CPU.
        device: device the samples are moved to (None: leave them where they are).
        flatten_tensordicts: store transitions (``batch.reshape(-1)``, masked entries
            dropped); False extends the buffer with the batch as it is, which a default
            storage keeps as ``num_envs`` ``[T]`` trajectories (an ``ndim=2`` storage as
            transitions), as torchrl's hook does.
        max_dims: without ``flatten_tensordicts``, pad each batch with zeros to this shape
            so every stored item has the same shape (e.g. ``(T,)`` for variable-length
            trajectories).
        iterate: draw samples by iterating over the buffer (``iter(buffer)``, restarted when
            exhausted) instead of calling ``sample``.
    """

    def __init__(
        self,
        replay_buffer: Any,
        batch_size: int | None = None,
        memmap: bool = False,
        device: torch.device | str | None = None,
        flatten_tensordicts: bool = False,
        max_dims: Sequence[int] | None = None,
        iterate: bool = False,
    ) -> None:
        if not all(callable(getattr(replay_buffer, m, None)) for m in ("extend", "sample")):
            raise TypeError(
                f"{type(replay_buffer).__name__} has no extend() and sample() methods; "
                "expected a replay buffer such as TensorDictReplayBuffer(storage=...)."
            )
        self.replay_buffer = replay_buffer
        self.batch_size = batch_size
        self.memmap = memmap
        self.device = None if device is None else torch.device(device)
        self.flatten_tensordicts = flatten_tensordicts
        self.max_dims = None if max_dims is None else tuple(max_dims)
        self.iterate = iterate
        self._iterator = None

    def extend(self, batch: TensorDictBase) -> None:
        """Store ``batch`` in the buffer (the batch itself is passed on unchanged)."""
        if self.flatten_tensordicts:
            mask = batch.get(("collector", "mask"), None)
            batch = batch[mask] if mask is not None else flatten_batch(batch)
        elif self.max_dims is not None:
            batch = self._pad(batch)
        if self.memmap:
            batch = batch.cpu()
        self.replay_buffer.extend(batch)

    def _pad(self, batch: TensorDictBase) -> TensorDictBase:
        n = len(self.max_dims)
        lead = batch.shape[: batch.ndim - n]
        tail = batch.shape[batch.ndim - n :]
        if any(t > m for t, m in zip(tail, self.max_dims)):
            raise ValueError(f"Batch shape {tuple(batch.shape)} exceeds max_dims {self.max_dims}.")
        if tuple(tail) == self.max_dims:
            return batch
        # pad pairs run from the first batch dim to the last; leading dims are not padded
        pairs = [0, 0] * len(lead)
        for t, m in zip(tail, self.max_dims):
            pairs += [0, m - t]
        return pad(batch, pairs)

    def sample(self, batch: TensorDictBase | None = None) -> TensorDictBase:
        """Return a sample from the buffer (moved to ``device`` if set)."""
        if self.iterate:
            if self._iterator is None:
                self._iterator = iter(self.replay_buffer)
            try:
                sample = next(self._iterator)
            except StopIteration:
                self._iterator = iter(self.replay_buffer)
                sample = next(self._iterator)
        elif self.batch_size is None:
            sample = self.replay_buffer.sample()
        else:
            sample = self.replay_buffer.sample(self.batch_size)
        if self.device is not None and sample.device != self.device:
            sample = sample.to(self.device)
        return sample

    def update_priority(self, batch: TensorDictBase) -> None:
        """Update priorities from the loss-annotated sample (prioritized buffers only)."""
        update = getattr(self.replay_buffer, "update_tensordict_priority", None)
        if update is not None:
            update(batch)

    def register(
        self, trainer: Trainer, name: str = "replay_buffer", extend_at: str | None = "batch_process"
    ) -> None:
        """Register extend/sample/update_priority and checkpoint the buffer.

        ``extend_at`` is the hook point of :meth:`extend`: ``"pre_epoch"`` writes the batch
        before every pass over it (torchrl's on-policy trainers), None never (a collector
        that writes to the buffer itself, ``async_collection``).
        """
        if extend_at is not None:
            trainer.register_op(extend_at, self.extend)
        trainer.register_op("process_optim_batch", self.sample)
        if _is_prioritized(self.replay_buffer):
            trainer.register_op("post_loss", self.update_priority)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        """The buffer's state dict."""
        sd = getattr(self.replay_buffer, "state_dict", None)
        return {"replay_buffer": sd() if callable(sd) else {}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the buffer's state dict."""
        load = getattr(self.replay_buffer, "load_state_dict", None)
        if callable(load):
            load(state_dict["replay_buffer"])
