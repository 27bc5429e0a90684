"""torchrl's module paths of the losses, estimators and tensordict modules import here."""

from __future__ import annotations

import importlib

import pytest

import rl_trainers.modules as modules
import rl_trainers.objectives as objectives

PATHS = [
    ("objectives.sac", "DiscreteSACLoss", objectives.DiscreteSACLoss),
    ("objectives.dqn", "DistributionalDQNLoss", objectives.DistributionalDQNLoss),
    ("objectives.ddpg", "DDPGLoss", objectives.DDPGLoss),
    ("objectives.gail", "GAILLoss", objectives.GAILLoss),
    ("objectives.decision_transformer", "DTLoss", objectives.DTLoss),
    ("objectives.decision_transformer", "OnlineDTLoss", objectives.OnlineDTLoss),
    ("objectives.cql", "DiscreteCQLLoss", objectives.DiscreteCQLLoss),
    ("objectives.iql", "IQLLoss", objectives.IQLLoss),
    ("objectives.iql", "DiscreteIQLLoss", objectives.DiscreteIQLLoss),
    ("objectives.a2c", "A2CLoss", objectives.A2CLoss),
    ("objectives.reinforce", "ReinforceLoss", objectives.ReinforceLoss),
    ("objectives.utils", "ValueEstimators", objectives.ValueEstimators),
    ("objectives.utils", "distance_loss", objectives.distance_loss),
    ("objectives.value.advantages", "GAE", objectives.GAE),
    ("objectives.value.advantages", "TDLambdaEstimator", objectives.TDLambdaEstimator),
    ("objectives.value", "VTrace", objectives.VTrace),
    ("objectives.value.advantages", "VTrace", objectives.VTrace),
    (
        "objectives.value.functional",
        "vtrace_advantage_estimate",
        objectives.vtrace_advantage_estimate,
    ),
    (
        "objectives.value.functional",
        "generalized_advantage_estimate",
        objectives.generalized_advantage_estimate,
    ),
    ("modules.tensordict_module", "ProbabilisticActor", modules.ProbabilisticActor),
    ("modules.tensordict_module.actors", "QValueActor", modules.QValueActor),
    ("modules.tensordict_module.actors", "ActorCriticWrapper", modules.ActorCriticWrapper),
    ("modules.tensordict_module.common", "SafeModule", modules.SafeModule),
    ("modules.tensordict_module.exploration", "EGreedyModule", modules.EGreedyModule),
    (
        "modules.tensordict_module.probabilistic",
        "SafeProbabilisticModule",
        modules.SafeProbabilisticModule,
    ),
    ("modules.tensordict_module.sequence", "SafeSequential", modules.SafeSequential),
    ("modules", "TruncatedNormal", modules.TruncatedNormal),
    ("modules.distributions", "TruncatedNormal", modules.TruncatedNormal),
    ("modules", "OneHotOrdinal", modules.OneHotOrdinal),
    ("modules.distributions", "OneHotOrdinal", modules.OneHotOrdinal),
    ("modules", "Ordinal", modules.Ordinal),
    ("modules.distributions", "Ordinal", modules.Ordinal),
    ("modules.distributions.continuous", "TanhNormal", modules.TanhNormal),
    ("modules.distributions.continuous", "IndependentNormal", modules.IndependentNormal),
    ("modules.distributions.continuous", "Delta", modules.Delta),
    ("modules.distributions.continuous", "TanhDelta", modules.TanhDelta),
    ("modules.distributions.continuous", "TruncatedNormal", modules.TruncatedNormal),
    ("modules.distributions.discrete", "OneHotCategorical", modules.OneHotCategorical),
    ("modules.distributions.discrete", "MaskedCategorical", modules.MaskedCategorical),
    (
        "modules.distributions.discrete",
        "MaskedOneHotCategorical",
        modules.MaskedOneHotCategorical,
    ),
    ("modules.distributions.discrete", "Ordinal", modules.Ordinal),
    ("modules.distributions.discrete", "OneHotOrdinal", modules.OneHotOrdinal),
    ("modules.distributions.truncated_normal", "TruncatedNormal", modules.TruncatedNormal),
]


@pytest.mark.parametrize(("path", "name", "expected"), PATHS)
def test_torchrl_path_gives_the_same_object(path, name, expected):
    module = importlib.import_module(f"rl_trainers.{path}")
    assert getattr(module, name) is expected


def test_unknown_name_still_raises_attribute_error():
    sac = importlib.import_module("rl_trainers.objectives.sac")
    with pytest.raises(AttributeError, match="REDQLoss"):
        sac.REDQLoss  # noqa: B018
