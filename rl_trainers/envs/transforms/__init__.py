"""Transforms and ``TransformedEnv``."""

from rl_trainers.envs.transforms.crop import RandomCropTensorDict
from rl_trainers.envs.transforms.gym_transforms import EndOfLifeTransform
from rl_trainers.envs.transforms.keys import (
    CatTensors,
    ExcludeTransform,
    RenameTransform,
    SelectTransform,
)
from rl_trainers.envs.transforms.pooling import TimeMaxPool
from rl_trainers.envs.transforms.primer import TensorDictPrimer
from rl_trainers.envs.transforms.shapes import SqueezeTransform, UnsqueezeTransform
from rl_trainers.envs.transforms.transforms import (
    CatFrames,
    Compose,
    DoubleToFloat,
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
]
