"""The Trainer: a nested collect/optimise loop with named hook points.

The loop and its hook points are documented once, in :class:`HookPoint`.
This module knows no algorithm, config or hook family: it holds the loop, the hook
registry, the counters, the progress bar, the hook base class and the one hook every
trainer needs (:class:`OptimizerHook`, which wraps the ``optimizer`` argument).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import os
import random
import signal
import sys
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn

from rl_trainers.collectors.watchdog import StopGraceExpired as _StopGraceExpired
from rl_trainers.core import checkpoint as _ckpt
from rl_trainers.core.distributed import DataParallel, is_distributed, rank_checkpoint_path
from rl_trainers.core.flat_params import FlatParameters
from rl_trainers.core.optimizer_step import optimizer_step

__all__ = [
    "HOOK_POINTS",
    "HookPoint",
    "HookTimings",
    "NonFiniteLossError",
    "OptimizerHook",
    "StoppedAtOnce",
    "Trainer",
    "TrainerHookBase",
]


class NonFiniteLossError(FloatingPointError):
    """A loss became NaN or infinite; training stopped before the optimizer step.

    Attributes:
        terms: the loss entries that are not finite.
        frame: the trainer's frame count when it happened.
    """

    def __init__(self, terms: list[str], frame: int, checkpoint: str | None = None) -> None:
        self.terms = terms
        self.frame = frame
        where = f"at frame {frame}"
        msg = f"non-finite loss {', '.join(terms) or '(total)'} {where}; training stopped."
        if checkpoint:
            msg += f" The last good checkpoint is {checkpoint}."
        super().__init__(msg)


class StoppedAtOnce(KeyboardInterrupt):
    """A second SIGTERM or SIGINT during :meth:`Trainer.train`: training stops at once,
    the batch in progress dropped and no checkpoint saved.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        name = signal.Signals(signum).name
        super().__init__(f"second signal ({name}): stopping without a checkpoint")


class HookPoint(str, Enum):
    """The points of the training loop where hooks run, in the order they fire: the ten of
    torchrl's ``Trainer`` hook points plus its ``pre_epoch``/``post_epoch`` (``num_epochs``).

    ``Trainer.train()`` runs (``[point]`` marks where the hooks of each point are called)::

        for batch in collector:                      # outer loop: one collected batch
            frames = batch.numel() * frame_skip       # valid frames if ("collector", "mask")
                                                      # (summed over the ranks if data-parallel)
            batch = [batch_process](batch)            # each hook may return a new batch
            collected_frames += frames                # opens the log gate every log_interval
            [pre_steps_log](batch)                    # logging hooks -> dict | None
            if collected_frames > collector.init_random_frames:   # (0 if it has none)
              [pre_optim_steps]()
              for epoch in range(num_epochs):         # passes over the batch (default 1)
                batch = [pre_epoch](batch)            # e.g. advantages (ValueEstimatorHook)
                for j in range(optim_steps_per_batch):     # inner loop: optimisation steps
                  sub_batch = [process_optim_batch](batch) # e.g. replay-buffer sample
                  losses = loss_module(sub_batch)          # TensorDict of loss_* entries
                  [post_loss](sub_batch)                   # e.g. priority update
                  [optimizer](losses)                      # backward, clip, step (OptimizerHook)
                  [post_optim]()                           # e.g. target-network update
                  [post_optim_log](sub_batch)              # logging hooks -> dict | None
                [post_epoch]()
            [post_steps]()                            # e.g. collector weight sync
            [post_steps_log](batch)                   # logging hooks -> dict | None
            save_trainer()                            # every save_trainer_interval frames
            if collected_frames >= total_frames or a stop was requested: break
        collector.shutdown()                          # also on error or Ctrl-C

    Data hooks (``batch_process``, ``pre_epoch``, ``process_optim_batch``) take a TensorDict
    and may return a TensorDict that replaces it; any other return value (``None``, the
    indices returned by ``replay_buffer.extend``...) keeps the input, as in torchrl. A
    ``process_optim_batch`` hook that raises ``StopIteration`` (an exhausted iterator over
    the batch) ends the current epoch early. Logging hooks (``*_log``) return a dict of
    scalars (or ``None``); the optional entry ``"log_pbar": True`` sends the values to the
    progress bar as well; a key is logged once per step. Operation hooks (the others) take
    no argument (``post_loss`` takes the sub-batch, ``optimizer`` the loss TensorDict).
    """

    BATCH_PROCESS = "batch_process"
    PRE_STEPS_LOG = "pre_steps_log"
    PRE_OPTIM_STEPS = "pre_optim_steps"
    PRE_EPOCH = "pre_epoch"
    PROCESS_OPTIM_BATCH = "process_optim_batch"
    POST_LOSS = "post_loss"
    OPTIMIZER = "optimizer"
    POST_OPTIM = "post_optim"
    POST_OPTIM_LOG = "post_optim_log"
    POST_EPOCH = "post_epoch"
    POST_STEPS = "post_steps"
    POST_STEPS_LOG = "post_steps_log"


HOOK_POINTS: tuple[str, ...] = tuple(p.value for p in HookPoint)
_LOG_POINTS = frozenset({"pre_steps_log", "post_optim_log", "post_steps_log"})


class TrainerHookBase:
    """Base class of trainer hooks: a callable that knows where it belongs and its state.

    Subclasses implement :meth:`register` (place the hook at its default point(s) with
    ``trainer.register_op`` and, if it has state, ``trainer.register_module``) and, when they
    hold state, :meth:`state_dict`/:meth:`load_state_dict`. A subclass may define
    ``save_dict()`` instead of ``state_dict()`` (the name used by torchrl's trainer hooks). A
    hook without ``register`` can still be placed with ``trainer.register_op``.
    """

    def _bind(self, trainer: Trainer) -> None:
        """Called by ``trainer.register_op`` when this hook is placed on ``trainer``; hooks
        that read the trainer's state (e.g. ``LogTiming``) remember it here."""

    def register(self, trainer: Trainer, name: str) -> None:
        """Register this hook on ``trainer`` under ``name``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define register(); place it with "
            "trainer.register_op(<hook point>, hook) instead."
        )

    def state_dict(self) -> dict[str, Any]:
        """Return the hook's state: ``save_dict()`` if the subclass defines it, else ``{}``."""
        save_dict = getattr(self, "save_dict", None)
        return save_dict() if callable(save_dict) else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state; the default accepts only an empty state."""
        if state_dict:
            raise ValueError(
                f"{type(self).__name__} defines no load_state_dict but was given state with "
                f"keys {sorted(map(str, state_dict))}."
            )


class OptimizerHook(TrainerHookBase):
    """Backward, gradient clipping and step for one optimizer and some loss components.

    Several OptimizerHooks can be registered, each tied to its own loss components (e.g. an
    actor optimizer on ``loss_actor`` and a critic optimizer on ``loss_qvalue``). Gradients of
    the optimizer's parameters are reset before the backward pass, so gradients leaking
    from another component's backward do not contaminate this step.

    Args:
        optimizer: the optimizer to step.
        loss_components: names of the loss TensorDict entries summed for backward;
            ``None`` sums every entry whose name starts with ``"loss"``.

    Clipping follows the trainer's ``clip_norm``/``clip_grad_norm``, which the trainer passes
    on every call (as torchrl's trainer does, so the hook may also be placed with
    ``trainer.register_op("optimizer", hook)``): no clipping when ``clip_norm`` is None, norm
    clipping when ``clip_grad_norm`` is True (the norm before clipping is written to the
    loss TensorDict as ``grad_norm``, ``grad_norm_<name>`` for a hook registered under
    another name, or ``grad_norm_<index>`` for the index-th op of ``register_op``), value
    clamping to ``[-clip_norm, clip_norm]`` otherwise.
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, loss_components: Sequence[str] | None = None
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer)}.")
        if isinstance(loss_components, str):
            loss_components = [loss_components]
        if loss_components is not None and not list(loss_components):
            raise ValueError(
                "OptimizerHook got an empty loss_components; pass None to optimise every "
                "entry starting with 'loss'."
            )
        self.optimizer = optimizer
        self.loss_components = None if loss_components is None else list(loss_components)
        self.clip_norm: float | None = None
        self.clip_grad_norm = True
        self._grad_norm_key = "grad_norm"
        self._trainer: Trainer | None = None
        self._flat: FlatParameters | None = None  # built by the first loss_and_step
        #: averages the gradients over the ranks before clipping (a data-parallel trainer's)
        self._data_parallel: DataParallel | None = None

    def _bind(self, trainer: Trainer) -> None:
        self._data_parallel = trainer._data_parallel

    def register(self, trainer: Trainer, name: str | None = None) -> None:
        """Register at ``"optimizer"`` and as a module (default name ``optimizer[_i]``)."""
        if name is None:
            name, i = "optimizer", 0
            while name in trainer._modules:
                i += 1
                name = f"optimizer_{i}"
        self.clip_norm = trainer.clip_norm
        self.clip_grad_norm = trainer.clip_grad_norm
        self._trainer = trainer
        self._grad_norm_key = "grad_norm" if name == "optimizer" else f"grad_norm_{name}"
        trainer.register_op("optimizer", self)
        trainer.register_module(name, self)

    def _loss(self, losses: TensorDictBase) -> torch.Tensor:
        terms = self._loss_terms(losses)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total.sum() if total.ndim else total

    def _loss_terms(self, losses: TensorDictBase) -> list[torch.Tensor]:
        """The entries of ``losses`` this hook optimises, in order."""
        if self.loss_components is None:
            terms = [v for k, v in losses.items() if isinstance(k, str) and k.startswith("loss")]
            if not terms:
                raise ValueError(
                    f"The loss TensorDict has no entry starting with 'loss' to optimise "
                    f"(entries: {sorted(map(str, losses.keys()))})."
                )
            return terms
        terms = []
        for key in self.loss_components:
            try:
                value = losses.get(key)
            except KeyError:
                value = None
            if value is None:
                raise KeyError(
                    f"OptimizerHook loss component {key!r} is not in the loss TensorDict "
                    f"(entries: {sorted(map(str, losses.keys()))})."
                )
            terms.append(value)
        return terms

    def __call__(
        self,
        losses: TensorDictBase,
        clip_grad_norm: bool | None = None,
        clip_norm: float | None = None,
        index: int | None = None,
    ) -> TensorDictBase:
        """Sum the loss components, backpropagate, clip and step; returns ``losses``.

        Args:
            losses: the loss TensorDict.
            clip_grad_norm, clip_norm: the clipping settings (the trainer passes its own);
                when both are None, the settings read at :meth:`register` apply.
            index: the hook's position among the trainer's ``"optimizer"`` ops; a hook
                placed with ``register_op`` (not :meth:`register`) at a position > 0 writes
                its norm as ``grad_norm_<index>``, so several hooks keep their own.

        Raises:
            NonFiniteLossError: if the summed loss is NaN or infinite (checked before the
                backward pass, so the parameters stay finite); names the non-finite terms.
        """
        loss = self._checked_loss(losses)
        params = self._params()
        # ``optimizer.zero_grad(set_to_none=True)`` without its profiling and dynamo wrappers
        # (~40 us, 4 % of a PPO update)
        for p in params:
            p.grad = None
        loss.backward()
        self._clip_and_step(losses, params, None, clip_grad_norm, clip_norm, index)
        return losses

    def loss_and_step(
        self,
        loss_module: nn.Module,
        batch: TensorDictBase,
        clip_grad_norm: bool | None = None,
        clip_norm: float | None = None,
        index: int | None = None,
        record_grad_norm: bool = True,
    ) -> TensorDictBase | None:
        """``loss_module(batch)`` and this hook's step in one, with the gradients written by
        ``loss_module.loss_and_grads`` (no autograd graph, see
        :meth:`~rl_trainers.objectives.common.LossModule.loss_and_grads`) into one flat
        buffer (:class:`~rl_trainers.core.flat_params.FlatParameters`), so clipping and a
        fused Adam step each run once over it. Returns the losses, or None, without a step,
        when the loss module cannot compute its gradients itself (then call the module and
        this hook). The Trainer uses it when this hook is its only optimizer op and no
        ``post_loss`` op is registered, with ``record_grad_norm`` False on the steps whose
        losses it does not log (the norm is then not written to the losses; writing a
        TensorDict entry costs ~10 us of a ~700 us PPO step).
        """
        loss_and_grads = getattr(loss_module, "loss_and_grads", None)
        if loss_and_grads is None:
            return None
        params = self._params()
        flat = self._flat
        if flat is not None and flat.matches(params):
            flat.attach_grads()
        else:
            flat = None
        losses = loss_and_grads(batch, self.loss_components)
        if losses is None:
            return None
        self._checked_loss(losses)
        if flat is None and FlatParameters.supports(params):
            flat = self._flat = FlatParameters(params)  # keeps the gradients just written
        self._clip_and_step(
            losses, params, flat, clip_grad_norm, clip_norm, index, record_grad_norm
        )
        return losses

    def _params(self) -> list[torch.Tensor]:
        # read every step: param groups may be added during training
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def _checked_loss(self, losses: TensorDictBase) -> torch.Tensor:
        """The summed loss; raises :class:`NonFiniteLossError` if it is NaN or infinite."""
        loss = self._loss(losses)
        if not math.isfinite(loss.item()):  # one scalar read per step (a sync on GPU)
            raise self._non_finite(losses)
        return loss

    def _clip_and_step(
        self,
        losses: TensorDictBase,
        params: list[torch.Tensor],
        flat: FlatParameters | None,
        clip_grad_norm: bool | None,
        clip_norm: float | None,
        index: int | None,
        record_grad_norm: bool = True,
    ) -> None:
        if self._data_parallel is not None:  # the mean gradient of all ranks, then clip it
            self._data_parallel.average_gradients(params, flat)
        if clip_grad_norm is None and clip_norm is None:
            clip_grad_norm, clip_norm = self.clip_grad_norm, self.clip_norm
        if clip_norm is not None:
            if clip_grad_norm:
                if flat is not None:
                    norm = flat.clip_grad_norm_(clip_norm)
                else:
                    norm = clip_grad_norm_(params, clip_norm)
                if record_grad_norm and not losses.is_locked:
                    key = self._grad_norm_key
                    if self._trainer is None and index:  # placed with register_op
                        key = f"grad_norm_{index}"
                    losses.set(key, norm.detach())
            else:
                nn.utils.clip_grad_value_(params, clip_norm)
        optimizer_step(self.optimizer, flat)

    def _non_finite(self, losses: TensorDictBase) -> NonFiniteLossError:
        keys = self.loss_components or [
            k for k in losses.keys() if isinstance(k, str) and k.startswith("loss")
        ]
        bad = [k for k in keys if not bool(torch.isfinite(losses.get(k)).all())]
        trainer = self._trainer
        frame = trainer.collected_frames if trainer is not None else -1
        ckpt = trainer.last_checkpoint if trainer is not None else None
        return NonFiniteLossError(bad, frame, None if ckpt is None else str(ckpt))

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state dict."""
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the optimizer's state dict."""
        load_optimizer_state(self.optimizer, state_dict["optimizer"])


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """``optimizer.load_state_dict(state)``, refused (the optimizer left as it was) when
    ``state`` is another optimizer class's: torch takes its param groups as they are, and
    the first step then fails on a setting they lack (``KeyError: 'momentum'``). A
    setting added by a later torch version is filled in by the optimizer, not refused."""
    import copy

    before = copy.deepcopy(optimizer.state_dict())
    optimizer.load_state_dict(state)
    lacking = [k for k in optimizer.defaults if any(k not in g for g in optimizer.param_groups)]
    if lacking:
        saved = sorted({k for g in state.get("param_groups", ()) for k in g} - {"params"})
        optimizer.load_state_dict(before)
        raise ValueError(
            f"the saved optimizer state is another optimizer's: it lacks "
            f"{type(optimizer).__name__}'s settings {lacking} (it has {saved}); build the "
            "trainer with the optimizer class the checkpoint was trained with"
        )


@torch.no_grad()
def clip_grad_norm_(parameters: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` (2-norm), with less overhead when all gradients
    share one device and dtype; returns the total norm before clipping.

    The arithmetic is torch's (per-tensor norms, the norm of their stack, a clamped
    ``max_norm / (total + 1e-6)`` factor), so results are bitwise equal; torch's version
    regroups the gradients by device and dtype and copies every norm on each call, which
    cost as much as the clipping itself for PPO's twelve small tensors.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    first = grads[0]
    if any(g.device != first.device or g.dtype != first.dtype or g.is_sparse for g in grads):
        return nn.utils.clip_grad_norm_(parameters, max_norm)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))
    return total


class _Every:
    """Run ``op`` on every ``every``-th call only (a registration filter)."""

    __slots__ = ("op", "every", "count")

    def __init__(self, op: Callable, every: int) -> None:
        self.op, self.every, self.count = op, every, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        if self.count % self.every == 0:
            return self.op(*args, **kwargs)
        return None


@dataclass
class _Unclaimed:
    """A loaded checkpoint's states of modules and ``every=N`` registrations that the
    trainer did not have when it was loaded."""

    source: str
    modules: dict[str, Any]
    every: dict[str, list[int]]

    def every_count(self, dest: str, index: int) -> int:
        """The saved pass count of the ``index``-th ``every=N`` registration at ``dest``."""
        counts = self.every.get(dest, ())
        return int(counts[index]) if index < len(counts) else 0


class HookTimings:
    """Wall-clock time spent in the loop's phases and hooks, by name (``trainer.timings``).

    Filled only while timing is on (``Trainer(log_timings=True)``, or a registered
    ``LogTiming`` hook): ``collect`` (waiting for the collector's next batch),
    ``optim_steps`` (all optimisation steps of a batch) and ``hook/<name>`` for every
    registered op (the hook's class name, ``Class.method`` for a bound method).
    """

    def __init__(self) -> None:
        self._total: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def add(self, name: str, seconds: float) -> None:
        """Record one call of ``name`` that took ``seconds``."""
        self._total[name] = self._total.get(name, 0.0) + seconds
        self._count[name] = self._count.get(name, 0) + 1

    def todict(self, percall: bool = True, prefix: str | None = None) -> dict[str, float]:
        """Seconds per call (``percall``) or in total, keyed ``<prefix>/<name>``."""
        out = {}
        for name, total in self._total.items():
            key = f"{prefix}/{name}" if prefix else name
            out[key] = total / self._count[name] if percall else total
        return out

    def erase(self) -> None:
        """Forget every recorded time."""
        self._total.clear()
        self._count.clear()


def _op_name(op: Callable) -> str:
    """The name a hook's time is recorded under: class name, ``Class.method`` or function."""
    while isinstance(op, (partial, _Every, _WithClipArgs, _Timed)):
        op = op.func if isinstance(op, partial) else op.op
    label = getattr(op, "timing_name", None)
    if isinstance(label, str):
        return label
    owner = getattr(op, "__self__", None)
    name = getattr(op, "__name__", None)
    if owner is not None and name is not None and not isinstance(owner, type(sys)):
        return f"{type(owner).__name__}.{name}"
    if name is not None and (inspect.isfunction(op) or inspect.isbuiltin(op)):
        return name
    return type(op).__name__


def _data_hook_result(out: Any, batch: TensorDictBase, point: str, op: Callable) -> TensorDictBase:
    """The batch after the data hook ``op`` at ``point`` returned ``out``: a TensorDict
    replaces it; anything else (None, a buffer's indices) keeps it, except a dict, which
    was meant to replace it and would be dropped without a word."""
    if isinstance(out, TensorDictBase):
        return out
    if isinstance(out, dict):
        raise TypeError(
            f"the hook {_op_name(op)} at {point!r} returned a dict; to replace the batch "
            "return a TensorDict (TensorDict(entries, batch_size=batch.batch_size)), or None "
            "to keep it"
        )
    return batch


def _logged_values(out: Any, point: str, op: Callable) -> dict[str, Any] | None:
    """What the logging hook ``op`` returned at ``point``, checked when it returns it: a
    dict of scalars or None (a vector or a string would otherwise fail at the first logged
    step, up to ``log_interval`` frames later, naming neither the hook nor the key)."""
    if out is None:
        return None
    if not isinstance(out, dict):
        raise TypeError(
            f"the logging hook {_op_name(op)} at {point!r} returned a {type(out).__name__}; "
            "a logging hook returns a dict of scalars ({name: value}) or None"
        )
    for key, value in out.items():
        if isinstance(value, (torch.Tensor, np.ndarray)) and math.prod(value.shape) == 1:
            continue
        if isinstance(value, (int, float, np.number)) or key == "log_pbar":
            continue
        what = (
            f"a {type(value).__name__} of shape {tuple(value.shape)}"
            if isinstance(value, (torch.Tensor, np.ndarray))
            else f"{type(value).__name__} {value!r}"[:80]
        )
        raise TypeError(
            f"the logging hook {_op_name(op)} at {point!r} returned {what} for {key!r}; "
            "a logged value is a Python number or a one-element tensor"
        )
    return out


class _Timed:
    """Record the time of each call of ``op`` in ``timings`` under ``hook/<name>``."""

    __slots__ = ("op", "timings", "key")

    def __init__(self, op: Callable, timings: HookTimings) -> None:
        self.op, self.timings, self.key = op, timings, f"hook/{_op_name(op)}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.op(*args, **kwargs)
        finally:
            self.timings.add(self.key, time.perf_counter() - start)


class _WithClipArgs:
    """An ``"optimizer"`` op written for torchrl's call, ``op(losses, clip_grad_norm,
    clip_norm, index)``: the trainer's clipping settings are passed on every call."""

    __slots__ = ("op", "trainer", "index")

    def __init__(self, op: Callable, trainer: Trainer, index: int) -> None:
        self.op, self.trainer, self.index = op, trainer, index

    def __call__(self, losses: TensorDictBase) -> Any:
        trainer = self.trainer
        return self.op(losses, trainer.clip_grad_norm, trainer.clip_norm, self.index)


def _takes_clip_args(op: Callable) -> bool:
    """Whether ``op`` accepts torchrl's four positional optimizer-op arguments."""
    try:
        inspect.signature(op).bind(None, None, None, None)
    except (TypeError, ValueError):  # fewer parameters, or no signature (builtins)
        return False
    return True


def _module_mismatches(name: str, module: nn.Module, saved: Any) -> list[str]:
    """Entries of a saved ``nn.Module`` state that are missing, unexpected or reshaped."""
    if not isinstance(saved, dict):
        return [f"{name!r}: the checkpoint holds a {type(saved).__name__}, not a state dict"]
    current = module.state_dict()
    out = [f"{name!r}.{k}: missing from the checkpoint" for k in current if k not in saved]
    out += [
        f"{name!r}.{k}: in the checkpoint, not in this network" for k in saved if k not in current
    ]
    for key, value in current.items():
        old = saved.get(key)
        if isinstance(value, nn.parameter.UninitializedTensorMixin):
            continue  # a lazy layer takes its shape from the checkpoint
        if isinstance(old, torch.Tensor) and isinstance(value, torch.Tensor):
            if old.shape != value.shape:
                out.append(
                    f"{name!r}.{key}: size mismatch, {tuple(old.shape)} in the checkpoint, "
                    f"{tuple(value.shape)} here"
                )
    return out


def _check_collector(collector: Any, async_collection: bool) -> None:
    """Refuse, when the trainer is built, a collector that cannot yield batches: an env
    given in its place (``train()`` then failed on "not iterable"). A background collector
    (``async_collection``) is polled, not iterated."""
    import gymnasium

    from rl_trainers.envs.common import EnvBase

    if isinstance(collector, (EnvBase, gymnasium.Env, gymnasium.vector.VectorEnv)):
        raise TypeError(
            f"collector is an environment ({type(collector).__name__}); the Trainer takes a "
            "collector that steps it with a policy: SyncDataCollector(env, policy, "
            "frames_per_batch=..., total_frames=...) (rl_trainers.collectors)"
        )
    if not async_collection and not hasattr(collector, "__iter__"):
        raise TypeError(
            f"collector must be an iterable of TensorDict batches (a SyncDataCollector), got "
            f"{collector!r}"[:300]
        )


def _count_arg(name: str, value: Any, low: int) -> int:
    """A count argument as an int; whole floats (``total_frames=1e6``) are accepted."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return value


def _as_float(value: Any) -> float:
    if isinstance(value, torch.Tensor):
        return value.item()
    return float(value)


class Trainer:
    """A generic trainer: collect a batch, run hooks, optimise, repeat (see :class:`HookPoint`).

    The Trainer builds nothing itself: replay buffers, target updates, evaluation, logging
    of rewards and so on are hooks registered with :meth:`register_op` or a hook's
    ``register(trainer)``.

    Args:
        collector: an iterable of TensorDict batches shaped ``[num_envs, T]``; its
            ``shutdown()`` (if any) is called when training ends.
        total_frames: stop once this many frames (``numel * frame_skip``) were collected.
        frame_skip: frames per environment step, used to count frames.
        optim_steps_per_batch: optimisation steps per collected batch (0 disables them); None
            takes the collector's number of workers (``collector.num_workers``, else 1).
            No step is taken while ``collected_frames`` is at most the collector's
            ``init_random_frames`` (its random warm-up), as in torchrl.
        loss_module: a module mapping a TensorDict to a TensorDict of ``loss_*`` entries.
        optimizer: if given, wrapped in an :class:`OptimizerHook` registered at ``"optimizer"``.
        logger: an object with ``log_scalar(name, value, step=None)``; None disables logging.
        clip_grad_norm: True clips the total gradient norm, False clamps each gradient value.
        clip_norm: the clipping threshold; None disables clipping.
        progress_bar: show a tqdm bar with frames/s and the ``log_pbar`` values.
        seed: seeds torch, numpy, random and the collector (``collector.set_seed``) here, in
            the constructor. For full determinism seed *before* building networks too (the
            Hydra entry points do), since weights are initialised before the Trainer exists.
        save_trainer_interval: save a checkpoint every this many frames.
        log_interval: log scalars whenever the frame count crosses a multiple of this.
        save_trainer_file: checkpoint path (file for ``CKPT_BACKEND=torch``, directory for
            ``torchsnapshot``); None disables saving.
        async_collection: the collector runs in the background (``collector.start()``) and
            writes into a replay buffer it owns; the trainer polls its frame count and logs
            the update-to-data ratio (optimisation steps per frame) as ``utd_ratio``. A
            collector with ``is_running`` (:class:`SyncDataCollector`) that stops ends the
            run: with its error if it died of one, as finished if it reached its own
            ``total_frames``.
        keep_checkpoints: None writes every checkpoint to ``save_trainer_file``; an int K
            writes ``<stem>_<frames><suffix>`` next to it instead, keeps the last K, and
            makes ``save_trainer_file`` a link to the latest (see ``checkpoint.save_rotating``).
        handle_signals: during :meth:`train`, SIGTERM and SIGINT finish the current batch,
            save a checkpoint (if ``save_trainer_file`` is set) and return with
            :attr:`interrupted` set to the signal's name; a second signal raises
            ``KeyboardInterrupt`` at once. A batch that does not end within
            :attr:`stop_grace_s` seconds of the signal (an env step blocked for ever) is
            dropped: :meth:`train` returns without saving it, with :attr:`stop_timed_out`
            set. Only active in the main thread.
        num_epochs: passes over each collected batch, each of ``optim_steps_per_batch``
            optimisation steps, with ``pre_epoch``/``post_epoch`` hooks around each pass
            (torchrl 0.13+). The loss entries logged are averaged over all the steps.
        log_timings: time the loop's phases and every hook (:attr:`timings`) and register
            a ``LogTiming`` hook that logs them as ``time/<name>`` (seconds per call, e.g.
            ``time/hook/UpdateWeights``, ``time/collect``, ``time/optim_steps``).
        distributed: data-parallel training across the processes of ``torch.distributed``
            (see :mod:`rl_trainers.core.distributed` and docs/distributed.md): the loss
            module's state is broadcast from rank 0 when :meth:`train` starts, the
            gradients of every :class:`OptimizerHook` are averaged over the ranks before
            clipping and stepping, ``total_frames`` counts the frames of all ranks, every
            rank stops after the same batch (a stop or :meth:`finish` on any rank stops
            all), only rank 0 shows the progress bar, and checkpoints record the world
            size; rank ``r > 0`` saves to ``<dir>/rank<r>/<name>`` of ``save_trainer_file``.
            None (default): on when ``torch.distributed`` is initialised with more than one
            process.
        auto_log_optim_steps: log the count of optimisation steps so far (``optim_steps``)
            with the loss entries, on the batches whose losses are logged (torchrl 0.13+).

    Resume: :meth:`load_from_file` restores counters, registered modules (loss, optimizers,
    schedulers, buffers, logger...), the collector (env state, current observation) and the
    RNGs; :attr:`checkpoint_metadata` (e.g. algorithm and env id) is stored in every
    checkpoint and must match when loading.

    Example:
        >>> trainer = Trainer(collector=collector, total_frames=10_000, frame_skip=1,
        ...                   optim_steps_per_batch=4, loss_module=loss, optimizer=optim)
        >>> trainer.register_op("post_optim", target_updater.step)
        >>> trainer.train()
    """

    def __init__(
        self,
        *,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        frame_skip: int = 1,
        optim_steps_per_batch: int | None = 1,
        loss_module: Callable[[TensorDictBase], TensorDictBase],
        optimizer: torch.optim.Optimizer | None = None,
        logger: Any | None = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | Path | None = None,
        async_collection: bool = False,
        keep_checkpoints: int | None = None,
        handle_signals: bool = True,
        num_epochs: int = 1,
        log_timings: bool = False,
        distributed: bool | None = None,
        auto_log_optim_steps: bool = True,
    ) -> None:
        _check_collector(collector, async_collection)
        if optim_steps_per_batch is None:
            optim_steps_per_batch = getattr(collector, "num_workers", None) or 1
        (
            total_frames,
            frame_skip,
            optim_steps_per_batch,
            save_trainer_interval,
            log_interval,
            num_epochs,
        ) = (
            _count_arg(name, value, low)
            for name, value, low in (
                ("total_frames", total_frames, 1),
                ("frame_skip", frame_skip, 1),
                ("optim_steps_per_batch", optim_steps_per_batch, 0),
                ("save_trainer_interval", save_trainer_interval, 1),
                ("log_interval", log_interval, 1),
                ("num_epochs", num_epochs, 1),
            )
        )
        if keep_checkpoints is not None and (
            isinstance(keep_checkpoints, bool)
            or not isinstance(keep_checkpoints, int)
            or keep_checkpoints < 1
        ):
            raise ValueError(
                f"keep_checkpoints must be None or an integer >= 1, got {keep_checkpoints!r}."
            )
        if clip_norm is not None and (
            isinstance(clip_norm, bool) or not isinstance(clip_norm, numbers.Real) or clip_norm <= 0
        ):
            raise ValueError(f"clip_norm must be None or a positive number, got {clip_norm!r}.")
        if logger is not None and not callable(getattr(logger, "log_scalar", None)):
            raise TypeError(
                f"logger must be a Logger (an object with log_scalar), got {logger!r}; build "
                "one with rl_trainers.record.loggers.get_logger(logger_type, logger_name, "
                "experiment_name), e.g. get_logger('csv', 'logs', 'exp')."
            )
        if distributed is None:
            distributed = is_distributed()
        elif distributed and not is_distributed():
            raise ValueError(
                "distributed=True needs torch.distributed initialised with more than one "
                "process (launch with torchrun and call "
                "rl_trainers.core.distributed.init_distributed())."
            )
        if distributed and async_collection:
            raise ValueError("async_collection=True does not support data-parallel training.")
        #: the collectives of data-parallel training (None in a single process)
        self._data_parallel = DataParallel() if distributed else None
        #: this process's rank and the number of processes (0 and 1 in a single process)
        self.rank = self._data_parallel.rank if distributed else 0
        self.world_size = self._data_parallel.world_size if distributed else 1
        if save_trainer_file is not None and self.rank > 0:  # <dir>/rank<r>/<name>
            save_trainer_file = rank_checkpoint_path(save_trainer_file, self.rank)
        if async_collection and not callable(getattr(collector, "start", None)):
            raise ValueError(
                "async_collection=True needs a collector with a start() method that collects "
                f"in the background; {type(collector).__name__} has none."
            )
        self.collector = collector
        self.total_frames = total_frames
        self.frame_skip = frame_skip
        self.optim_steps_per_batch = optim_steps_per_batch
        self.loss_module = loss_module
        self.optimizer = optimizer
        self.logger = logger
        self.clip_grad_norm = clip_grad_norm
        self.clip_norm = clip_norm
        self.progress_bar = progress_bar
        self.seed = seed
        self.save_trainer_interval = save_trainer_interval
        self.log_interval = log_interval
        self.save_trainer_file = save_trainer_file
        self.async_collection = async_collection
        self.keep_checkpoints = keep_checkpoints
        self.handle_signals = handle_signals
        self.num_epochs = num_epochs
        self.log_timings = bool(log_timings)
        self.auto_log_optim_steps = bool(auto_log_optim_steps)
        #: Time spent in the loop's phases and hooks, filled while timing is on.
        self.timings = HookTimings()
        #: The latest value of every name a logging hook returned or the trainer logged,
        #: as ``(sequence number, frame, value)``, whether or not a logger is set (read by
        #: ``EarlyStopping``).
        self.logged_values: dict[str, tuple[int, int, Any]] = {}
        self._log_seq = 0
        self._timing = False
        #: Stored in every checkpoint and compared on load (e.g. algorithm, env id, shapes).
        self.checkpoint_metadata: dict[str, Any] = {}
        #: The name of the signal (or reason) that stopped the last :meth:`train`, else None.
        self.interrupted: str | None = None
        #: The last checkpoint written or loaded.
        self.last_checkpoint: Path | None = None
        # a stop asked for (signal, request_stop) at any moment, and the stop this loop
        # acts on: the request as read once per batch (data-parallel: agreed by the ranks)
        self._stop_request: str | None = None
        self._stop_reason: str | None = None
        #: Why the last :meth:`train` finished before ``total_frames`` (see :meth:`finish`).
        self.finished_early: str | None = None
        #: Seconds the batch in progress may take to end after a stop signal; past that it
        #: is dropped (no checkpoint of it) and :meth:`train` returns with
        #: :attr:`stop_timed_out` set. None or 0: wait for it however long it takes.
        self.stop_grace_s: float | None = 60.0
        #: Whether the last :meth:`train` was stopped by ``stop_grace_s`` running out.
        self.stop_timed_out = False
        self._grace: Any = None

        self.collected_frames = 0
        self._optim_count = 0
        self.iteration = 0
        self._last_save_frames = 0
        self._train_time_before = 0.0  # seconds in train() of the sessions before this one
        self._train_started: float | None = None
        self._log_now = False
        #: Keys logged each time a logging hook returns them, whatever ``log_interval`` says
        #: (the periodic evaluations' results: every evaluation is a point of the curve).
        self.log_always: set[str] = set()
        self._log_windows: dict[str, int] = {}  # key -> log_interval window it was last logged in
        self._logged_steps: dict[str, int] = {}  # key -> step it was last logged at
        self._pbar = None
        self._pbar_values: dict[str, Any] = {}
        self._ops: defaultdict[str, list[Callable]] = defaultdict(list)
        self._modules: dict[str, Any] = {}
        # What the last loaded checkpoint holds for hooks not registered yet: restored when
        # they are (a hook registered after a resume, as ``instantiate(cfg.trainer)`` loads
        # the checkpoint before its caller can register anything), named in a warning when
        # training starts without them.
        self._unclaimed: _Unclaimed | None = None

        if seed is not None:
            self.set_seed(seed)
        if isinstance(loss_module, nn.Module):
            self.register_module("loss_module", loss_module)
        if optimizer is not None:
            OptimizerHook(optimizer).register(self, "optimizer")
        if self.log_timings:  # what LogTiming().register(self) does, without importing it
            self.enable_timings()
            self.register_op("post_steps_log", self._timings_log)

    # ------------------------------------------------------------------ registry
    def set_seed(self, seed: int) -> None:
        """Seed torch, numpy, random and the collector (if it has ``set_seed``)."""
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        set_seed = getattr(self.collector, "set_seed", None)
        if callable(set_seed):
            set_seed(seed)

    def register_op(self, dest: str, op: Callable, *, every: int = 1, **kwargs: Any) -> None:
        """Call ``op`` at hook point ``dest`` (see :class:`HookPoint` for the points).

        Args:
            dest: the hook point name (or a :class:`HookPoint`).
            op: the callable; extra ``kwargs`` are passed to it on each call. An
                ``"optimizer"`` op is called with the loss TensorDict, or, if it takes them,
                with torchrl's ``(losses, clip_grad_norm, clip_norm, index)``; a TensorDict
                it returns replaces the losses for the ops after it and for logging.
            every: call ``op`` only on every ``every``-th pass through ``dest``.
        """
        dest = dest.value if isinstance(dest, HookPoint) else dest
        if dest not in HOOK_POINTS:
            raise ValueError(f"Unknown hook point {dest!r}; valid points are {list(HOOK_POINTS)}.")
        if not callable(op):
            raise TypeError(f"op registered at {dest!r} must be callable, got {op!r}.")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}.")
        if isinstance(op, TrainerHookBase):
            op._bind(self)
        if kwargs:
            op = partial(op, **kwargs)
        if dest == "optimizer" and _takes_clip_args(op):
            op = _WithClipArgs(op, self, len(self._ops[dest]))
        if self._timing:
            op = _Timed(op, self.timings)
        if every > 1:
            op = _Every(op, every)
            if self._unclaimed is not None:  # its pass count, kept in the checkpoint
                op.count = self._unclaimed.every_count(dest, len(self._every_ops().get(dest, ())))
        self._ops[dest].append(op)

    def enable_timings(self) -> None:
        """Time the loop's phases and every registered op (also those registered later) in
        :attr:`timings`; ``log_timings=True`` and ``LogTiming.register`` call this."""
        if self._timing:
            return
        self._timing = True
        for ops in self._ops.values():
            for i, op in enumerate(ops):
                if isinstance(op, _Every):
                    op.op = _Timed(op.op, self.timings)
                else:
                    ops[i] = _Timed(op, self.timings)

    def _timings_log(self, batch: Any = None) -> dict[str, float]:
        """The ``log_timings=True`` logging op: seconds per call, named ``time/<name>``."""
        return self.timings.todict(percall=True, prefix="time")

    _timings_log.timing_name = "LogTiming"  # its name in the timings, as the hook's

    def register_module(self, module_name: str, module: Any) -> None:
        """Checkpoint ``module`` (anything with ``state_dict``/``load_state_dict``) under
        ``module_name`` (torchrl's parameter names).

        The arguments are also accepted in the reverse order (``module, name``), as in
        torchrl's example hooks.
        """
        name = module_name
        if not isinstance(name, str) and isinstance(module, str):
            name, module = module, name
        if not isinstance(name, str):
            raise TypeError(f"register_module needs a str name, got {name!r} and {module!r}.")
        if not (hasattr(module, "state_dict") and hasattr(module, "load_state_dict")):
            raise TypeError(
                f"Module {name!r} ({type(module).__name__}) needs state_dict() and "
                "load_state_dict() to be checkpointed."
            )
        if name in self._modules and self._modules[name] is not module:
            raise ValueError(
                f"A module named {name!r} is already registered; registered names: "
                f"{sorted(self._modules)}."
            )
        state = self._unclaimed.modules.pop(name, None) if self._unclaimed is not None else None
        if state is not None:
            self._load_module(name, module, state, self._unclaimed.source)
        self._modules[name] = module

    # ------------------------------------------------------------------ logging
    def _log(self, out: dict[str, Any] | None) -> None:
        if not out:
            return
        self._log_seq = seq = self._log_seq + 1
        frame = self.collected_frames
        values = self.logged_values
        for key, value in out.items():
            values[key] = (seq, frame, value)
        pbar = out.get("log_pbar", False) and self._pbar is not None
        logger = self.logger
        if not (pbar or logger is not None):
            return
        # Every key is logged on batches that cross a multiple of log_interval; a key that
        # only appears now and then is also logged at its first appearance in a log_interval
        # window that has not logged it yet, so it is not lost; a key of log_always is logged
        # whenever it appears. A key is logged once per step: the first value (as torchrl's
        # gate keeps the first), so a post_optim_log hook gives one point per logged batch,
        # not one per optim step.
        step = self.collected_frames
        window = step // self.log_interval
        windows = self._log_windows
        steps = self._logged_steps
        for key, value in out.items():
            if key == "log_pbar":
                continue
            if pbar:
                self._pbar_values[key] = value
            if (
                logger is not None
                and (self._log_now or key in self.log_always or windows.get(key, 0) < window)
                and steps.get(key) != step
            ):
                windows[key] = window
                steps[key] = step
                logger.log_scalar(key, _as_float(value), step=step)

    def _run_log_ops(self, point: str, batch: TensorDictBase) -> None:
        for op in self._ops[point]:
            self._log(_logged_values(op(batch), point, op))

    # ------------------------------------------------------------------ loop
    def train(self) -> None:
        """Run the loop of :class:`HookPoint` until ``total_frames`` frames were collected.

        Returns early, after saving a checkpoint, when :meth:`request_stop` was called or a
        SIGTERM/SIGINT arrived (see ``handle_signals``); :attr:`interrupted` then names why.
        Training that :meth:`finish` ended early is complete, not interrupted:
        :attr:`finished_early` names why.
        """
        self.interrupted = None
        self.finished_early = None
        self.stop_timed_out = False
        self._stop_request = self._stop_reason = None
        self._logger_failure = None
        self._train_started = time.perf_counter()
        self._warn_unclaimed()
        with self._signal_handlers():
            try:
                self._train()
            except _StopGraceExpired:
                # the batch in progress (an env step that never returns...) was dropped
                self.stop_timed_out = True
                self._stop_reason = self._stop_request
            finally:
                if self._grace is not None:
                    self._grace.close()
                    self._grace = None
                self._train_time_before = self.train_time_s
                self._train_started = None
            # set before the handlers are restored: a handler installed around train()
            # (the app's, data-parallel) sees the stop from the first moment it is back
            self.interrupted = self._stop_reason
            failure = self._logger_failure or self._take_logger_failure()
            if failure is not None:  # after the batch's checkpoint (or the final one)
                self._logger_failure = None
                if self.last_checkpoint is not None:
                    failure.args = (f"{failure}; checkpoint: {self.last_checkpoint}",)
                raise failure

    @contextlib.contextmanager
    def stop_on_signal(self) -> Iterator[Trainer]:
        """torchrl's ``with trainer.stop_on_signal(): trainer.train()``: within the block,
        SIGINT and SIGTERM end :meth:`train` after the current batch (with a checkpoint),
        as ``handle_signals=True`` does; a second signal stops at once."""
        handle_signals, self.handle_signals = self.handle_signals, True
        try:
            yield self
        finally:
            self.handle_signals = handle_signals

    def request_stop(self, reason: str = "stop requested") -> None:
        """Stop :meth:`train` after the current batch, saving a checkpoint (as SIGTERM does)."""
        self._stop_request = reason

    def finish(self, reason: str) -> None:
        """End :meth:`train` after the current batch as if ``total_frames`` were reached
        (e.g. a target return was reached): a checkpoint is saved and
        :attr:`finished_early` is ``reason``. Unlike :meth:`request_stop`, the run counts as
        complete."""
        self.finished_early = reason

    @contextlib.contextmanager
    def _signal_handlers(self) -> Iterable[None]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(signum: int, frame: Any) -> None:
            name = signal.Signals(signum).name
            if self._stop_request is not None:
                raise StoppedAtOnce(signum)
            self._stop_request = name
            saving = ", saving a checkpoint" if self.save_trainer_file is not None else ""
            msg = (
                f"\n{name} received: finishing the current batch{saving} and stopping "
                "(send it again to stop at once).\n"
            )
            with contextlib.suppress(OSError):
                sys.stderr.flush()
                os.write(2, msg.encode())
            self._start_grace(name, signum)

        previous: dict[int, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[sig] = signal.signal(sig, on_signal)
            except (ValueError, OSError):  # pragma: no cover - not the main interpreter
                pass
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _start_grace(self, name: str, signum: int) -> None:
        """After a stop signal, give the batch in progress ``stop_grace_s`` seconds to end."""
        grace = self.stop_grace_s
        if not grace or grace <= 0 or self._grace is not None:
            return
        from rl_trainers.collectors.watchdog import Watchdog

        def expired(elapsed: float) -> BaseException:
            return _StopGraceExpired(
                f"{name}: the batch in progress did not end within stop_grace_s={grace:g} s"
            )

        self._grace = Watchdog(grace, expired, exit_code=128 + signum)
        self._grace.arm()

    def _train(self) -> None:
        if self._data_parallel is not None:
            self._start_data_parallel()
        if self.progress_bar and self.rank == 0:
            try:
                from tqdm.auto import tqdm

                self._pbar = tqdm(
                    total=self.total_frames,
                    initial=min(self.collected_frames, self.total_frames),
                    unit="frames",
                    unit_scale=True,
                )
            except ImportError:  # pragma: no cover
                self._pbar = None
        shut = False
        try:
            if self.collected_frames < self.total_frames:
                if self.async_collection:
                    self._train_async()
                else:
                    self._train_sync()
            if (
                self.save_trainer_file is not None
                and self._last_save_frames != self.collected_frames
            ):
                self.save_trainer(force=True)
            if self.async_collection:
                # the background collector counts a batch's frames before it has written
                # it: a failure of that last write, after the loop ended, must not be lost
                shut = True
                self.shutdown()
                self._collector_running()
        finally:
            if not shut:
                self.shutdown()
            flush = getattr(self.logger, "flush", None)
            if callable(flush):  # the logs are complete on disk once train() returns
                flush()
            if self._pbar is not None:
                self._pbar.close()
                self._pbar = None

    def _start_data_parallel(self) -> None:
        """Check that every rank starts from the same frame count, and give every rank rank
        0's loss-module state (the initial parameters; after a resume they are equal)."""
        dp = self._data_parallel
        low, high = dp.min_max(self.collected_frames)
        if low != high:
            raise _ckpt.CheckpointError(
                f"the ranks start from different frame counts ({low} to {high}): resume every "
                "rank from checkpoints of the same save."
            )
        if isinstance(self.loss_module, nn.Module):
            dp.broadcast_module_(self.loss_module)
        update_weights = getattr(self.collector, "update_policy_weights_", None)
        if callable(update_weights):
            update_weights()  # collector workers act with the broadcast weights

    @property
    def data_parallel(self) -> DataParallel | None:
        """The collectives of data-parallel training (``average_gradients``, ``average_``,
        ``mean``...), or None in a single process."""
        return self._data_parallel

    def mean_over_ranks(self, value: torch.Tensor) -> torch.Tensor:
        """``value`` averaged over the ranks of data-parallel training (``value`` itself in a
        single process); for statistics every rank must agree on, e.g. a measured KL."""
        if self._data_parallel is None:
            return value
        return self._data_parallel.mean(value)

    def _decide_stop(self) -> bool:
        """Whether this batch is the last one because a stop was requested (signal,
        :meth:`request_stop`) or :meth:`finish` was called.

        The request is read once: a signal arriving after that is acted on after the next
        batch. Data-parallel: a request or finish on any rank applies to every rank, with
        the reason of the first rank that has one, so every rank ends after the same batch
        (re-reading the request later could let one rank stop alone and leave the others
        waiting in a collective).
        """
        request, finished = self._stop_request, self.finished_early
        dp = self._data_parallel
        if dp is not None and any(dp.sum_ints(request is not None, finished is not None)):
            reasons = dp.gather_objects((request, finished))
            request = next((r for r, _ in reasons if r is not None), None)
            finished = next((f for _, f in reasons if f is not None), None)
        self._stop_reason, self.finished_early = request, finished
        return request is not None or finished is not None

    def shutdown(self) -> None:
        """Shut the collector down (``collector.shutdown()``, if it has one); ``train()``
        already does this when it ends."""
        shutdown = getattr(self.collector, "shutdown", None)
        if callable(shutdown):
            shutdown()

    def _train_sync(self) -> None:
        batch_process = self._ops["batch_process"]
        mask_key = ("collector", "mask")
        warm_up = self._random_frames()
        timings = self.timings if self._timing else None
        start = time.perf_counter()
        for batch in self.collector:
            if timings is not None:
                timings.add("collect", time.perf_counter() - start)
            mask = batch.get(mask_key, None)
            if mask is not None:
                frames = int(mask.sum()) * self.frame_skip
            else:
                frames = batch.numel() * self.frame_skip
            if self._data_parallel is not None:  # total_frames counts every rank's frames
                (frames,) = self._data_parallel.sum_ints(frames)
            for op in batch_process:  # rb.extend returns indices: the batch is kept
                batch = _data_hook_result(op(batch), batch, "batch_process", op)
            if self._after_collection(batch, frames, warm_up):
                break
            if timings is not None:
                start = time.perf_counter()

    def _train_async(self) -> None:
        from tensordict import TensorDict

        self.collector.start()
        batch = TensorDict()  # the updates sample the collector's buffer
        warm_up = self._random_frames()
        while True:
            frames = self._wait_async_frames()
            if frames == 0:  # a stop while waiting, or the collector ended: end as a batch does
                self._decide_stop()
                break
            if self._after_collection(batch, frames, warm_up):
                break

    def _after_collection(self, batch: TensorDictBase, frames: int, warm_up: int) -> bool:
        """What both loops do once a batch's ``frames`` are collected: count them, the
        ``pre_steps_log`` ops, the optimisation steps (after the random warm-up),
        ``post_steps`` and ``post_steps_log``, then the end of the iteration (logs,
        checkpoint, stop). True when the run stops after this batch."""
        self._count_frames(frames)
        self._run_log_ops("pre_steps_log", batch)
        if self.collected_frames > warm_up:
            self.optim_steps(batch)
        for op in self._ops["post_steps"]:
            op()
        self._run_log_ops("post_steps_log", batch)
        if self.async_collection and self._log_now:
            self._log({"utd_ratio": self._optim_count / max(self.collected_frames, 1)})
        return self._end_iteration(frames)

    def _wait_async_frames(self) -> int:
        """Wait for frames the background collector wrote and the loop has not counted yet;
        returns how many, or 0 when a stop was asked for while waiting (:meth:`request_stop`,
        a signal, :meth:`finish`) or the collector stopped without writing more.

        A collector that died of an error raises it here, within a poll (see
        :meth:`_collector_running`), instead of leaving the loop waiting for ever.
        """
        while True:
            frames = self._async_frames() * self.frame_skip - self.collected_frames
            if frames > 0:
                return frames
            if self._stop_request is not None or self.finished_early is not None:
                return 0
            if not self._collector_running():
                # frames written just before it stopped still count
                return max(self._async_frames() * self.frame_skip - self.collected_frames, 0)
            time.sleep(0.001)

    def _collector_running(self) -> bool:
        """Whether the asynchronous collector still collects: its ``is_running`` (a property
        or a method; :class:`SyncDataCollector`'s raises the error its thread died of).
        A collector without ``is_running`` counts as running."""
        running = getattr(self.collector, "is_running", True)
        if callable(running):
            running = running()
        return bool(running)

    def _random_frames(self) -> int:
        """The collector's random warm-up (``init_random_frames``): no optimisation until the
        trainer has counted more frames than that, as in torchrl."""
        return int(getattr(self.collector, "init_random_frames", None) or 0)

    def _async_frames(self) -> int:
        """Frames written so far by an asynchronous collector."""
        for attr in ("collected_frames", "frames_collected", "_frames"):
            value = getattr(self.collector, attr, None)
            if isinstance(value, int):
                return value
        rb = getattr(self.collector, "replay_buffer", None)
        if rb is not None:
            return int(getattr(rb, "write_count", len(rb)))
        raise AttributeError(
            f"{type(self.collector).__name__} exposes no frame count for async_collection: "
            "give it an int attribute `collected_frames` or a `replay_buffer`."
        )

    def _count_frames(self, frames: int) -> None:
        """Add a batch's frames; open the log gate if a multiple of log_interval is crossed."""
        before = self.collected_frames
        self.collected_frames = after = before + frames
        self._log_now = self.logger is not None and (
            after // self.log_interval > before // self.log_interval
        )

    def _take_logger_failure(self) -> BaseException | None:
        """The error a logger asks the run to stop with (``GuardedLogger.pop_failure``, with
        ``logger.on_error=raise``), once."""
        pop = getattr(self.logger, "pop_failure", None)
        return pop() if callable(pop) else None

    def _end_iteration(self, frames: int) -> bool:
        self.iteration += 1
        failure = self._take_logger_failure()
        if failure is not None:  # the logger's backend failed: stop after this batch, saved
            self._logger_failure = failure
            if self._stop_request is None:
                self._stop_request = "logger error"
        stop = self._decide_stop()
        pbar = self._pbar
        if pbar is not None:
            if self._pbar_values:
                pbar.set_postfix(
                    {k: _as_float(v) for k, v in self._pbar_values.items()}, refresh=False
                )
            pbar.update(frames)
        if self.save_trainer_file is not None:
            self.save_trainer()
        return stop or self.collected_frames >= self.total_frames

    def optim_steps(self, batch: TensorDictBase) -> None:
        """Run ``pre_optim_steps``, then ``num_epochs`` passes of ``optim_steps_per_batch``
        optimisation steps on ``batch``, each between ``pre_epoch`` and ``post_epoch``."""
        start = time.perf_counter() if self._timing else None
        ops = self._ops
        for op in ops["pre_optim_steps"]:
            op()
        loss_module = self.loss_module
        log_losses = self._log_now
        sums: dict[Any, torch.Tensor] = {}
        counts: dict[Any, int] = {}
        n = self.optim_steps_per_batch
        pre_epoch = ops["pre_epoch"]
        post_epoch = ops["post_epoch"]
        steps = 0
        # diagnostics (entropy, KL...) only for the batches whose losses are logged
        wants_diagnostics = getattr(loss_module, "diagnostics", None)
        if wants_diagnostics is not None:
            loss_module.diagnostics = wants_diagnostics and log_losses
        try:
            for _ in range(self.num_epochs):
                for op in pre_epoch:
                    batch = _data_hook_result(op(batch), batch, "pre_epoch", op)
                steps += self._optim_loop(batch, n, log_losses, sums, counts)
                for op in post_epoch:
                    op()
        finally:
            if wants_diagnostics is not None:
                loss_module.diagnostics = wants_diagnostics
        if log_losses and steps:
            # each entry's mean over the steps that wrote it (TD3's actor loss: every
            # policy_delay-th step)
            logged = {
                (k if isinstance(k, str) else "/".join(k)): v / counts[k] for k, v in sums.items()
            }
            if self.auto_log_optim_steps:
                logged["optim_steps"] = self._optim_count
            self._log(logged)
        if start is not None:
            self.timings.add("optim_steps", time.perf_counter() - start)

    def _optim_loop(
        self,
        batch: TensorDictBase,
        n: int,
        log_losses: bool,
        sums: dict[Any, torch.Tensor],
        counts: dict[Any, int],
    ) -> int:
        """Up to ``n`` optimisation steps on ``batch``; returns the number taken (fewer when
        a ``process_optim_batch`` hook raises StopIteration)."""
        ops = self._ops
        process_optim_batch = ops["process_optim_batch"]
        post_loss = ops["post_loss"]
        optimizer = ops["optimizer"]
        post_optim = ops["post_optim"]
        post_optim_log = ops["post_optim_log"]
        loss_module = self.loss_module
        one_step = self._loss_and_step_op(log_losses)
        for step in range(n):
            self._optim_count += 1
            sub_batch = batch
            try:
                for op in process_optim_batch:
                    sub_batch = _data_hook_result(
                        op(sub_batch), sub_batch, "process_optim_batch", op
                    )
            except StopIteration:  # an iterator over the batch is exhausted: end of epoch
                self._optim_count -= 1
                return step
            losses = None if one_step is None else one_step(loss_module, sub_batch)
            if losses is None:
                losses = loss_module(sub_batch)
                for op in post_loss:
                    op(sub_batch)
                for op in optimizer:
                    out = op(losses)
                    if isinstance(out, TensorDictBase):
                        losses = out
            for op in post_optim:
                op()
            if post_optim_log:
                self._run_log_ops("post_optim_log", sub_batch)
            if log_losses:
                for key, value in losses.items(include_nested=True, leaves_only=True):
                    if value.numel() == 1:
                        value = value.detach()
                        if key in sums:
                            sums[key] = sums[key] + value
                            counts[key] += 1
                        else:
                            sums[key], counts[key] = value, 1
        return n

    def _loss_and_step_op(self, log_losses: bool) -> Callable | None:
        """``OptimizerHook.loss_and_step`` with the trainer's clipping settings, when an
        :class:`OptimizerHook` placed by :meth:`OptimizerHook.register` is the only
        ``"optimizer"`` op (not a subclass overriding its call, not timed or filtered) and
        no ``post_loss`` op needs the loss computed before the step. Its losses reach only
        the trainer's loss logging, so the gradient norm is recorded when ``log_losses``."""
        ops = self._ops
        if ops["post_loss"] or len(ops["optimizer"]) != 1:
            return None
        op = ops["optimizer"][0]
        hook = op.op if type(op) is _WithClipArgs else None
        if type(hook) is not OptimizerHook or hook._trainer is not self:
            return None
        return partial(
            hook.loss_and_step,
            clip_grad_norm=self.clip_grad_norm,
            clip_norm=self.clip_norm,
            index=op.index,
            record_grad_norm=log_losses,
        )

    @property
    def train_time_s(self) -> float:
        """Seconds spent in :meth:`train` by this run, over every session: a resumed
        trainer carries on from its checkpoint's count (0 for checkpoints that lack it)."""
        running = 0.0
        if self._train_started is not None:
            running = time.perf_counter() - self._train_started
        return self._train_time_before + running

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The trainer's full state: counters, registered modules/hooks, collector and RNGs."""
        collector_sd = getattr(self.collector, "state_dict", None)
        return {
            "format": _ckpt.CKPT_FORMAT,
            "version": _ckpt.CKPT_VERSION,
            "counters": {
                "collected_frames": self.collected_frames,
                "optim_count": self._optim_count,
                "iteration": self.iteration,
                "last_save_frames": self._last_save_frames,
                "every": self._every_counts(),
                "log_windows": dict(self._log_windows),
            },
            "meta": dict(self.checkpoint_metadata),
            # wall-clock, so apart from the counters (which a resumed run reproduces bitwise)
            "timing": {"train_time_s": self.train_time_s},
            "modules": {name: module.state_dict() for name, module in self._modules.items()},
            "collector": collector_sd() if callable(collector_sd) else None,
            "rng": _ckpt.get_rng_state(),
            # data-parallel runs only, so single-process checkpoints are unchanged
            **(
                {"distributed": {"world_size": self.world_size, "rank": self.rank}}
                if self._data_parallel is not None
                else {}
            ),
        }

    def load_state_dict(self, state_dict: dict[str, Any], *, source: str = "state dict") -> None:
        """Restore a state from :meth:`state_dict`; mismatched entries raise CheckpointError.

        Args:
            state_dict: the state to load.
            source: how to name the state's origin (e.g. the file) in error messages.
        """
        required = ("counters", "modules", "collector", "rng")
        missing_top = [k for k in required if k not in state_dict]
        if missing_top:
            raise _ckpt.CheckpointError(
                f"{source} is missing the entries {missing_top} of a trainer checkpoint."
            )
        self._check_world_size(state_dict.get("distributed") or {}, source)
        self._check_metadata(state_dict.get("meta") or {}, source)
        saved = state_dict["modules"]
        missing = sorted(set(self._modules) - set(saved))
        unexpected = sorted(set(saved) - set(self._modules))
        if missing:
            raise _ckpt.CheckpointError(
                f"{source} does not match this trainer's registered modules: missing from "
                f"the checkpoint: {missing}; in the checkpoint but not registered: {unexpected}."
            )
        shape_errors = [
            line
            for name, module in self._modules.items()
            if isinstance(module, nn.Module)
            for line in _module_mismatches(name, module, saved[name])
        ]
        if shape_errors:
            raise _ckpt.CheckpointError(
                f"{source} does not fit this trainer's networks (another algorithm, env or "
                "network shape?):\n  " + "\n  ".join(shape_errors)
            )
        for name, module in self._modules.items():
            self._load_module(name, module, saved[name], source)
        collector_sd = state_dict["collector"]
        load = getattr(self.collector, "load_state_dict", None)
        if collector_sd is not None and callable(load):
            load(collector_sd)
        update_weights = getattr(self.collector, "update_policy_weights_", None)
        if callable(update_weights):
            update_weights()  # worker processes act with the restored policy from now on
        counters = state_dict["counters"]
        self.collected_frames = int(counters["collected_frames"])
        self._optim_count = int(counters["optim_count"])
        self.iteration = int(counters["iteration"])
        self._last_save_frames = int(counters.get("last_save_frames", self.collected_frames))
        self._set_every_counts(counters.get("every") or {})
        # e.g. a bare trainer reading the networks of a full run's checkpoint, or hooks
        # registered after the load: restored when registered, else named by train()
        self._unclaimed = _Unclaimed(
            source, {name: saved[name] for name in unexpected}, counters.get("every") or {}
        )
        # the log gate: which window each key was last logged in (no repeated point on resume)
        self._log_windows = {str(k): int(v) for k, v in (counters.get("log_windows") or {}).items()}
        self._logged_steps = {}  # steps after the restored count are logged again
        self._train_time_before = float((state_dict.get("timing") or {}).get("train_time_s", 0))
        _ckpt.set_rng_state(state_dict["rng"])

    def _load_module(self, name: str, module: Any, state: Any, source: str) -> None:
        """Restore one registered module from a checkpoint's ``state``."""
        if isinstance(module, nn.Module):
            mismatches = _module_mismatches(name, module, state)
            if mismatches:
                raise _ckpt.CheckpointError(
                    f"{source} does not fit this trainer's networks (another algorithm, env "
                    "or network shape?):\n  " + "\n  ".join(mismatches)
                )
        try:
            if isinstance(module, torch.optim.Optimizer):
                load_optimizer_state(module, state)
            else:
                module.load_state_dict(state)
        except Exception as err:
            raise _ckpt.CheckpointError(
                f"{source}: could not load module {name!r} ({type(module).__name__}): {err}"
            ) from err

    def _warn_unclaimed(self) -> None:
        """Training starts: the checkpoint's states no hook claimed are named, once."""
        unclaimed, self._unclaimed = self._unclaimed, None
        if unclaimed is not None and unclaimed.modules:
            warnings.warn(
                f"{unclaimed.source} holds modules this trainer has not registered; they are "
                f"not loaded: {sorted(unclaimed.modules)} (register a hook before train() to "
                "restore its state)",
                stacklevel=3,
            )

    def _check_world_size(self, saved: dict[str, Any], source: str) -> None:
        """Refuse (in one line) a checkpoint of another number of processes or rank."""
        world_size = int(saved.get("world_size", 1))
        if world_size != self.world_size:
            raise _ckpt.CheckpointError(
                f"{source} was saved by a run of {world_size} process(es) and this run has "
                f"{self.world_size}: resume it with the same number (torchrun "
                f"--nproc_per_node={world_size}{' or plain python' if world_size == 1 else ''})."
            )
        rank = int(saved.get("rank", 0))
        if rank != self.rank:
            raise _ckpt.CheckpointError(
                f"{source} holds the state of rank {rank}, not of this rank ({self.rank})."
            )

    def _every_ops(self) -> dict[str, list[_Every]]:
        return {
            dest: [op for op in ops if isinstance(op, _Every)]
            for dest, ops in self._ops.items()
            if any(isinstance(op, _Every) for op in ops)
        }

    def _every_counts(self) -> dict[str, list[int]]:
        """Pass counters of the ``every=N`` registrations, so they keep their phase on resume."""
        return {dest: [op.count for op in ops] for dest, ops in self._every_ops().items()}

    def _set_every_counts(self, counts: dict[str, list[int]]) -> None:
        for dest, ops in self._every_ops().items():
            for op, count in zip(ops, counts.get(dest, ()), strict=False):
                op.count = int(count)

    def _check_metadata(self, saved: dict[str, Any], source: str) -> None:
        """Raise a CheckpointError listing every metadata entry that differs from this run."""
        ours = self.checkpoint_metadata
        diffs = [
            f"{key}: checkpoint {saved.get(key, '<absent>')!r}, this run {ours.get(key, '<absent>')!r}"
            for key in sorted(set(ours) | set(saved))
            if saved.get(key, "<absent>") != ours.get(key, "<absent>")
        ]
        if diffs:
            raise _ckpt.CheckpointError(
                f"{source} was made by a different setup:\n  " + "\n  ".join(diffs)
            )

    def save_trainer(self, force_save: bool = False, *, force: bool = False) -> None:
        """Save a checkpoint to ``save_trainer_file``.

        Args:
            force_save: save now; otherwise save only when the frame count crossed a
                multiple of ``save_trainer_interval`` since the last save.
            force: the same as ``force_save``.
        """
        force = force or force_save
        if self.save_trainer_file is None:
            if force:
                raise ValueError("save_trainer(force=True) needs save_trainer_file to be set.")
            return
        interval = self.save_trainer_interval
        if not force and self.collected_frames // interval <= self._last_save_frames // interval:
            return
        self._last_save_frames = self.collected_frames
        state = self.state_dict()
        try:
            if self.keep_checkpoints is None:
                self.last_checkpoint = _ckpt.save_checkpoint(state, self.save_trainer_file)
            else:
                self.last_checkpoint = _ckpt.save_rotating(
                    state, self.save_trainer_file, self.collected_frames, self.keep_checkpoints
                )
        except OSError as err:  # disk full, directory gone or unwritable...
            previous = self.last_checkpoint
            kept = f"the previous one, {previous}, is intact" if previous else "none was kept"
            raise _ckpt.CheckpointError(
                f"could not write the checkpoint of frame {self.collected_frames} in "
                f"{Path(self.save_trainer_file).parent} ({err.strerror or err}); {kept}. "
                "Free space or fix the directory, then resume with trainer.resume=true."
            ) from err

    def load_from_file(self, file: str | Path | None = None, **kwargs: Any) -> Trainer:
        """Load a checkpoint written by :meth:`save_trainer`.

        Args:
            file: the checkpoint; default: the latest one for ``save_trainer_file``.
            **kwargs: torchrl passes them to ``torch.load``; ``map_location``,
                ``weights_only`` and ``mmap`` are accepted and have no effect here (the
                file holds plain data only; it is read on CPU with ``weights_only=True`` and
                each module copies its state onto its own device). Any other keyword
                raises a TypeError.
        """
        unknown = sorted(set(kwargs) - {"map_location", "weights_only", "mmap"})
        if unknown:
            raise TypeError(f"load_from_file got unexpected keyword arguments {unknown}.")
        if file is None:
            if self.save_trainer_file is None:
                raise ValueError("load_from_file needs a path (or save_trainer_file to be set).")
            file = _ckpt.latest_checkpoint(self.save_trainer_file) or self.save_trainer_file
        state = _ckpt.load_checkpoint(file)
        self.load_state_dict(state, source=f"Checkpoint {file}")
        self.last_checkpoint = Path(file)
        return self

    def __repr__(self) -> str:
        points = {k: len(v) for k, v in self._ops.items() if v}
        return (
            f"{type(self).__name__}(collected_frames={self.collected_frames}/"
            f"{self.total_frames}, optim_steps={self._optim_count}, hooks={points}, "
            f"modules={list(self._modules)})"
        )
