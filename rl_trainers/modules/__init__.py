"""Networks, actors, value operators and exploration modules (``torchrl.modules`` names)."""

from tensordict.nn import NormalParamExtractor

from rl_trainers.modules.actors import (
    Actor,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    ValueOperator,
    spec_kind,
)
from rl_trainers.modules.builders import (
    action_size,
    make_actor,
    make_qvalue,
    make_value,
    observation_size,
)
from rl_trainers.modules.distributions import (
    Categorical,
    Delta,
    IndependentNormal,
    OneHotCategorical,
    TanhNormal,
)
from rl_trainers.modules.exploration import (
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    EGreedyModule,
    EGreedyWrapper,
)
from rl_trainers.modules.models import MLP, ConvNet, DuelingCnnDQNet, FastTanh, SquashDims

OneHotCategoricalDist = OneHotCategorical

__all__ = [
    "MLP",
    "ConvNet",
    "DuelingCnnDQNet",
    "SquashDims",
    "FastTanh",
    "NormalParamExtractor",
    "TanhNormal",
    "IndependentNormal",
    "Categorical",
    "OneHotCategorical",
    "Delta",
    "ProbabilisticActor",
    "Actor",
    "ValueOperator",
    "QValueActor",
    "TanhModule",
    "spec_kind",
    "EGreedyModule",
    "EGreedyWrapper",
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
    "make_actor",
    "make_value",
    "make_qvalue",
    "observation_size",
    "action_size",
]
