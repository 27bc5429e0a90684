"""``torchrl.objectives.ddpg``: :class:`DDPGLoss` (defined with TD3 in :mod:`.td3`)."""

from rl_trainers.objectives.td3 import DDPGLoss

__all__ = ["DDPGLoss"]
