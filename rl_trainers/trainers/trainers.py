"""torchrl's path ``torchrl.trainers.trainers``: the Trainer and its hooks, an alias, no logic.

Scripts and config files that name ``torchrl.trainers.trainers.<Name>`` (e.g. a Hydra
``_target_``) port by changing the prefix; the names are those of :mod:`rl_trainers.core`
and :mod:`rl_trainers.hooks`.
"""

from rl_trainers.core.loop import Trainer, TrainerHookBase
from rl_trainers.hooks import (
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
