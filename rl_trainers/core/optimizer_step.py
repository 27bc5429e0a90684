"""One optimiser step of the Trainer: ``optimizer.step()``, or the lean fused-Adam step.

Where it applies (fused Adam or AdamW without hooks, amsgrad, maximize...), the step runs
torch's fused Adam kernel on the optimiser's own state without ``Optimizer.step``'s
wrappers: the fast path of :mod:`rl_trainers.fast.adam`, under the switch ``LEAN_ADAM``;
bitwise the same results as ``optimizer.step()``.
"""

from __future__ import annotations

import torch

from rl_trainers import fast
from rl_trainers.core.flat_params import FlatParameters
from rl_trainers.fast.adam import lean_fused_adam_step

__all__ = ["optimizer_step"]


def optimizer_step(optimizer: torch.optim.Optimizer, flat: FlatParameters | None = None) -> None:
    """Step ``optimizer``, through the lean fused-Adam path when it applies.

    With ``flat`` holding the optimizer's parameters (one group) and their gradients, the
    kernel runs once over the flat tensors
    (:func:`rl_trainers.fast.adam.lean_fused_adam_step`).
    """
    if not (fast.LEAN_ADAM and lean_fused_adam_step(optimizer, flat)):
        optimizer.step()
