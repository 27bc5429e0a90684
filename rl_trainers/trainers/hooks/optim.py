"""Optimisation hooks: OptimizerHook (defined with the Trainer) and ClearCudaCache."""

from __future__ import annotations

import torch

from rl_trainers.trainers.trainer import OptimizerHook, Trainer, TrainerHookBase

__all__ = ["ClearCudaCache", "OptimizerHook"]


class ClearCudaCache(TrainerHookBase):
    """Release cached CUDA memory (``torch.cuda.empty_cache()``) every ``interval`` calls.

    Args:
        interval: number of calls between two cache clears.
    """

    def __init__(self, interval: int) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ValueError(f"interval must be a positive integer, got {interval!r}.")
        self.interval = interval
        self.count = 0

    def __call__(self, *args, **kwargs) -> None:
        self.count += 1
        if self.count % self.interval == 0 and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def register(self, trainer: Trainer, name: str = "clear_cuda") -> None:
        """Register at ``"pre_optim_steps"``."""
        trainer.register_op("pre_optim_steps", self)

    def state_dict(self) -> dict:
        """The call counter."""
        return {"count": self.count}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the call counter."""
        self.count = int(state_dict["count"])
