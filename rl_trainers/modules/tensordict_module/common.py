"""``torchrl.modules.tensordict_module.common`` names."""

from rl_trainers.modules.operators import SafeModule

__all__ = ["SafeModule"]
