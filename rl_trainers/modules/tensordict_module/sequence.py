"""``torchrl.modules.tensordict_module.sequence`` names."""

from rl_trainers.modules.operators import SafeSequential

__all__ = ["SafeSequential"]
