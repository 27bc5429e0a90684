"""The networks of the DDPG paper (Lillicrap et al. 2015, "Continuous control with deep
reinforcement learning"), under torchrl's names.

The MLP versions read observation vectors, the CNN versions images (``[..., C, H, W]``).
All use ELU activations and lazy first layers (the input size is read from the first batch),
and all start their output layer near zero (:func:`ddpg_init_last_layer`), so the first
actions are small and the first Q-values close to 0. The MLP critic reads the observation
through one 400-wide layer before the action joins it, as in the paper; the CNN critic joins
the action to the image features.
"""

from __future__ import annotations

import torch
from torch import nn

from rl_trainers.modules.models import MLP, ConvNet, SquashDims

__all__ = ["DdpgCnnActor", "DdpgCnnQNet", "DdpgMlpActor", "DdpgMlpQNet", "ddpg_init_last_layer"]


def ddpg_init_last_layer(
    sequential: nn.Module,
    scale: float = 6e-4,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> None:
    """Redraws the weight and bias of the last ``nn.Linear`` of ``sequential`` uniformly
    from ``[-scale / 2, scale / 2]`` (``dtype`` and ``device`` are torchrl's arguments: the
    layer keeps its own)."""
    linears = [m for m in sequential.modules() if type(m) is nn.Linear]
    if not linears:
        raise TypeError(f"{type(sequential).__name__} has no nn.Linear layer to initialise")
    last = linears[-1]
    with torch.no_grad():
        for tensor in (last.weight, last.bias):
            if tensor is not None:
                tensor.uniform_(-scale / 2, scale / 2)


class DdpgMlpActor(nn.Module):
    """The DDPG actor: ``observation -> action`` through a 400-300 ELU MLP.

    Args:
        action_dim: size of the action.
        mlp_net_kwargs: :class:`~rl_trainers.modules.MLP` arguments that replace the
            defaults ``in_features=None, out_features=action_dim, depth=2,
            num_cells=[400, 300], activation_class=nn.ELU, bias_last_layer=True``.
        device: device of the parameters.

    The output layer starts in ``[-3e-3, 3e-3]``. Put a ``TanhDelta`` (or a ``TanhModule``)
    after it to bound the actions.

    Example:
        >>> actor = DdpgMlpActor(action_dim=4)
        >>> actor(torch.zeros(10, 6)).shape
        torch.Size([10, 4])
    """

    def __init__(
        self,
        action_dim: int,
        mlp_net_kwargs: dict | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        kwargs = {
            "in_features": None,
            "out_features": action_dim,
            "depth": 2,
            "num_cells": [400, 300],
            "activation_class": nn.ELU,
            "bias_last_layer": True,
            **(mlp_net_kwargs or {}),
        }
        self.mlp = MLP(device=device, **kwargs)
        ddpg_init_last_layer(self.mlp, 6e-3)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.mlp(observation)


class DdpgMlpQNet(nn.Module):
    """The DDPG critic: ``(observation, action) -> Q``; the observation goes through one
    layer (``mlp1``) before the action is concatenated to it (``mlp2``).

    Args:
        mlp_net_kwargs_net1: :class:`~rl_trainers.modules.MLP` arguments replacing
            ``in_features=None, out_features=400, depth=0, num_cells=[],
            activation_class=nn.ELU, bias_last_layer=True, activate_last_layer=True``.
        mlp_net_kwargs_net2: the same for the second part, replacing ``in_features=None,
            out_features=1, num_cells=[300], activation_class=nn.ELU, bias_last_layer=True``.
        device: device of the parameters.

    The output layer starts in ``[-3e-3, 3e-3]``.

    Example:
        >>> net = DdpgMlpQNet()
        >>> net(torch.zeros(1, 32), torch.zeros(1, 4)).shape
        torch.Size([1, 1])
    """

    def __init__(
        self,
        mlp_net_kwargs_net1: dict | None = None,
        mlp_net_kwargs_net2: dict | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        first = {
            "in_features": None,
            "out_features": 400,
            "depth": 0,
            "num_cells": [],
            "activation_class": nn.ELU,
            "bias_last_layer": True,
            "activate_last_layer": True,
            **(mlp_net_kwargs_net1 or {}),
        }
        second = {
            "in_features": None,
            "out_features": 1,
            "num_cells": [300],
            "activation_class": nn.ELU,
            "bias_last_layer": True,
            **(mlp_net_kwargs_net2 or {}),
        }
        self.mlp1 = MLP(device=device, **first)
        self.mlp2 = MLP(device=device, **second)
        ddpg_init_last_layer(self.mlp2, 6e-3)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp2(torch.cat([self.mlp1(observation), action], dim=-1))


def _convnet(num_cells: list[int], use_avg_pooling: bool, overrides: dict | None, device):
    """The DDPG image encoder: three ELU convolutions (8x8/4, 4x4/2, 3x3/1 padded), then the
    feature maps flattened (or averaged per channel with ``use_avg_pooling``)."""
    pooling = {
        "aggregator_class": nn.AdaptiveAvgPool2d,
        "aggregator_kwargs": {"output_size": (1, 1)},
        "squeeze_output": True,
    }
    flattening = {
        "aggregator_class": SquashDims,
        "aggregator_kwargs": {"ndims_in": 3},
        "squeeze_output": False,
    }
    kwargs = {
        "in_features": None,
        "num_cells": num_cells,
        "kernel_sizes": [8, 4, 3],
        "strides": [4, 2, 1],
        "paddings": [0, 0, 1],
        "activation_class": nn.ELU,
        "norm_class": None,
        **(pooling if use_avg_pooling else flattening),
        **(overrides or {}),
    }
    return ConvNet(device=device, **kwargs)


def _head(out_features: int, overrides: dict | None, device) -> MLP:
    """The 200-200 ELU MLP on top of the image features."""
    kwargs = {
        "in_features": None,
        "out_features": out_features,
        "depth": 2,
        "num_cells": 200,
        "activation_class": nn.ELU,
        "bias_last_layer": True,
        **(overrides or {}),
    }
    mlp = MLP(device=device, **kwargs)
    ddpg_init_last_layer(mlp, 6e-4)
    return mlp


class DdpgCnnActor(nn.Module):
    """The DDPG actor on images: ``pixels -> (action, hidden)``, ``hidden`` being the image
    features (reusable by a critic).

    Args:
        action_dim: size of the action.
        conv_net_kwargs: :class:`~rl_trainers.modules.ConvNet` arguments replacing the
            defaults (32, 64, 64 channels; kernels 8, 4, 3; strides 4, 2, 1; paddings 0, 0, 1;
            ELU; features flattened).
        mlp_net_kwargs: :class:`~rl_trainers.modules.MLP` arguments replacing the defaults
            (two 200-wide ELU layers, ``out_features=action_dim``).
        use_avg_pooling: average each feature map instead of flattening them.
        device: device of the parameters.

    The output layer starts in ``[-3e-4, 3e-4]``.

    Example:
        >>> action, hidden = DdpgCnnActor(action_dim=4)(torch.randn(10, 3, 64, 64))
        >>> action.shape, hidden.shape
        (torch.Size([10, 4]), torch.Size([10, 2304]))
    """

    def __init__(
        self,
        action_dim: int,
        conv_net_kwargs: dict | None = None,
        mlp_net_kwargs: dict | None = None,
        use_avg_pooling: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.convnet = _convnet([32, 64, 64], use_avg_pooling, conv_net_kwargs, device)
        self.mlp = _head(action_dim, mlp_net_kwargs, device)

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.convnet(observation)
        return self.mlp(hidden), hidden


class DdpgCnnQNet(nn.Module):
    """The DDPG critic on images: ``(pixels, action) -> Q``; the action joins the image
    features (averaged per channel by default) before the MLP.

    Args:
        conv_net_kwargs: :class:`~rl_trainers.modules.ConvNet` arguments replacing the
            defaults (32, 64, 128 channels; kernels 8, 4, 3; strides 4, 2, 1; paddings 0, 0,
            1; ELU; features averaged per channel).
        mlp_net_kwargs: :class:`~rl_trainers.modules.MLP` arguments replacing the defaults
            (two 200-wide ELU layers, ``out_features=1``).
        use_avg_pooling: average each feature map (default) instead of flattening them.
        device: device of the parameters.

    The output layer starts in ``[-3e-4, 3e-4]``.

    Example:
        >>> DdpgCnnQNet()(torch.zeros(1, 3, 64, 64), torch.zeros(1, 4)).shape
        torch.Size([1, 1])
    """

    def __init__(
        self,
        conv_net_kwargs: dict | None = None,
        mlp_net_kwargs: dict | None = None,
        use_avg_pooling: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.convnet = _convnet([32, 64, 128], use_avg_pooling, conv_net_kwargs, device)
        self.mlp = _head(1, mlp_net_kwargs, device)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.convnet(observation), action], dim=-1))
