"""Reusable trainer hooks, one module per family."""

from rl_trainers.core.loop import TrainerHookBase
from rl_trainers.hooks.data import (
    BatchSubSampler,
    SelectKeys,
    ValueEstimatorHook,
    mask_batch,
)
from rl_trainers.hooks.evaluation import (
    LogValidationReward,
    Recorder,
    episode_returns,
    trajectory_returns,
)
from rl_trainers.hooks.logging import (
    CountFramesLog,
    LogReward,
    LogScalar,
    LogTiming,
    UTDRHook,
)
from rl_trainers.hooks.normalisation import RewardNormalizer
from rl_trainers.hooks.optim import ClearCudaCache, LRSchedulerHook, OptimizerHook
from rl_trainers.hooks.replay import ReplayBufferTrainer
from rl_trainers.hooks.stopping import EarlyStopping
from rl_trainers.hooks.weights import TargetNetUpdaterHook, UpdateWeights

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
    "TrainerHookBase",
    "UTDRHook",
    "UpdateWeights",
    "episode_returns",
    "mask_batch",
    "trajectory_returns",
]
