"""``torchrl.objectives.a2c``: :class:`A2CLoss` (defined with the PPO losses in :mod:`.ppo`)."""

from rl_trainers.objectives.ppo import A2CLoss

__all__ = ["A2CLoss"]
