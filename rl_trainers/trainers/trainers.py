"""torchrl's module path ``torchrl.trainers.trainers``: the Trainer and its hooks.

Scripts and config files that name ``torchrl.trainers.trainers.<Name>`` (e.g. a Hydra
``_target_``) port by changing the prefix; the code lives in :mod:`rl_trainers.trainers`.
"""

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
from rl_trainers.trainers.trainer import Trainer, TrainerHookBase

__all__ = [
    "ValueEstimatorHook",
    "LogTiming",
    "EarlyStopping",
    "BatchSubSampler",
    "ClearCudaCache",
    "CountFramesLog",
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
