"""torchrl's path ``torchrl.trainers``: the Trainer and its hooks, an alias, no logic.

The names are those of :mod:`rl_trainers.core` (the loop, documented in
:class:`~rl_trainers.core.loop.HookPoint`) and :mod:`rl_trainers.hooks`, loaded on first
use. torchrl's subpackages are here too: ``rl_trainers.trainers.trainers``,
``rl_trainers.trainers.helpers`` (builders) and ``rl_trainers.trainers.algorithms``
(the algorithm trainers in torchrl's constructor form).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as static tools (type checkers, the API docs) see them
    from rl_trainers.core.loop import (
        HOOK_POINTS,
        HookPoint,
        HookTimings,
        Trainer,
        TrainerHookBase,
    )

# Loaded on first use (``from rl_trainers.trainers import Trainer``), so that importing a
# submodule (``rl_trainers.trainers.algorithms.configs``) does not load torch.
_LAZY = {
    "CheckpointError": "rl_trainers.core.checkpoint",
    **dict.fromkeys(
        (
            "BatchSubSampler",
            "ClearCudaCache",
            "CountFramesLog",
            "EarlyStopping",
            "LogReward",
            "LogScalar",
            "LogTiming",
            "LogValidationReward",
            "LRSchedulerHook",
            "OptimizerHook",
            "Recorder",
            "ReplayBufferTrainer",
            "RewardNormalizer",
            "SelectKeys",
            "TargetNetUpdaterHook",
            "UpdateWeights",
            "UTDRHook",
            "ValueEstimatorHook",
            "mask_batch",
        ),
        "rl_trainers.hooks",
    ),
    **dict.fromkeys(
        ("HOOK_POINTS", "HookPoint", "HookTimings", "Trainer", "TrainerHookBase"),
        "rl_trainers.core.loop",
    ),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rl_trainers.trainers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "HookTimings",
    "ValueEstimatorHook",
    "LogTiming",
    "EarlyStopping",
    "HOOK_POINTS",
    "BatchSubSampler",
    "CheckpointError",
    "ClearCudaCache",
    "CountFramesLog",
    "HookPoint",
    "LogReward",
    "LogScalar",
    "LogValidationReward",
    "LRSchedulerHook",
    "OptimizerHook",
    "Recorder",
    "ReplayBufferTrainer",
    "RewardNormalizer",
    "SelectKeys",
    "TargetNetUpdaterHook",
    "Trainer",
    "TrainerHookBase",
    "UTDRHook",
    "UpdateWeights",
    "mask_batch",
]
