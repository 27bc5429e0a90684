"""``torchrl.modules.tensordict_module.probabilistic`` names."""

from rl_trainers.modules.actors import SafeProbabilisticModule
from rl_trainers.modules.operators import SafeProbabilisticTensorDictSequential

__all__ = ["SafeProbabilisticModule", "SafeProbabilisticTensorDictSequential"]
