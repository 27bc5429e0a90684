"""Network config nodes (group ``network``): sizes of hidden layers only, never in/out sizes."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class MLPConfig:
    """Hidden layers of a multi-layer perceptron; input and output sizes come from the env."""

    num_cells: list[int] = config_field([64, 64], "hidden layer widths")
    activation: str = config_field("tanh", "tanh | relu | elu | gelu | silu")


@dataclass
class ActorCriticNetworkConfig:
    """The policy and value (or Q-value) networks of an actor-critic algorithm."""

    policy: MLPConfig = config_field(MLPConfig(), "policy network hidden layers")
    value: MLPConfig = config_field(MLPConfig(), "critic network hidden layers")
    orthogonal_init: bool = config_field(True, "orthogonal weight init (PPO practice)")
