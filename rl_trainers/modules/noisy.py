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
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter

__all__ = ["NoisyLazyLinear", "NoisyLinear", "reset_noise"]


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


class NoisyLazyLinear(LazyModuleMixin, NoisyLinear):
    """:class:`NoisyLinear` whose ``in_features`` is read from its first input (torchrl's
    ``NoisyLazyLinear``, as ``nn.LazyLinear`` is to ``nn.Linear``).

    Until that first call (or a ``load_state_dict``) the parameters are uninitialised,
    ``weight``/``bias`` are None and :meth:`reset_noise` does nothing; the call draws the
    parameters and the noise, and the layer then behaves as a
    ``NoisyLinear(in_features, out_features)``. ``MLP(layer_class=NoisyLinear)`` without
    ``in_features`` builds these, as torchrl's MLP does.

    Args:
        out_features: output size.
        bias: learn a (noisy) bias.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale (``sigma = std_init / sqrt(fan)``).

    Example:
        >>> layer = NoisyLazyLinear(4)
        >>> layer(torch.randn(8, 3)).shape
        torch.Size([8, 4])
        >>> layer.in_features, layer.weight_mu.shape
        (3, torch.Size([4, 3]))
    """

    def __init__(
        self,
        out_features: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.1,
    ) -> None:
        super().__init__(0, 0, bias=False, device=device, dtype=dtype, std_init=std_init)
        self.out_features = int(out_features)
        kw = {"device": device, "dtype": dtype}
        self.weight_mu = UninitializedParameter(**kw)
        self.weight_sigma = UninitializedParameter(**kw)
        # the noise buffers stay plain (empty) tensors until materialised, so that an
        # uninitialised layer can be deep-copied (e.g. into a loss's target network)
        self.weight_epsilon = torch.empty(0, **kw)
        if bias:
            del self.bias_mu, self.bias_sigma, self.bias_epsilon  # NoisyLinear's None
            self.bias_mu = UninitializedParameter(**kw)
            self.bias_sigma = UninitializedParameter(**kw)
            self.register_buffer("bias_epsilon", torch.empty(0, **kw))

    def _ready(self) -> bool:
        if self.has_uninitialized_params() or self.weight_mu.numel() == 0:
            return False  # before the first call (NoisyLinear.__init__ sees 0 features)
        self.in_features = int(self.weight_mu.shape[-1])  # also after a load_state_dict
        return True

    def reset_parameters(self) -> None:
        if self._ready():
            super().reset_parameters()

    def reset_noise(self) -> None:
        """Draws new noise; a no-op before the first call (nothing to draw yet)."""
        if self._ready():
            super().reset_noise()

    def initialize_parameters(self, input: torch.Tensor) -> None:  # noqa: A002 (torch's name)
        """Materialise the parameters from the first input's last dim (LazyModuleMixin)."""
        if not self.has_uninitialized_params():
            return
        self.in_features = int(input.shape[-1])
        shape = (self.out_features, self.in_features)
        with torch.no_grad():
            self.weight_mu.materialize(shape)
            self.weight_sigma.materialize(shape)
            if self.bias_mu is not None:
                self.bias_mu.materialize((self.out_features,))
                self.bias_sigma.materialize((self.out_features,))
        self._size_noise({"weight_epsilon": shape, "bias_epsilon": (self.out_features,)})
        self.reset_parameters()
        self.reset_noise()

    def _size_noise(self, shapes: dict[str, tuple]) -> None:
        """Give the (still empty) noise buffers their shapes."""
        for name, shape in shapes.items():
            buf = self._buffers.get(name)
            if buf is not None and buf.numel() == 0 and torch.Size(shape).numel():
                self._buffers[name] = torch.empty(shape, device=buf.device, dtype=buf.dtype)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
        shapes = {
            name: tuple(state_dict[prefix + name].shape)
            for name in ("weight_epsilon", "bias_epsilon")
            if prefix + name in state_dict
        }
        self._size_noise(shapes)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._ready()  # in_features from the loaded weights

    @property
    def weight(self) -> torch.Tensor | None:
        return super().weight if self._ready() else None

    @property
    def bias(self) -> torch.Tensor | None:
        return super().bias if self._ready() else None


def reset_noise(layer: nn.Module) -> None:
    """Calls ``reset_noise()`` on ``layer`` if it has one (torchrl's helper, applied to every
    submodule with ``network.apply(reset_noise)``)."""
    if hasattr(layer, "reset_noise"):
        layer.reset_noise()
