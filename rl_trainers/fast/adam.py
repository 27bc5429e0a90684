"""``optimizer.step()`` with less Python around torch's fused Adam kernel.

Replaces ``optimizer.step()`` in the Trainer's optimiser step
(:func:`rl_trainers.core.optimizer_step.optimizer_step`) under the switch ``LEAN_ADAM``:
:func:`lean_fused_adam_step` steps the optimiser and returns True, or returns False, having
done nothing, where it does not apply.

PPO on CartPole makes ~8,000 optimiser steps of a few small tensors; torch's
``Adam.step`` spends ~30 us per step regrouping the parameters by device and dtype and
going through its profiling and hook wrappers, about as long as the fused kernel itself.
:func:`lean_fused_adam_step` calls the same kernel (``torch._fused_adam_``, or
``torch._fused_adamw_`` for decoupled weight decay) on the same state tensors, so results
are bitwise equal to ``optimizer.step()`` and checkpoints are unchanged. Anything it does
not cover is left to ``optimizer.step()``: other optimisers, non-fused Adam,
amsgrad/maximize/capturable, tensor learning rates, step hooks, a parameter without a
gradient, mixed devices or dtypes. The first step creates the state with Adam's own
``_init_group``, as ``optimizer.step()`` would; unlike ``optimizer.step()`` it does not
import ``torch._dynamo`` (see :mod:`rl_trainers._lazy_dynamo`).

Each parameter's state keeps its own ``step`` counter, as in torch, but the lean path makes
them views of one tensor per parameter group, so a step increments them all with one op
instead of one per parameter (values, state dicts and checkpoints are unchanged).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.optim import optimizer as _optimizer_module

__all__ = ["lean_fused_adam_step"]

_ADAM_TYPES = (torch.optim.Adam, torch.optim.AdamW)


def _has_hooks(optimizer: torch.optim.Optimizer) -> bool:
    return bool(
        optimizer._optimizer_step_pre_hooks
        or optimizer._optimizer_step_post_hooks
        or _optimizer_module._global_optimizer_pre_hooks
        or _optimizer_module._global_optimizer_post_hooks
    )


def lean_fused_adam_step(optimizer: torch.optim.Optimizer, flat: Any = None) -> bool:
    """Run one fused Adam(W) step on the optimiser's own state; False if not applicable.

    With ``flat`` (a :class:`~rl_trainers.core.flat_params.FlatParameters`) holding the
    optimizer's parameters (one group) and their gradients, the kernel runs once over the
    flat tensors; the Adam moments then become views of flat tensors too (values kept), the
    same way as the step counters.
    """
    if type(optimizer) not in _ADAM_TYPES or _has_hooks(optimizer):
        return False
    state = optimizer.state
    plans = []
    for group in optimizer.param_groups:
        if not group["fused"] or group["amsgrad"] or group["maximize"] or group["capturable"]:
            return False
        if group["differentiable"]:
            return False
        lr, (beta1, beta2) = group["lr"], group["betas"]
        if not all(type(v) is float for v in (lr, beta1, beta2)):
            return False
        params = group["params"]
        if not params:
            continue
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            return False  # torch skips these parameters; leave that to it
        device, dtype = params[0].device, params[0].dtype
        if any(p.device != device or p.dtype != dtype or p.grad.is_sparse for p in params):
            return False
        if any(not state.get(p) for p in params):
            optimizer._init_group(group, [], [], [], [], [], [])  # first step: torch's state
        states = [state[p] for p in params]
        plans.append((group, params, grads, states))
    with torch.no_grad():
        for index, (group, params, grads, states) in enumerate(plans):
            counters = _step_counters(optimizer, index, states)
            if len(plans) == 1 and _holds(flat, params):
                _fused_flat_step(optimizer, group, flat, states, counters)
            else:
                _fused_step(group, params, grads, states, counters)
    optimizer._opt_called = True  # what an LR scheduler's wrapper of optimizer.step() records
    return True


def _step_counters(optimizer: torch.optim.Optimizer, index: int, states: list) -> tuple:
    """``(counters, steps)``: one tensor holding the group's step counts and the
    parameters' ``step`` tensors, views of it; set up (values kept) on the first lean step
    and again whenever a state load or user code replaced a ``step`` tensor."""
    steps = [s["step"] for s in states]
    cache = optimizer.__dict__.setdefault("_lean_step_counters", {})
    hit = cache.get(index)
    if hit is not None and len(hit[1]) == len(steps):
        if all(a is b for a, b in zip(hit[1], steps)):
            return hit
    counters = torch.stack(steps)
    steps = list(counters.unbind(0))
    for state, step in zip(states, steps):
        state["step"] = step
    cache[index] = (counters, steps)
    return cache[index]


def _holds(flat: Any, params: list) -> bool:
    """Whether ``flat`` stores exactly ``params`` and their current gradients."""
    return flat is not None and flat.matches(params) and flat.grads_attached()


def _flat_moments(optimizer: torch.optim.Optimizer, flat: Any, states: list) -> tuple:
    """``(exp_avg, exp_avg_sq)``: one tensor each whose views are the parameters' moments;
    set up (values kept) on the first flat step and again whenever a state load replaced
    them."""
    moments = [(s["exp_avg"], s["exp_avg_sq"]) for s in states]
    hit = optimizer.__dict__.get("_lean_flat_moments")
    if hit is not None and hit[0] is flat and len(hit[2]) == len(moments):
        if all(a is b and c is d for (a, c), (b, d) in zip(hit[2], moments)):
            return hit[1]
    merged = []
    for name in ("exp_avg", "exp_avg_sq"):
        buffer, views = flat.flat_like([s[name] for s in states])
        for state, view in zip(states, views):
            state[name] = view
        merged.append(buffer)
    views = [(s["exp_avg"], s["exp_avg_sq"]) for s in states]
    optimizer.__dict__["_lean_flat_moments"] = (flat, tuple(merged), views)
    return tuple(merged)


def _fused_flat_step(
    optimizer: torch.optim.Optimizer,
    group: dict,
    flat: Any,
    states: list,
    step_counters: tuple,
) -> None:
    """One kernel call over the flat parameters, gradients and moments. The parameters'
    step counts must agree (they do unless some step skipped a parameter); else the
    per-tensor step runs."""
    counters, steps = step_counters
    counts = counters.numpy() if counters.device.type == "cpu" else None
    if counts is None or counts.min() != counts.max():
        _fused_step(group, list(flat.params), flat.grad_views, states, step_counters)
        return
    exp_avg, exp_avg_sq = _flat_moments(optimizer, flat, states)
    counters.add_(1)
    _fused_kernel(group, [flat.data], [flat.grad], [exp_avg], [exp_avg_sq], steps[:1])


def _fused_step(group: dict, params: list, grads: list, states: list, step_counters: tuple) -> None:
    """What torch's ``_fused_adam`` does for one device and dtype."""
    counters, steps = step_counters
    counters.add_(1)
    exp_avgs = [s["exp_avg"] for s in states]
    _fused_kernel(group, params, grads, exp_avgs, [s["exp_avg_sq"] for s in states], steps)


def _fused_kernel(
    group: dict, params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, steps: list
) -> None:
    kernel = torch._fused_adamw_ if group.get("decoupled_weight_decay") else torch._fused_adam_
    kernel(
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        [],
        steps,
        amsgrad=False,
        lr=group["lr"],
        beta1=group["betas"][0],
        beta2=group["betas"][1],
        weight_decay=group["weight_decay"],
        eps=group["eps"],
        maximize=False,
        grad_scale=None,
        found_inf=None,
    )
