"""Noisy linear layers for exploration by parameter noise (Fortunato et al. 2018).

``y = (mu_W + sigma_W * eps_W) x + mu_b + sigma_b * eps_b`` in training mode, with factorised
Gaussian noise ``eps_W = f(eps_out) f(eps_in)^T``, ``f(x) = sign(x) sqrt(|x|)``, redrawn by
:meth:`NoisyLinear.reset_noise`; in eval mode the layer is its mean ``mu``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["NoisyLinear", "reset_noise"]


def _scaled_noise(size: int, like: torch.Tensor) -> torch.Tensor:
    x = torch.randn(size, device=like.device, dtype=like.dtype)
    return x.sign() * x.abs().sqrt()


class NoisyLinear(nn.Module):
    """A linear layer with learned, factorised Gaussian parameter noise (torchrl's
    ``NoisyLinear``); usable as ``MLP(layer_class=NoisyLinear)``.

    Args:
        in_features: input size.
        out_features: output size.
        bias: learn a (noisy) bias.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale (``sigma = std_init / sqrt(fan)``).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.1,
    ) -> None:
        super().__init__()
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.std_init = std_init
        kw = {"device": device, "dtype": dtype}
        shape = (self.out_features, self.in_features)
        self.weight_mu = nn.Parameter(torch.empty(shape, **kw))
        self.weight_sigma = nn.Parameter(torch.empty(shape, **kw))
        self.register_buffer("weight_epsilon", torch.empty(shape, **kw))
        if bias:
            self.bias_mu = nn.Parameter(torch.empty(self.out_features, **kw))
            self.bias_sigma = nn.Parameter(torch.empty(self.out_features, **kw))
            self.register_buffer("bias_epsilon", torch.empty(self.out_features, **kw))
        else:
            self.bias_mu = self.bias_sigma = self.bias_epsilon = None
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.std_init / math.sqrt(self.in_features))
            if self.bias_mu is not None:
                self.bias_mu.uniform_(-bound, bound)
                self.bias_sigma.fill_(self.std_init / math.sqrt(self.out_features))

    @torch.no_grad()
    def reset_noise(self) -> None:
        """Draws new noise (e.g. once per collected batch or optimisation step)."""
        eps_in = _scaled_noise(self.in_features, self.weight_mu)
        eps_out = _scaled_noise(self.out_features, self.weight_mu)
        self.weight_epsilon.copy_(torch.outer(eps_out, eps_in))
        if self.bias_epsilon is not None:
            self.bias_epsilon.copy_(eps_out)

    @property
    def weight(self) -> torch.Tensor:
        if self.training:
            return self.weight_mu + self.weight_sigma * self.weight_epsilon
        return self.weight_mu

    @property
    def bias(self) -> torch.Tensor | None:
        if self.bias_mu is None:
            return None
        if self.training:
            return self.bias_mu + self.bias_sigma * self.bias_epsilon
        return self.bias_mu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias_mu is not None}, std_init={self.std_init}"
        )


def reset_noise(layer: nn.Module) -> None:
    """Calls ``reset_noise()`` on ``layer`` if it has one (torchrl's helper, applied to every
    submodule with ``network.apply(reset_noise)``)."""
    if hasattr(layer, "reset_noise"):
        layer.reset_noise()
