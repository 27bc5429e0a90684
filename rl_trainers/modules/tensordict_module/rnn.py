"""``torchrl.modules.tensordict_module.rnn`` names."""

from rl_trainers.modules.rnn import (
    GRUModule,
    LSTMModule,
    get_primers_from_module,
    recurrent_mode,
    set_recurrent_mode,
)

__all__ = [
    "GRUModule",
    "LSTMModule",
    "get_primers_from_module",
    "recurrent_mode",
    "set_recurrent_mode",
]
