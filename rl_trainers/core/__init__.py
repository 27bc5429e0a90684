"""The training loop: the Trainer, its hook points and registry, checkpoints, data parallelism.

- :mod:`.loop`: :class:`Trainer`, :class:`HookPoint` (whose docstring is the loop),
  :class:`TrainerHookBase`, :class:`OptimizerHook` (the one hook every trainer needs),
  :class:`HookTimings`, :class:`NonFiniteLossError`;
- :mod:`.checkpoint`: the checkpoint file format, RNG state, rotating checkpoints;
- :mod:`.distributed`: data-parallel collectives over ``torch.distributed``;
- :mod:`.flat_params` and :mod:`.optimizer_step`: one flat buffer of parameters and
  gradients, and the optimiser step over it (the lean fused-Adam step of
  :mod:`rl_trainers.fast.adam` where it applies).

The loop knows no algorithm, config or hook family: the hooks are in :mod:`rl_trainers.hooks`,
the algorithm trainers in :mod:`rl_trainers.algorithms`. The names below are loaded on first
use, so that importing one submodule (``rl_trainers.core.checkpoint``) does not load the loop.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as static tools (type checkers, the API docs) see them
    from rl_trainers.core.checkpoint import CheckpointError
    from rl_trainers.core.loop import (
        HOOK_POINTS,
        HookPoint,
        HookTimings,
        NonFiniteLossError,
        OptimizerHook,
        Trainer,
        TrainerHookBase,
    )

_LAZY = {
    "CheckpointError": "rl_trainers.core.checkpoint",
    **dict.fromkeys(
        (
            "HOOK_POINTS",
            "HookPoint",
            "HookTimings",
            "NonFiniteLossError",
            "OptimizerHook",
            "Trainer",
            "TrainerHookBase",
        ),
        "rl_trainers.core.loop",
    ),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rl_trainers.core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "HOOK_POINTS",
    "CheckpointError",
    "HookPoint",
    "HookTimings",
    "NonFiniteLossError",
    "OptimizerHook",
    "Trainer",
    "TrainerHookBase",
]
