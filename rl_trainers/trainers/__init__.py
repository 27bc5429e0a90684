"""rl_trainers.trainers: the Trainer loop, its hooks and checkpointing.

The loop and its hook points are documented in :class:`HookPoint`.
Builders live in ``rl_trainers.trainers.helpers`` and algorithm trainers in
``rl_trainers.trainers.algorithms`` (import them from there).
"""

from rl_trainers.trainers.checkpoint import CheckpointError
from rl_trainers.trainers.hooks import (
    BatchSubSampler,
    ClearCudaCache,
    CountFramesLog,
    EarlyStopping,
    LogReward,
    LogScalar,
    LogTiming,
    LogValidationReward,
    LRSchedulerHook,
    OptimizerHook,
    Recorder,
    ReplayBufferTrainer,
    RewardNormalizer,
    SelectKeys,
    TargetNetUpdaterHook,
    UpdateWeights,
    UTDRHook,
    ValueEstimatorHook,
    mask_batch,
)
from rl_trainers.trainers.trainer import (
    HOOK_POINTS,
    HookPoint,
    HookTimings,
    Trainer,
    TrainerHookBase,
)

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
