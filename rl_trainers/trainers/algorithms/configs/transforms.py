"""torchrl's path ``torchrl.trainers.algorithms.configs.transforms``: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.configs.transforms`,
:mod:`rl_trainers.compat.torchrl.schema` and
:mod:`rl_trainers.compat.torchrl.config_factories`.
"""

from rl_trainers.compat.torchrl.config_factories import (
    _make_reward_sum_transform,
    make_compose,
    make_noop_reset_env,
)
from rl_trainers.compat.torchrl.schema import (
    ComposeConfig,
)
from rl_trainers.configs.transforms import (
    BinarizeRewardConfig,
    CatFramesConfig,
    CatTensorsConfig,
    CenterCropConfig,
    ClipTransformConfig,
    DoubleToFloatConfig,
    EndOfLifeTransformConfig,
    FlattenObservationConfig,
    FrameSkipTransformConfig,
    GrayScaleConfig,
    InitTrackerConfig,
    NoopResetEnvConfig,
    ObservationNormConfig,
    PermuteTransformConfig,
    ResizeConfig,
    RewardClippingConfig,
    RewardScalingConfig,
    RewardSumConfig,
    SignTransformConfig,
    StepCounterConfig,
    TargetReturnConfig,
    ToTensorImageConfig,
    TrajCounterConfig,
    UnsqueezeTransformConfig,
    VecNormConfig,
)

__all__ = [
    "BinarizeRewardConfig",
    "CatFramesConfig",
    "CatTensorsConfig",
    "CenterCropConfig",
    "ClipTransformConfig",
    "ComposeConfig",
    "DoubleToFloatConfig",
    "EndOfLifeTransformConfig",
    "FlattenObservationConfig",
    "FrameSkipTransformConfig",
    "GrayScaleConfig",
    "InitTrackerConfig",
    "NoopResetEnvConfig",
    "ObservationNormConfig",
    "PermuteTransformConfig",
    "ResizeConfig",
    "RewardClippingConfig",
    "RewardScalingConfig",
    "RewardSumConfig",
    "SignTransformConfig",
    "StepCounterConfig",
    "TargetReturnConfig",
    "ToTensorImageConfig",
    "TrajCounterConfig",
    "UnsqueezeTransformConfig",
    "VecNormConfig",
    "_make_reward_sum_transform",
    "make_compose",
    "make_noop_reset_env",
]
