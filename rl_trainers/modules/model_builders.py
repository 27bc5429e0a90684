"""Model builders the Hydra ``model`` nodes target: env specs + a network description -> module.

Each builder receives the env's observation and action specs and the ``network`` node
(``policy``/``value`` hidden layers, an optional ``encoder``) at build time, so no input or
output size and no action bound is ever configured. With an encoder (a :class:`ConvNet`
description) the model reads ``"pixels"`` and puts the ConvNet in front of its MLP head;
otherwise it reads ``"observation"``.

Example:
    >>> network = {"policy": {"num_cells": [64, 64], "activation": "tanh"},
    ...            "value": {"num_cells": [64, 64], "activation": "tanh"}}
    >>> actor = make_policy_model(env.observation_spec, env.action_spec, network)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from torch import nn

from rl_trainers.errors import ConfigError
from rl_trainers.modules.actors import spec_kind
from rl_trainers.modules.builders import (
    DEFAULT_SCALE_MAPPING,
    SCALE_MAPPINGS,
    make_actor,
    make_qvalue,
    make_value,
    scale_extractor,
)
from rl_trainers.modules.gsde import make_gsde_actor
from rl_trainers.modules.models import ConvNet

__all__ = [
    "ACTIVATIONS",
    "PolicyKindError",
    "activation_from_name",
    "make_categorical_model",
    "make_convnet",
    "make_deterministic_model",
    "make_policy_model",
    "make_qvalue_model",
    "make_normal_model",
    "make_tanh_normal_model",
    "make_value_model",
]

#: Activation names a network description may use.
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "leaky_relu": nn.LeakyReLU,
}

_DISCRETE = ("one_hot", "categorical")


def activation_from_name(name: str) -> type[nn.Module]:
    """The ``torch.nn`` activation class called ``name`` (``tanh``, ``relu``...)."""
    try:
        return ACTIVATIONS[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; one of {sorted(ACTIVATIONS)}") from None


class PolicyKindError(ValueError):
    """A policy kind that cannot produce the env's actions.

    Attributes:
        kind: the requested kind (``"tanh_normal"``, ``"categorical"``).
        actions: what the env's actions are (``"discrete"``, ``"continuous"``).
        fits: the kinds that fit.
    """

    def __init__(self, kind: str, actions: str, fits: str) -> None:
        self.kind, self.actions, self.fits = kind, actions, fits
        super().__init__(f"a {kind} policy cannot act in an env with {actions} actions; use {fits}")


def make_convnet(
    num_cells: Sequence[int] = (32, 64, 64),
    kernel_sizes: Sequence[int] | int = (8, 4, 3),
    strides: Sequence[int] | int = (4, 2, 1),
    activation: str = "relu",
    in_features: int | None = None,
) -> ConvNet:
    """A :class:`ConvNet` (flattened output) described by plain values.

    Args:
        num_cells: output channels of each conv layer.
        kernel_sizes: kernel size of each layer (or one for all).
        strides: stride of each layer (or one for all).
        activation: activation name after each conv (see :data:`ACTIVATIONS`).
        in_features: input channels (``None``: inferred on the first call).
    """
    return ConvNet(
        in_features=in_features,
        num_cells=[int(c) for c in num_cells],
        kernel_sizes=list(kernel_sizes) if isinstance(kernel_sizes, Sequence) else kernel_sizes,
        strides=list(strides) if isinstance(strides, Sequence) else strides,
        activation_class=activation_from_name(activation),
    )


def _node(node: Any) -> Mapping:
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.asdict(node)
    return node


def _head(observation_spec, network: Any, which: str) -> dict[str, Any]:
    """``make_actor``/``make_value``/``make_qvalue`` arguments for ``network[which]``."""
    network = _node(network)
    mlp = network[which]
    encoder_node = network.get("encoder")
    kwargs: dict[str, Any] = {
        "num_cells": [int(c) for c in mlp["num_cells"]],
        "activation": activation_from_name(mlp["activation"]),
    }
    if encoder_node is not None:
        kwargs["in_key"] = "pixels"
        channels = _pixel_channels(observation_spec)
        fields = {k: v for k, v in _node(encoder_node).items() if not str(k).startswith("_")}
        kwargs["encoder"] = make_convnet(**fields, in_features=channels)
    return kwargs


def _pixel_channels(observation_spec) -> int:
    """Channels of the ``"pixels"`` images ``[*B, C, H, W]`` the env observes."""
    keys = getattr(observation_spec, "keys", None)
    if not callable(keys) or "pixels" not in list(keys()):
        raise ValueError(
            "the network's convolutional encoder reads 'pixels', which the env does not "
            "observe: build the env with from_pixels=True"
        )
    return int(observation_spec["pixels"].shape[-3])


def _actions(action_spec) -> str:
    return "discrete" if spec_kind(action_spec) in _DISCRETE else "continuous"


def make_policy_model(observation_spec, action_spec, network: Any, return_log_prob: bool = True):
    """The policy the env's actions call for: categorical for discrete actions, TanhNormal
    within the spec's bounds for bounded continuous ones (a Gaussian if unbounded).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec.
        network: the network description (``policy`` hidden layers, optional ``encoder``).
        return_log_prob: write ``"sample_log_prob"`` with each action.
    """
    return make_actor(
        observation_spec,
        action_spec,
        return_log_prob=return_log_prob,
        **_head(observation_spec, network, "policy"),
    )


def make_tanh_normal_model(
    observation_spec,
    action_spec,
    network: Any,
    return_log_prob: bool = True,
    state_dependent_scale: bool = True,
    log_std_init: float | None = None,
    use_sde: bool = False,
    sde_sample_freq: int = -1,
    scale_mapping: str = DEFAULT_SCALE_MAPPING,
):
    """A TanhNormal policy (continuous actions; squashed into the spec's bounds if bounded),
    or with ``use_sde`` an unsquashed Gaussian exploring with gSDE
    (:mod:`~rl_trainers.modules.gsde`; the env clips its actions to the bounds).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec (continuous).
        network: the network description (``policy`` hidden layers, optional ``encoder``).
        return_log_prob: write ``"sample_log_prob"`` with each action.
        state_dependent_scale: the network predicts the scale (else a learned vector).
        log_std_init: initial log of the learned scale vector (only with
            ``state_dependent_scale=False``; ``None``: 0, a scale of 1), or with
            ``use_sde`` of every entry of the ``[latent, action]`` gSDE scale matrix.
        use_sde: explore with gSDE (needs ``state_dependent_scale=False``).
        sde_sample_freq: with ``use_sde``, resample the noise every this many env steps
            (-1: only at the start of each collected batch).
        scale_mapping: how the network's output becomes a state-dependent scale
            (:func:`~rl_trainers.modules.builders.scale_extractor`): ``"biased_softplus_1.0"``
            (torchrl's) or ``"clamped_exp"`` (SB3's SAC), among others.
    """
    if _actions(action_spec) == "discrete":
        raise PolicyKindError("tanh_normal", "discrete", "categorical or auto")
    if scale_mapping != DEFAULT_SCALE_MAPPING and (use_sde or not state_dependent_scale):
        raise ConfigError(
            "model.policy.scale_mapping",
            scale_mapping,
            "only used with a state-dependent scale (model.policy.state_dependent_scale=true, "
            "model.policy.use_sde=false)",
        )
    try:
        scale_extractor(scale_mapping)
    except ValueError:
        raise ConfigError(
            "model.policy.scale_mapping", scale_mapping, f"use {SCALE_MAPPINGS}"
        ) from None
    if use_sde and state_dependent_scale:
        raise ConfigError(
            "model.policy.use_sde",
            True,
            "needs model.policy.state_dependent_scale=false (gSDE's scale is a learned "
            "matrix over the policy's last hidden layer, not a network output)",
        )
    if not use_sde and sde_sample_freq != -1:
        raise ConfigError(
            "model.policy.sde_sample_freq",
            sde_sample_freq,
            "only used with model.policy.use_sde=true",
        )
    if use_sde:
        return make_gsde_actor(
            observation_spec,
            action_spec,
            return_log_prob=return_log_prob,
            log_std_init=0.0 if log_std_init is None else log_std_init,
            sample_freq=sde_sample_freq,
            **_head(observation_spec, network, "policy"),
        )
    if log_std_init is not None and state_dependent_scale:
        raise ConfigError(
            "model.policy.log_std_init",
            log_std_init,
            "only used with model.policy.state_dependent_scale=false "
            "(a state-dependent scale is predicted by the network)",
        )
    return make_actor(
        observation_spec,
        action_spec,
        return_log_prob=return_log_prob,
        state_dependent_scale=state_dependent_scale,
        log_std_init=0.0 if log_std_init is None else log_std_init,
        scale_mapping=scale_mapping,
        tanh_unbounded=True,
        **_head(observation_spec, network, "policy"),
    )


def make_normal_model(
    observation_spec,
    action_spec,
    network: Any,
    return_log_prob: bool = True,
    log_std_init: float = 0.0,
):
    """A diagonal Gaussian policy with a learned state-independent log-std, unsquashed: the
    env clips its actions to the bounds (the parametrisation of SB3's and CleanRL's PPO).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec (continuous).
        network: the network description (``policy`` hidden layers, optional ``encoder``).
        return_log_prob: write ``"sample_log_prob"`` with each action.
        log_std_init: initial log of the learned scale vector (0: a scale of 1).
    """
    if _actions(action_spec) == "discrete":
        raise PolicyKindError("normal", "discrete", "categorical or auto")
    return make_actor(
        observation_spec,
        action_spec,
        return_log_prob=return_log_prob,
        state_dependent_scale=False,
        log_std_init=float(log_std_init),
        squash=False,
        **_head(observation_spec, network, "policy"),
    )


def make_categorical_model(
    observation_spec, action_spec, network: Any, return_log_prob: bool = True
):
    """A categorical policy over the env's discrete actions (one-hot or index actions).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec (discrete).
        network: the network description (``policy`` hidden layers, optional ``encoder``).
        return_log_prob: write ``"sample_log_prob"`` with each action.
    """
    if _actions(action_spec) == "continuous":
        raise PolicyKindError("categorical", "continuous", "tanh_normal or auto")
    return make_actor(
        observation_spec,
        action_spec,
        return_log_prob=return_log_prob,
        **_head(observation_spec, network, "policy"),
    )


def make_deterministic_model(observation_spec, action_spec, network: Any):
    """A deterministic actor ``mu(s)`` (TD3, DDPG) with the ``policy`` hidden layers, its
    output squashed by tanh into the spec's bounds when they are finite.

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec (continuous).
        network: the network description (``policy`` hidden layers, optional ``encoder``).
    """
    if _actions(action_spec) == "discrete":
        raise PolicyKindError("deterministic", "discrete", "a Q-value actor (DQN)")
    return make_actor(
        observation_spec,
        action_spec,
        deterministic=True,
        **_head(observation_spec, network, "policy"),
    )


def make_value_model(observation_spec, action_spec, network: Any):
    """A state-value critic ``V(s)`` (``"state_value"``) with the ``value`` hidden layers.

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec (unused: every model builder receives it).
        network: the network description (``value`` hidden layers, optional ``encoder``).
    """
    return make_value(observation_spec, **_head(observation_spec, network, "value"))


def make_qvalue_model(observation_spec, action_spec, network: Any):
    """A Q critic with the ``value`` hidden layers: ``Q(s, a)`` for continuous actions
    (encoded features concatenated with the action), action values for discrete ones.

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec.
        network: the network description (``value`` hidden layers, optional ``encoder``).
    """
    return make_qvalue(observation_spec, action_spec, **_head(observation_spec, network, "value"))
