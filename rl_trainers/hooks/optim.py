"""Optimisation hooks: OptimizerHook (defined with the Trainer), LRSchedulerHook and
ClearCudaCache."""

from __future__ import annotations

from typing import Any, Literal

import torch

from rl_trainers.core.loop import OptimizerHook, Trainer, TrainerHookBase

__all__ = ["ClearCudaCache", "LRSchedulerHook", "OptimizerHook"]


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


class LRSchedulerHook(TrainerHookBase):
    """Step a learning-rate scheduler during training (torchrl 0.14's hook).

    Args:
        scheduler: a ``torch.optim.lr_scheduler`` scheduler.
        interval: ``"batch"`` steps it once per collected batch (at ``post_steps``),
            ``"optim"`` after every optimisation step (at ``post_optim``).

    The scheduler is stepped only when an optimisation step ran since the hook's last
    call, so the learning rate does not decay during the collector's random warm-up (also
    when the hook is placed with ``trainer.register_op``).
    :meth:`register` also checkpoints the scheduler.

    Examples:
        >>> scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100)
        >>> LRSchedulerHook(scheduler).register(trainer)  # doctest: +SKIP
    """

    def __init__(self, scheduler: Any, interval: Literal["batch", "optim"] = "batch") -> None:
        if interval not in ("batch", "optim"):
            raise ValueError(f"interval must be 'batch' or 'optim', got {interval!r}.")
        if not callable(getattr(scheduler, "step", None)):
            raise TypeError(f"{type(scheduler).__name__} has no step() method.")
        self.scheduler = scheduler
        self.interval = interval
        self._trainer: Trainer | None = None
        self._last_optim_count = 0

    def _bind(self, trainer: Trainer) -> None:
        # placed with trainer.register_op: skip the warm-up as register() does
        if self._trainer is None:
            self._trainer = trainer
            self._last_optim_count = trainer._optim_count

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        trainer = self._trainer
        if trainer is not None:
            count = trainer._optim_count
            if count == self._last_optim_count:
                return  # no optimisation since the last call (random warm-up)
            self._last_optim_count = count
        self.scheduler.step()

    def register(self, trainer: Trainer, name: str = "lr_scheduler") -> None:
        """Register at ``post_steps`` (``"batch"``) or ``post_optim`` (``"optim"``) and
        checkpoint the scheduler."""
        self._trainer = trainer
        self._last_optim_count = trainer._optim_count
        trainer.register_op("post_steps" if self.interval == "batch" else "post_optim", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state and the optimisation count seen last."""
        return {"scheduler": self.scheduler.state_dict(), "optim_count": self._last_optim_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scheduler's state."""
        self.scheduler.load_state_dict(state_dict["scheduler"])
        self._last_optim_count = int(state_dict.get("optim_count", 0))
