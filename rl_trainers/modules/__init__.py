"""Networks, actors, value operators and exploration modules (``torchrl.modules`` names)."""

from tensordict.nn import AddStateIndependentNormalScale, NormalParamExtractor

from rl_trainers.modules.actors import (
    Actor,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    SafeProbabilisticModule,
    TanhModule,
    ValueOperator,
    spec_kind,
)
from rl_trainers.modules.batchrenorm import BatchRenorm1d
from rl_trainers.modules.builders import (
    EncodedQValueNet,
    action_size,
    encoded_size,
    make_actor,
    make_qvalue,
    make_value,
    observation_size,
)
from rl_trainers.modules.ddpg import (
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    ddpg_init_last_layer,
)
from rl_trainers.modules.distributional import (
    DistributionalQValueActor,
    DistributionalQValueModule,
)
from rl_trainers.modules.distributions import (
    Categorical,
    Delta,
    IndependentNormal,
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    TanhDelta,
    TanhNormal,
)
from rl_trainers.modules.exploration import (
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    EGreedyModule,
    EGreedyWrapper,
    OrnsteinUhlenbeckProcessModule,
    OrnsteinUhlenbeckProcessWrapper,
)
from rl_trainers.modules.model_builders import (
    PolicyKindError,
    activation_from_name,
    make_categorical_model,
    make_convnet,
    make_policy_model,
    make_qvalue_model,
    make_tanh_normal_model,
    make_value_model,
)
from rl_trainers.modules.models import (
    MLP,
    ConvNet,
    DuelingCnnDQNet,
    FastTanh,
    SquashDims,
)
from rl_trainers.modules.noisy import NoisyLazyLinear, NoisyLinear, reset_noise
from rl_trainers.modules.operators import (
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    SafeModule,
    SafeProbabilisticTensorDictSequential,
    SafeSequential,
)
from rl_trainers.modules.rnn import (
    GRUModule,
    LSTMModule,
    get_primers_from_module,
    recurrent_mode,
    set_recurrent_mode,
)

OneHotCategoricalDist = OneHotCategorical

__all__ = [
    "BatchRenorm1d",
    "MLP",
    "ConvNet",
    "DuelingCnnDQNet",
    "SquashDims",
    "NoisyLazyLinear",
    "NoisyLinear",
    "reset_noise",
    "FastTanh",
    "NormalParamExtractor",
    "AddStateIndependentNormalScale",
    "TanhNormal",
    "IndependentNormal",
    "Categorical",
    "OneHotCategorical",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "Delta",
    "TanhDelta",
    "ProbabilisticActor",
    "Actor",
    "ValueOperator",
    "QValueActor",
    "QValueModule",
    "DistributionalQValueActor",
    "DistributionalQValueModule",
    "SafeModule",
    "SafeSequential",
    "SafeProbabilisticModule",
    "SafeProbabilisticTensorDictSequential",
    "ActorValueOperator",
    "ActorCriticOperator",
    "ActorCriticWrapper",
    "TanhModule",
    "spec_kind",
    "EGreedyModule",
    "EGreedyWrapper",
    "AdditiveGaussianModule",
    "AdditiveGaussianWrapper",
    "OrnsteinUhlenbeckProcessModule",
    "OrnsteinUhlenbeckProcessWrapper",
    "DdpgCnnActor",
    "DdpgCnnQNet",
    "DdpgMlpActor",
    "DdpgMlpQNet",
    "ddpg_init_last_layer",
    "make_actor",
    "make_value",
    "make_qvalue",
    "observation_size",
    "action_size",
    "encoded_size",
    "EncodedQValueNet",
    "PolicyKindError",
    "activation_from_name",
    "make_convnet",
    "make_policy_model",
    "make_tanh_normal_model",
    "make_categorical_model",
    "make_value_model",
    "make_qvalue_model",
    "LSTMModule",
    "GRUModule",
    "set_recurrent_mode",
    "recurrent_mode",
    "get_primers_from_module",
]
