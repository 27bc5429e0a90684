"""Early stopping: end training when a logged metric stops improving."""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Literal

from tensordict.utils import NestedKey

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = ["EarlyStopping"]


def _int_arg(name: str, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0 (frames), got {value!r}.")
    return value


class EarlyStopping(TrainerHookBase):
    """Stop training when a monitored metric has not improved for ``patience`` frames.

    The metric is any value the trainer logs or a logging hook returns: ``r_training``
    from ``LogScalar``, ``r_evaluation`` from ``LogValidationReward``, a loss entry (losses
    are only computed for logging on batches that cross a multiple of ``log_interval``),
    ``grad_norm``... Values are read from :attr:`Trainer.logged_values`, so no logger is
    needed. The hook runs at ``post_steps_log``, after the hooks registered before it:
    register it after the hook that produces the metric to check a value on the batch it
    appears. Each new value either improves on the best one (by more than ``min_delta``)
    or not; training stops, as :meth:`Trainer.request_stop` does (the current batch is
    finished and a checkpoint saved if ``save_trainer_file`` is set), once more than
    ``patience`` frames were collected since the last improvement, but never before
    ``wait_for`` frames. :attr:`Trainer.interrupted` then says why.

    Args:
        monitor: the logged name to watch (a nested key is joined with ``"/"``, as the
            trainer names nested loss entries).
        mode: ``"max"`` (larger is better) or ``"min"``.
        min_delta: the smallest change that counts as an improvement.
        patience: frames without improvement allowed before stopping.
        wait_for: frames collected before stopping may happen (the metric is tracked from
            the start).
        check_finite: stop at once when the metric is NaN or infinite.

    Examples:
        >>> LogScalar(("next", "reward"), "r_training").register(trainer)
        >>> EarlyStopping(monitor="r_training", patience=10_000).register(trainer)
    """

    def __init__(
        self,
        *,
        monitor: NestedKey = "r_evaluation",
        mode: Literal["min", "max"] = "max",
        min_delta: float = 0.0,
        patience: int = 100_000,
        wait_for: int = 1_000_000,
        check_finite: bool = True,
    ) -> None:
        if isinstance(monitor, (tuple, list)):
            monitor = "/".join(monitor)
        if not isinstance(monitor, str) or not monitor:
            raise TypeError(f"monitor must be a logged name (str), got {monitor!r}.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}.")
        min_delta = float(min_delta)
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta!r}.")
        self.monitor = monitor
        self.mode = mode
        self.min_delta = min_delta
        self.patience = _int_arg("patience", patience)
        self.wait_for = _int_arg("wait_for", wait_for)
        self.check_finite = bool(check_finite)
        self.trainer: Trainer | None = None
        #: The best value seen so far and the frame it was logged at (None before any).
        self.best: float | None = None
        self.best_frame = 0
        #: The frame at which this hook stopped training, else None.
        self.stopped_frame: int | None = None
        self._seen_seq = 0
        self._warned = False

    def _bind(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def _improves(self, value: float) -> bool:
        if self.best is None:
            return True
        if self.mode == "max":
            return value > self.best + self.min_delta
        return value < self.best - self.min_delta

    def __call__(self, batch: Any = None) -> None:
        trainer = self.trainer
        if trainer is None:
            raise RuntimeError(
                "EarlyStopping reads the values of the trainer it is placed on: register it "
                "with EarlyStopping(...).register(trainer) or "
                "trainer.register_op('post_steps_log', hook)."
            )
        frames = trainer.collected_frames
        entry = trainer.logged_values.get(self.monitor)
        if entry is not None and entry[0] != self._seen_seq:
            self._seen_seq, frame, value = entry
            value = float(value)
            if not math.isfinite(value):
                if self.check_finite:
                    self._stop(f"{self.monitor} is {value} at frame {frame}")
                return None
            if self._improves(value):
                self.best, self.best_frame = value, frame
        if frames < self.wait_for:
            return None
        if self.best is None:
            self._warn_missing(frames)
        elif frames - self.best_frame > self.patience:
            self._stop(
                f"{self.monitor} did not improve on {self.best:.6g} (frame {self.best_frame}) "
                f"for {frames - self.best_frame} frames (patience {self.patience})"
            )
        return None

    def _stop(self, why: str) -> None:
        trainer = self.trainer
        self.stopped_frame = trainer.collected_frames
        reason = f"early stopping: {why}"
        print(f"{reason}; stopping.", file=sys.stderr)
        trainer.request_stop(reason)

    def _warn_missing(self, frames: int) -> None:
        if self._warned:
            return
        self._warned = True
        names = sorted(k for k in self.trainer.logged_values if k != "log_pbar")
        warnings.warn(
            f"EarlyStopping monitors {self.monitor!r}, but nothing of that name was logged in "
            f"the first {frames} frames, so it cannot stop training. Logged names: {names}.",
            stacklevel=2,
        )

    def register(self, trainer: Trainer, name: str = "early_stopping") -> None:
        """Register at ``"post_steps_log"`` and checkpoint the best value."""
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        """The best value, its frame and the stopping frame."""
        return {
            "best": self.best,
            "best_frame": self.best_frame,
            "stopped_frame": self.stopped_frame,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the best value and its frame."""
        best = state_dict["best"]
        self.best = None if best is None else float(best)
        self.best_frame = int(state_dict["best_frame"])
        stopped = state_dict.get("stopped_frame")
        self.stopped_frame = None if stopped is None else int(stopped)
