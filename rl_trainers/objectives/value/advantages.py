"""``torchrl.objectives.value.advantages`` names: the value estimator classes."""

from rl_trainers.objectives.value import (
    GAE,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    VTrace,
)

__all__ = [
    "GAE",
    "TDLambdaEstimator",
    "TD1Estimator",
    "TD0Estimator",
    "VTrace",
    "ValueEstimatorBase",
]
