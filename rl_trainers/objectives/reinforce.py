"""``torchrl.objectives.reinforce``: :class:`ReinforceLoss` (defined in :mod:`.ppo`)."""

from rl_trainers.objectives.ppo import ReinforceLoss

__all__ = ["ReinforceLoss"]
