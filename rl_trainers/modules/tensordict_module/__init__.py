"""``torchrl.modules.tensordict_module``: the tensordict actors, operators and exploration
modules, under torchrl's module paths (they are defined in :mod:`rl_trainers.modules`)."""

from rl_trainers.modules.tensordict_module.actors import (
    Actor,
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    DistributionalQValueActor,
    DistributionalQValueModule,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    TanhModule,
    ValueOperator,
)
from rl_trainers.modules.tensordict_module.common import SafeModule
from rl_trainers.modules.tensordict_module.exploration import (
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    EGreedyModule,
    EGreedyWrapper,
    OrnsteinUhlenbeckProcessModule,
)
from rl_trainers.modules.tensordict_module.probabilistic import (
    SafeProbabilisticModule,
    SafeProbabilisticTensorDictSequential,
)
from rl_trainers.modules.tensordict_module.rnn import (
    GRUModule,
    LSTMModule,
    recurrent_mode,
    set_recurrent_mode,
)
from rl_trainers.modules.tensordict_module.sequence import SafeSequential

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
    "SafeModule",
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
    "EGreedyModule",
    "EGreedyWrapper",
    "OrnsteinUhlenbeckProcessModule",
    "SafeProbabilisticModule",
    "SafeProbabilisticTensorDictSequential",
    "SafeSequential",
    "LSTMModule",
    "GRUModule",
    "set_recurrent_mode",
    "recurrent_mode",
]
