"""``torchrl.modules.tensordict_module.actors`` names."""

from rl_trainers.modules.actors import (
    Actor,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    TanhModule,
    ValueOperator,
)
from rl_trainers.modules.distributional import (
    DistributionalQValueActor,
    DistributionalQValueModule,
)
from rl_trainers.modules.operators import (
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
)

__all__ = [
    "Actor",
    "ActorCriticOperator",
    "ActorCriticWrapper",
    "ActorValueOperator",
    "DistributionalQValueActor",
    "DistributionalQValueModule",
    "ProbabilisticActor",
    "QValueActor",
    "QValueModule",
    "TanhModule",
    "ValueOperator",
]
