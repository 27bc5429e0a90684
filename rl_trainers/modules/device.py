"""Where a module's tensors live."""

from __future__ import annotations

import itertools
from typing import Any

import torch


def module_device(module: Any, default: Any = None) -> Any:
    """The device of ``module``'s first parameter, else of its first buffer; ``default``
    for a module without any, or for anything that is not an ``nn.Module``."""
    if isinstance(module, torch.nn.Module):
        for tensor in itertools.chain(module.parameters(), module.buffers()):
            return tensor.device
    return default
