"""rl_trainers.trainers: the Trainer loop, its hooks and checkpointing.

The loop and its hook points are documented in :class:`HookPoint`.
Builders live in ``rl_trainers.trainers.helpers`` and algorithm trainers in
``rl_trainers.trainers.algorithms`` (import them from there).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as static tools (type checkers, the API docs) see them
    from rl_trainers.trainers.trainer import (
        HOOK_POINTS,
        HookPoint,
        HookTimings,
        Trainer,
        TrainerHookBase,
    )

# Loaded on first use (``from rl_trainers.trainers import Trainer``), so that importing a
# submodule (``rl_trainers.trainers.algorithms.configs``, which the app's ``--help`` and
# config errors read)
# does not load torch.
_LAZY = {
    "CheckpointError": "rl_trainers.trainers.checkpoint",
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
        "rl_trainers.trainers.hooks",
    ),
    **dict.fromkeys(
        ("HOOK_POINTS", "HookPoint", "HookTimings", "Trainer", "TrainerHookBase"),
        "rl_trainers.trainers.trainer",
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
