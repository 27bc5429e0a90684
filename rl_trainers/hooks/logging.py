"""Logging hooks: frame counts, batch scalars (rewards), timings and the update-to-data ratio.

Logging hooks return a dict of scalars (or None); the Trainer sends them to the logger
every ``log_interval`` frames and, with ``"log_pbar": True``, to the progress bar.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = ["CountFramesLog", "LogReward", "LogScalar", "LogTiming", "UTDRHook"]

_MASK = ("collector", "mask")
_REWARD = ("next", "reward")
_REDUCTIONS = ("mean", "sum", "max", "min")


class CountFramesLog(TrainerHookBase):
    """Count the frames seen in collected batches and log them as ``n_frames``.

    Args:
        frame_skip: frames per environment step.
        log_pbar: also show the count on the progress bar.
    """

    def __init__(self, frame_skip: int = 1, log_pbar: bool = False) -> None:
        self.frame_skip = frame_skip
        self.log_pbar = log_pbar
        self.frame_count = 0

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        if batch.is_empty():  # async_collection: the trainer has no collected batch to show
            return None
        mask = batch.get(_MASK, None)
        n = int(mask.sum()) if mask is not None else batch.numel()
        self.frame_count += n * self.frame_skip
        return {"n_frames": self.frame_count, "log_pbar": self.log_pbar}

    def register(self, trainer: Trainer, name: str = "count_frames_log") -> None:
        """Register at ``"pre_steps_log"`` and checkpoint the count."""
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, int]:
        """The frame count."""
        return {"frame_count": self.frame_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the frame count."""
        self.frame_count = int(state_dict["frame_count"])


def _default_logname(key: NestedKey) -> str:
    """torchrl's name of a ``LogScalar`` without ``logname``: the key itself."""
    if key == _REWARD:
        return "r_training"
    return key if isinstance(key, str) else "_".join(key)


class LogScalar(TrainerHookBase):
    """Log a reduction (and the standard deviation) of one entry of each collected batch.

    Two call forms are accepted. rl_trainers' own,
    ``LogScalar(key, logname, log_pbar, include_std, reduction)``, and torchrl's documented
    ``LogScalar(logname="r_training", log_pbar=False, reward_key=None)``: ``reward_key=`` is
    an alias of ``key``, and a ``bool`` in the second position (never a valid ``logname``)
    selects torchrl's positional order, so ``LogScalar("r_training", True)`` and
    ``LogScalar("r_training", True, ("next", "reward"))`` log the reward as ``r_training``.

    Args:
        key: the entry to read; the reward ``("next", "reward")`` by default or if None.
        logname: the logged name; the std is logged as ``<logname>_std``. None (as in
            torchrl) logs under the key: a str key is its own name (``LogScalar("action")``
            logs ``action``), a nested key is joined with ``"_"``, except the reward, which
            keeps torchrl's ``r_training``.
        log_pbar: also show the value on the progress bar.
        include_std: also log the standard deviation.
        reduction: one of ``"mean"``, ``"sum"``, ``"max"``, ``"min"``.
        reward_key: torchrl's name of ``key`` (give one or the other).

    Entries masked out by ``("collector", "mask")`` are ignored. An empty batch (what
    logging hooks receive with ``async_collection=True``, where the collector writes to its
    buffer in the background) logs nothing.

    Examples:
        >>> LogScalar(logname="r_training", log_pbar=True).key
        ('next', 'reward')
        >>> LogScalar("r_training", True).logname  # torchrl's positional order
        'r_training'
        >>> LogScalar(key="t", logname="tmax", reduction="max").logname
        'tmax'
        >>> LogScalar("action").logname  # torchrl: the key names the value
        'action'
    """

    def __init__(
        self,
        key: NestedKey = ("next", "reward"),
        logname: str | None = None,
        log_pbar: bool = False,
        include_std: bool = True,
        reduction: str = "mean",
        *,
        reward_key: NestedKey | None = None,
    ) -> None:
        if isinstance(logname, bool):
            # torchrl's positional order: LogScalar(logname, log_pbar[, reward_key]).
            torchrl_key = None if isinstance(log_pbar, bool) else log_pbar
            if torchrl_key is not None and reward_key is not None and torchrl_key != reward_key:
                raise TypeError(
                    f"LogScalar got two reward keys: {torchrl_key!r} (third positional "
                    f"argument) and reward_key={reward_key!r}."
                )
            key, logname, log_pbar = (
                reward_key if reward_key is not None else torchrl_key,
                key,
                logname,
            )
        elif reward_key is not None:
            if key != _REWARD and key != reward_key:
                raise TypeError(
                    f"LogScalar got key={key!r} and reward_key={reward_key!r}; reward_key is "
                    "torchrl's name of key, give one of them."
                )
            key = reward_key
        if key is None:
            key = _REWARD
        elif isinstance(key, list):  # a nested key from a config file (["next", "reward"])
            key = tuple(key)
        if logname is None:
            logname = _default_logname(key)
        if not isinstance(logname, str):
            raise TypeError(f"logname must be a str, got {logname!r}.")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}.")
        self.key = key
        self.logname = logname
        self.log_pbar = bool(log_pbar)
        self.include_std = include_std
        self.reduction = reduction

    @property
    def reward_key(self) -> NestedKey:
        """torchrl's name of :attr:`key`."""
        return self.key

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        if batch.is_empty():  # async_collection: the trainer has no collected batch to show
            return None
        value = batch.get(self.key, None)
        if value is None:
            hint = ""
            if isinstance(self.key, str) and ("next", self.key) in batch.keys(True):
                hint = (
                    f" Collected batches hold it under ('next', {self.key!r}): write "
                    f"LogScalar(('next', {self.key!r}))."
                )
            elif isinstance(self.key, str) and self.logname in (self.key, "r_training"):
                hint = (
                    f" LogScalar's first argument is the key to read; for torchrl's form "
                    f"write LogScalar(logname={self.key!r}) (the reward is read by default)."
                )
            raise KeyError(f"LogScalar: the batch has no entry {self.key!r}.{hint}")
        mask = batch.get(_MASK, None)
        if mask is not None:
            value = value[mask]
        value = value.float()
        out: dict[str, Any] = {
            self.logname: getattr(torch.Tensor, self.reduction)(value),
            "log_pbar": self.log_pbar,
        }
        if self.include_std:
            out[f"{self.logname}_std"] = value.std() if value.numel() > 1 else value.new_zeros(())
        return out

    def register(self, trainer: Trainer, name: str | None = None) -> None:
        """Register at ``"pre_steps_log"``."""
        trainer.register_op("pre_steps_log", self)


class LogReward(LogScalar):
    """Reward logger (the older name of :class:`LogScalar`, as used in the DQN tutorial).

    Args:
        logname: the logged name.
        log_pbar: also show the value on the progress bar.
        reward_key: the reward entry (default ``("next", "reward")``).
    """

    def __init__(
        self,
        logname: str = "r_training",
        log_pbar: bool = False,
        reward_key: NestedKey | None = None,
    ) -> None:
        super().__init__(
            key=("next", "reward") if reward_key is None else reward_key,
            logname=logname,
            log_pbar=log_pbar,
        )


class UTDRHook(TrainerHookBase):
    """Log the update-to-data ratio: optimisation steps per collected frame (``utd_ratio``).

    Args:
        trainer: the trainer whose counters are read.
    """

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def __call__(self, batch: Any = None) -> dict[str, Any] | None:
        frames = self.trainer.collected_frames
        if frames <= 0:
            return None
        return {"utd_ratio": self.trainer._optim_count / frames, "log_pbar": False}

    def register(self, trainer: Trainer, name: str = "utdr_hook") -> None:
        """Register at ``"post_steps_log"``."""
        trainer.register_op("post_steps_log", self)


class LogTiming(TrainerHookBase):
    """Log the time spent in the loop's phases and in every hook (torchrl 0.13+).

    Placing the hook on a trainer (:meth:`register`, or ``trainer.register_op``) turns
    timing on for that trainer (:meth:`Trainer.enable_timings`): every registered op is
    timed as ``hook/<name>`` (its class name, ``Class.method`` for a bound method), the
    wait for the collector's next batch as ``collect`` and the optimisation steps of a
    batch as ``optim_steps``. Each call returns these as ``<prefix>/<name>`` entries, which
    the trainer logs every ``log_interval`` frames. ``Trainer(log_timings=True)`` registers
    the equivalent of ``LogTiming()``.

    Args:
        prefix: prepended to each name (``time/hook/UpdateWeights``); "" for none.
        percall: log seconds per call (the mean since the last erase); False logs the total.
        erase: forget the recorded times after each call, so each value covers one batch.

    Examples:
        >>> LogTiming(prefix="time", percall=True).register(trainer)
        >>> trainer.register_op("post_steps_log", LogTiming())  # the same
    """

    def __init__(self, prefix: str = "time", percall: bool = True, erase: bool = False) -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {prefix!r}.")
        self.prefix = prefix
        self.percall = bool(percall)
        self.erase = bool(erase)
        self.trainer: Trainer | None = None

    def _bind(self, trainer: Trainer) -> None:
        self.trainer = trainer
        trainer.enable_timings()

    def __call__(self, batch: Any = None) -> dict[str, Any] | None:
        if self.trainer is None:
            raise RuntimeError(
                "LogTiming reads the timings of the trainer it is placed on: register it with "
                "LogTiming().register(trainer) or trainer.register_op('post_steps_log', hook)."
            )
        timings = self.trainer.timings
        out: dict[str, Any] = timings.todict(percall=self.percall, prefix=self.prefix)
        if self.erase:
            timings.erase()
        return out or None

    def register(self, trainer: Trainer, name: str = "log_timing") -> None:
        """Register at ``"post_steps_log"`` (timing starts now, for every registered op)."""
        trainer.register_op("post_steps_log", self)
