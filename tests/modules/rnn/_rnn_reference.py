"""Hand-run references for the recurrent-module tests: torch's nn.LSTM/nn.GRU applied one
trajectory at a time (the one-thread setting is the shared ``one_thread`` fixture, made
automatic for this directory by its conftest)."""

from __future__ import annotations

import torch
from torch import nn


def run_by_hand(rnn: nn.RNNBase, x: torch.Tensor, is_init: torch.Tensor, h0: list[torch.Tensor]):
    """Step ``rnn`` through ``x`` ``[B, T, F]`` one step at a time, zeroing the state where
    ``is_init`` ``[B, T]``; ``h0`` holds ``[B, L, H]`` states at ``t = 0``. Returns the outputs
    ``[B, T, H]`` and, per state kind, the states after every step ``[B, T, L, H]``."""
    B, T = is_init.shape
    ys, after = [], []
    with torch.no_grad():
        for b in range(B):
            state = [h[b].clone() for h in h0]
            row_y, row_states = [], []
            for t in range(T):
                if is_init[b, t]:
                    state = [torch.zeros_like(s) for s in state]
                hidden = tuple(s.unsqueeze(1) for s in state)  # [L, 1, H]
                if isinstance(rnn, nn.LSTM):
                    y, new = rnn(x[b, t].reshape(1, 1, -1), hidden)
                else:
                    y, new = rnn(x[b, t].reshape(1, 1, -1), hidden[0])
                    new = (new,)
                state = [s.squeeze(1) for s in new]
                row_y.append(y.reshape(-1))
                row_states.append([s.clone() for s in state])
            ys.append(torch.stack(row_y))
            after.append([torch.stack(kind) for kind in zip(*row_states)])
    return torch.stack(ys), [torch.stack(kind) for kind in zip(*after)]
