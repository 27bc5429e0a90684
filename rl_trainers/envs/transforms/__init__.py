"""Transforms and ``TransformedEnv``."""

from rl_trainers.envs.transforms.counters import TrajCounter
from rl_trainers.envs.transforms.crop import CenterCrop, Crop, RandomCropTensorDict
from rl_trainers.envs.transforms.gym_transforms import EndOfLifeTransform
from rl_trainers.envs.transforms.keys import (
    CatTensors,
    ExcludeTransform,
    RenameTransform,
    SelectTransform,
)
from rl_trainers.envs.transforms.pooling import TimeMaxPool
from rl_trainers.envs.transforms.primer import TensorDictPrimer
from rl_trainers.envs.transforms.rewards import (
    BinarizeReward,
    Reward2GoTransform,
    RewardClipping,
    RewardNorm,
    TargetReturn,
)
from rl_trainers.envs.transforms.shapes import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)
from rl_trainers.envs.transforms.transforms import (
    CatFrames,
    Compose,
    DoubleToFloat,
    DTypeCastTransform,
    FrameSkipTransform,
    GrayScale,
    InitTracker,
    NoopResetEnv,
    ObservationNorm,
    Resize,
    RewardScaling,
    RewardSum,
    StepCounter,
    ToTensorImage,
    Transform,
    TransformedEnv,
    VecNorm,
)
from rl_trainers.envs.transforms.values import ClipTransform, SignTransform

__all__ = [
    "Transform",
    "Compose",
    "TransformedEnv",
    "StepCounter",
    "RewardSum",
    "RewardScaling",
    "ObservationNorm",
    "VecNorm",
    "DoubleToFloat",
    "ToTensorImage",
    "GrayScale",
    "Resize",
    "CatFrames",
    "FrameSkipTransform",
    "NoopResetEnv",
    "InitTracker",
    "CatTensors",
    "ExcludeTransform",
    "SelectTransform",
    "RenameTransform",
    "UnsqueezeTransform",
    "SqueezeTransform",
    "ClipTransform",
    "SignTransform",
    "EndOfLifeTransform",
    "TimeMaxPool",
    "TensorDictPrimer",
    "RandomCropTensorDict",
    "DTypeCastTransform",
    "RewardClipping",
    "BinarizeReward",
    "Crop",
    "CenterCrop",
    "PermuteTransform",
    "FlattenObservation",
    "TargetReturn",
    "Reward2GoTransform",
    "RewardNorm",
    "TrajCounter",
]
