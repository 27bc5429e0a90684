"""``torchrl.modules.utils`` names."""

from rl_trainers.modules.rnn import get_primers_from_module

__all__ = ["get_primers_from_module"]
