"""Losses, value estimators and target-network updaters (``torchrl.objectives`` names)."""

from rl_trainers.objectives.common import (
    LossModule,
    ValueEstimators,
    buffer_copy,
    distance_loss,
    explained_variance,
)
from rl_trainers.objectives.cql import CQLLoss, DiscreteCQLLoss
from rl_trainers.objectives.crossq import CrossQLoss
from rl_trainers.objectives.decision_transformer import DTLoss, OnlineDTLoss
from rl_trainers.objectives.discrete_sac import DiscreteSACLoss
from rl_trainers.objectives.distributional_dqn import DistributionalDQNLoss
from rl_trainers.objectives.dqn import DQNLoss
from rl_trainers.objectives.ensemble import CriticEnsemble
from rl_trainers.objectives.gail import GAILLoss
from rl_trainers.objectives.iql import DiscreteIQLLoss, IQLLoss
from rl_trainers.objectives.ppo import A2CLoss, ClipPPOLoss, KLPENPPOLoss, PPOLoss, ReinforceLoss
from rl_trainers.objectives.redq import REDQLoss
from rl_trainers.objectives.sac import SACLoss
from rl_trainers.objectives.td3 import DDPGLoss, TD3Loss
from rl_trainers.objectives.td3_bc import TD3BCLoss
from rl_trainers.objectives.utils import (
    HardUpdate,
    IntervalTargetUpdate,
    SoftUpdate,
    TargetNetUpdater,
    group_optimizers,
    hold_out_net,
)
from rl_trainers.objectives.value import (
    GAE,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    VTrace,
    generalized_advantage_estimate,
    td0_return_estimate,
    td_lambda_return_estimate,
    vtrace_advantage_estimate,
)

__all__ = [
    "LossModule",
    "ValueEstimators",
    "distance_loss",
    "explained_variance",
    "buffer_copy",
    "CriticEnsemble",
    "PPOLoss",
    "ClipPPOLoss",
    "KLPENPPOLoss",
    "A2CLoss",
    "ReinforceLoss",
    "SACLoss",
    "REDQLoss",
    "CrossQLoss",
    "DiscreteSACLoss",
    "DQNLoss",
    "DistributionalDQNLoss",
    "CQLLoss",
    "DiscreteCQLLoss",
    "IQLLoss",
    "DiscreteIQLLoss",
    "TD3Loss",
    "TD3BCLoss",
    "DDPGLoss",
    "GAILLoss",
    "DTLoss",
    "OnlineDTLoss",
    "SoftUpdate",
    "HardUpdate",
    "IntervalTargetUpdate",
    "TargetNetUpdater",
    "group_optimizers",
    "hold_out_net",
    "GAE",
    "TDLambdaEstimator",
    "TD1Estimator",
    "TD0Estimator",
    "VTrace",
    "ValueEstimatorBase",
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "td0_return_estimate",
    "vtrace_advantage_estimate",
]
