"""Network and model config nodes (groups ``network`` and ``model/policy``).

A network node describes hidden layers (and an optional convolutional encoder) only; a
model node names the builder that turns the env's specs and the network node into a
policy or a critic. No input or output size and no action bound appears in either.
"""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class MLPConfig:
    """Hidden layers of a multi-layer perceptron; input and output sizes come from the env."""

    num_cells: list[int] = config_field([64, 64], "hidden layer widths")
    activation: str = config_field("tanh", "tanh | relu | elu | gelu | silu | leaky_relu")


@dataclass
class ConvNetConfig:
    """A convolutional encoder of image observations (input channels come from the env)."""

    _target_: str = "rl_trainers.modules.make_convnet"
    num_cells: list[int] = config_field([32, 64, 64], "output channels of each conv layer")
    kernel_sizes: list[int] = config_field([8, 4, 3], "kernel size of each conv layer")
    strides: list[int] = config_field([4, 2, 1], "stride of each conv layer")
    activation: str = config_field("relu", "activation after each conv layer")


@dataclass
class ActorCriticNetworkConfig:
    """The policy and value (or Q-value) networks of an actor-critic algorithm (``mlp``)."""

    policy: MLPConfig = config_field(MLPConfig(), "policy network hidden layers")
    value: MLPConfig = config_field(MLPConfig(), "critic network hidden layers")
    orthogonal_init: bool = config_field(True, "orthogonal weight init (PPO practice)")
    encoder: ConvNetConfig | None = config_field(
        None, "ConvNet in front of both MLPs, reading 'pixels' (None: MLPs read 'observation')"
    )


@dataclass
class ConvActorCriticNetworkConfig(ActorCriticNetworkConfig):
    """The same networks with a Nature-DQN ConvNet encoder in front (``convnet``)."""

    encoder: ConvNetConfig | None = config_field(
        ConvNetConfig(),
        "ConvNet in front of both MLPs, reading 'pixels' (None: MLPs read 'observation')",
    )


@dataclass
class PolicyModelConfig:
    """The policy the env's actions call for (``auto``): categorical if discrete, TanhNormal
    within the env's bounds if bounded continuous."""

    _target_: str = "rl_trainers.modules.make_policy_model"
    return_log_prob: bool = config_field(True, "write 'sample_log_prob' with each action")


@dataclass
class TanhNormalModelConfig(PolicyModelConfig):
    """A TanhNormal policy for continuous actions (``tanh_normal``)."""

    _target_: str = "rl_trainers.modules.make_tanh_normal_model"
    state_dependent_scale: bool = config_field(
        True, "the network predicts the scale (false: a learned state-independent vector)"
    )
    log_std_init: float | None = config_field(
        None,
        "initial log of the learned scale (SB3's log_std_init); only with "
        "state_dependent_scale=false (null: 0, a scale of 1)",
    )
    scale_mapping: str = config_field(
        "biased_softplus_1.0",
        "how the network's output x becomes the scale: biased_softplus_1.0 (torchrl's: "
        "softplus, 1 at x=0, at least 0.01), clamped_exp (SB3's SAC: exp(clamp(x, -20, 2))), "
        "exp, softplus, expln; only with a state-dependent scale",
    )
    use_sde: bool = config_field(
        False,
        "explore with gSDE (SB3's use_sde; PPO, A2C, PG): noise linear in the last hidden "
        "layer, an unsquashed Gaussian whose actions the env clips to its bounds; needs "
        "state_dependent_scale=false",
    )
    sde_sample_freq: int = config_field(
        -1, "with use_sde: resample the noise every this many env steps (-1: once per batch)"
    )


@dataclass
class NormalModelConfig(PolicyModelConfig):
    """A diagonal Gaussian policy with a learned state-independent log-std, unsquashed; the
    env clips its actions to the bounds (``normal``: SB3's and CleanRL's PPO)."""

    _target_: str = "rl_trainers.modules.make_normal_model"
    log_std_init: float = config_field(0.0, "initial log of the learned scale (0: a scale of 1)")


@dataclass
class CategoricalModelConfig(PolicyModelConfig):
    """A categorical policy for discrete actions (``categorical``)."""

    _target_: str = "rl_trainers.modules.make_categorical_model"


@dataclass
class ValueModelConfig:
    """A state-value critic V(s) with the ``network.value`` hidden layers."""

    _target_: str = "rl_trainers.modules.make_value_model"


@dataclass
class QValueModelConfig:
    """A Q critic Q(s, a) with the ``network.value`` hidden layers."""

    _target_: str = "rl_trainers.modules.make_qvalue_model"


@dataclass
class ActorValueModelConfig:
    """PPO's models: a policy and a state-value critic."""

    policy: PolicyModelConfig = config_field(PolicyModelConfig(), "policy (group model/policy)")
    critic: ValueModelConfig = config_field(ValueModelConfig(), "state-value critic V(s)")


@dataclass
class ActorQValueModelConfig:
    """SAC's models: a policy and a Q critic (copied into twin critics by the loss)."""

    policy: PolicyModelConfig = config_field(PolicyModelConfig(), "policy (group model/policy)")
    critic: QValueModelConfig = config_field(QValueModelConfig(), "Q critic Q(s, a)")


@dataclass
class DQNModelConfig:
    """DQN's model: a Q-value actor, greedy over ``Q(s, .)`` (the ``network.value`` layers)."""

    qvalue: QValueModelConfig = config_field(
        QValueModelConfig(), "Q-network: one output per discrete action (network.value layers)"
    )


@dataclass
class DeterministicModelConfig:
    """A deterministic actor mu(s) with the ``network.policy`` layers, tanh-squashed into
    the env's action bounds (TD3, DDPG)."""

    _target_: str = "rl_trainers.modules.make_deterministic_model"


@dataclass
class DeterministicActorQValueModelConfig:
    """TD3's and DDPG's models: a deterministic actor and a Q critic (TD3's loss copies it
    into ``loss.num_qvalue_nets`` critics)."""

    actor: DeterministicModelConfig = config_field(
        DeterministicModelConfig(), "deterministic actor mu(s) (network.policy layers)"
    )
    critic: QValueModelConfig = config_field(
        QValueModelConfig(), "Q critic Q(s, a) (network.value layers)"
    )
