"""Builders that read every size from the specs, so no user types ``in_features``.

Each builder optionally puts an ``encoder`` (e.g. a :class:`ConvNet` over ``"pixels"``) in
front of its MLP head; the head's input size is then measured by running the encoder once on
a zero observation of the spec's shape.

Example:
    >>> actor = make_actor(env.observation_spec, env.action_spec)       # doctest: +SKIP
    >>> critic = make_value(env.observation_spec)                      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict.nn import AddStateIndependentNormalScale, NormalParamExtractor, TensorDictModule
from torch import nn

from rl_trainers.modules.actors import (
    Actor,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    ValueOperator,
    spec_kind,
)
from rl_trainers.modules.device import module_device
from rl_trainers.modules.distributions import (
    Categorical,
    IndependentNormal,
    OneHotCategorical,
    TanhNormal,
)
from rl_trainers.modules.models import MLP

__all__ = [
    "ClampedLogStdExtractor",
    "make_actor",
    "make_value",
    "make_qvalue",
    "observation_size",
    "action_size",
    "encoded_size",
    "EncodedQValueNet",
]


def observation_size(observation_spec, key: str = "observation") -> int | None:
    """Returns the last-dim size of the observation entry ``key`` (``None`` if unknown).

    Args:
        observation_spec: a Composite (looked up at ``key``) or a leaf spec, or None.
        key: the observation key inside a Composite.
    """
    if observation_spec is None:
        return None
    spec = observation_spec
    if hasattr(spec, "keys") and callable(spec.keys):
        if key not in list(spec.keys()):
            raise KeyError(f"observation key {key!r} not in the spec; keys: {list(spec.keys())}")
        spec = spec[key]
    shape = tuple(spec.shape)
    if len(shape) == 0:
        return 1
    return int(shape[-1])


def encoded_size(encoder: nn.Module, observation_spec, key: str = "pixels") -> int:
    """The feature size ``encoder`` gives for one observation ``key`` of the spec.

    The encoder runs once, without gradients, on zeros shaped like one (unbatched) image
    ``[C, H, W]``: the last three dims of the spec's shape.
    """
    spec = observation_spec
    if hasattr(spec, "keys") and callable(spec.keys):
        if key not in list(spec.keys()):
            raise KeyError(
                f"the encoder reads {key!r}, which the env does not observe; keys: "
                f"{list(spec.keys())} (build the env with from_pixels=True)"
            )
        spec = spec[key]
    shape = tuple(spec.shape)
    if len(shape) < 3:
        raise ValueError(f"the encoder needs images [C, H, W] under {key!r}, got shape {shape}")
    with torch.no_grad():
        out = encoder(torch.zeros(1, *shape[-3:], device=module_device(encoder)))
    return int(out.shape[-1])


def _head_input(observation_spec, in_key: str, encoder: nn.Module | None) -> int | None:
    if encoder is None:
        return observation_size(observation_spec, in_key)
    return encoded_size(encoder, observation_spec, in_key)


def _with_encoder(encoder: nn.Module | None, head: nn.Module) -> nn.Module:
    return head if encoder is None else nn.Sequential(encoder, head)


class EncodedQValueNet(nn.Module):
    """``Q(s, a)`` from an encoded observation: ``head(cat(encoder(obs), action))``.

    Args:
        encoder: maps observations ``[*B, ...]`` to features ``[*B, F]``.
        head: maps ``[*B, F + action_dim]`` to ``[*B, 1]``.
    """

    def __init__(self, encoder: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.encoder(observation), action], dim=-1))


def action_size(action_spec) -> int:
    """Number of network outputs needed per action dimension set (n for discrete, d otherwise)."""
    kind = spec_kind(action_spec)
    if kind in ("one_hot", "categorical"):
        return int(action_spec.n)
    shape = tuple(action_spec.shape)
    return int(shape[-1]) if shape else 1


def _action_bounds(action_spec) -> tuple[torch.Tensor, torch.Tensor]:
    """The bounds of one action vector: a batched env's spec repeats them per sub-env."""
    low, high = action_spec.low, action_spec.high
    return low.reshape(-1, low.shape[-1])[0].clone(), high.reshape(-1, high.shape[-1])[0].clone()


def state_independent_gaussian_net(net: nn.Module) -> tuple[MLP, nn.Module] | None:
    """``(mlp, scale module)`` when ``net`` is exactly ``nn.Sequential(MLP,
    AddStateIndependentNormalScale)`` with the MLP's output not reshaped: the network
    :func:`make_actor` builds for SB3's Gaussian policy (``state_dependent_scale=False``),
    which the fast paths run as the MLP's maths and the scale; else None (exact types: a
    subclass may compute otherwise)."""
    if type(net) is not nn.Sequential or len(net) != 2:
        return None
    mlp, head = net
    if type(mlp) is not MLP or mlp.out_shape is not None:
        return None
    if type(head) is not AddStateIndependentNormalScale:
        return None
    return mlp, head


#: ``make_actor``'s ``scale_mapping`` for :class:`ClampedLogStdExtractor` (SB3's SAC actor);
#: any other name is a tensordict mapping for ``NormalParamExtractor``.
CLAMPED_EXP = "clamped_exp"
#: torchrl's and tensordict's default: ``softplus(x + 0.525) + 0.01``, 1 at ``x = 0``
DEFAULT_SCALE_MAPPING = "biased_softplus_1.0"
#: the names :func:`scale_extractor` takes, for messages
SCALE_MAPPINGS = (
    "clamped_exp (SB3's SAC: exp(clamp(x, -20, 2))), biased_softplus_<bias>[_<min>] "
    "(torchrl's default: biased_softplus_1.0), exp, softplus or expln"
)


class ClampedLogStdExtractor(nn.Module):
    """Splits the last dim of its input into a location and a log-std, and returns
    ``(loc, exp(clamp(log_std, log_std_min, log_std_max)))``: the scale of
    Stable-Baselines3's SAC actor (log-std clipped to ``[-20, 2]``), where tensordict's
    :class:`~tensordict.nn.NormalParamExtractor` maps it with a biased softplus (at least
    0.01).

    Args:
        log_std_min: the lowest log-std.
        log_std_max: the highest log-std.
    """

    def __init__(self, log_std_min: float = -20.0, log_std_max: float = 2.0) -> None:
        super().__init__()
        if not log_std_min < log_std_max:
            raise ValueError(
                f"log_std_min ({log_std_min}) must be below log_std_max ({log_std_max})"
            )
        self.log_std_min = float(log_std_min)
        self.log_std_max = float(log_std_max)

    def forward(self, tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc, log_std = tensor.chunk(2, -1)
        return loc, log_std.clamp(self.log_std_min, self.log_std_max).exp()

    def extra_repr(self) -> str:
        return f"log_std_min={self.log_std_min}, log_std_max={self.log_std_max}"


def scale_extractor(scale_mapping: str) -> nn.Module:
    """The module splitting a network's ``[..., 2A]`` output into ``(loc, scale)``:
    :class:`ClampedLogStdExtractor` for ``"clamped_exp"``, else tensordict's
    ``NormalParamExtractor(scale_mapping)`` (``"biased_softplus_1.0"``, ``"exp"``, ...).

    Raises:
        ValueError: for a name neither knows, listing the names.
    """
    if scale_mapping == CLAMPED_EXP:
        return ClampedLogStdExtractor()
    try:
        return NormalParamExtractor(scale_mapping=scale_mapping)
    except (NotImplementedError, ValueError):
        raise ValueError(f"unknown scale mapping {scale_mapping!r}: use {SCALE_MAPPINGS}") from None


def make_actor(
    observation_spec,
    action_spec,
    num_cells: Sequence[int] = (64, 64),
    activation: type[nn.Module] = nn.Tanh,
    *,
    in_key: str = "observation",
    return_log_prob: bool = True,
    deterministic: bool = False,
    state_dependent_scale: bool = True,
    log_std_init: float = 0.0,
    scale_mapping: str = DEFAULT_SCALE_MAPPING,
    tanh_unbounded: bool = False,
    squash: bool = True,
    encoder: nn.Module | None = None,
) -> TensorDictModule | ProbabilisticActor:
    """Builds a policy whose sizes and bounds come from the specs.

    * OneHot / Categorical actions: a categorical actor over logits.
    * Bounded actions: a :class:`TanhNormal` actor with ``low``/``high`` from the spec (or,
      with ``squash=False``, a diagonal Gaussian whose actions the env clips).
    * Unbounded actions: a diagonal Gaussian (or an unscaled TanhNormal with ``tanh_unbounded``).
    * ``deterministic=True``: an :class:`Actor` (tanh-squashed into the bounds) for TD3/DDPG.

    Args:
        observation_spec: the env's observation spec (Composite or leaf).
        action_spec: the env's action spec.
        num_cells: hidden layer sizes.
        activation: activation class.
        in_key: observation key read by the policy.
        return_log_prob: write ``"sample_log_prob"`` (stochastic actors).
        deterministic: build a deterministic actor instead.
        state_dependent_scale: Gaussian scale predicted by the network (else a learned vector).
        log_std_init: initial log of the learned scale vector (``state_dependent_scale=False``).
        scale_mapping: how a state-dependent scale is made from the network's output
            (:func:`scale_extractor`): ``"biased_softplus_1.0"`` (torchrl's) or
            ``"clamped_exp"`` (SB3's SAC), among others.
        tanh_unbounded: squash unbounded continuous actions into ``[-1, 1]``.
        squash: bounded actions from a TanhNormal within the bounds; ``False``: from an
            unsquashed diagonal Gaussian, which the env clips to its bounds (SB3's PPO).
        encoder: a module in front of the MLP (e.g. a ConvNet reading ``in_key="pixels"``).
    """
    kind = spec_kind(action_spec)
    in_features = _head_input(observation_spec, in_key, encoder)
    n_out = action_size(action_spec)
    cells = list(num_cells)
    if deterministic:
        if kind in ("one_hot", "categorical"):
            raise ValueError(
                "deterministic actors need continuous actions; use QValueActor for discrete ones"
            )
        net = MLP(in_features, n_out, num_cells=cells, activation_class=activation)
        if kind == "bounded":
            net = nn.Sequential(net, TanhModule(*_action_bounds(action_spec)))
        return Actor(_with_encoder(encoder, net), in_keys=[in_key], spec=action_spec)
    if kind in ("one_hot", "categorical"):
        net = MLP(in_features, n_out, num_cells=cells, activation_class=activation)
        net = _with_encoder(encoder, net)
        module = TensorDictModule(net, in_keys=[in_key], out_keys=["logits"])
        dist_class = OneHotCategorical if kind == "one_hot" else Categorical
        return ProbabilisticActor(
            module,
            in_keys=["logits"],
            spec=action_spec,
            distribution_class=dist_class,
            return_log_prob=return_log_prob,
        )
    if state_dependent_scale:
        net = nn.Sequential(
            MLP(in_features, 2 * n_out, num_cells=cells, activation_class=activation),
            scale_extractor(scale_mapping),
        )
    else:
        net = nn.Sequential(
            MLP(in_features, n_out, num_cells=cells, activation_class=activation),
            AddStateIndependentNormalScale(torch.Size([n_out]), init_value=float(log_std_init)),
        )
    net = _with_encoder(encoder, net)
    module = TensorDictModule(net, in_keys=[in_key], out_keys=["loc", "scale"])
    if kind == "bounded" and squash:
        low, high = _action_bounds(action_spec)
        dist_class, dist_kwargs = TanhNormal, {"low": low, "high": high}
    elif tanh_unbounded and squash:
        dist_class, dist_kwargs = TanhNormal, {}
    else:
        dist_class, dist_kwargs = IndependentNormal, {}
    return ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        spec=action_spec,
        distribution_class=dist_class,
        distribution_kwargs=dist_kwargs,
        return_log_prob=return_log_prob,
    )


def make_value(
    observation_spec,
    num_cells: Sequence[int] = (64, 64),
    activation: type[nn.Module] = nn.Tanh,
    *,
    in_key: str = "observation",
    encoder: nn.Module | None = None,
) -> ValueOperator:
    """Builds a state-value critic ``V(s)`` writing ``"state_value"`` ``[*B, 1]``.

    Args:
        observation_spec: the env's observation spec.
        num_cells: hidden layer sizes.
        activation: activation class.
        in_key: observation key.
        encoder: a module in front of the MLP (e.g. a ConvNet reading ``in_key="pixels"``).
    """
    in_features = _head_input(observation_spec, in_key, encoder)
    net = MLP(in_features, 1, num_cells=list(num_cells), activation_class=activation)
    return ValueOperator(_with_encoder(encoder, net), in_keys=[in_key])


def make_qvalue(
    observation_spec,
    action_spec,
    num_cells: Sequence[int] = (256, 256),
    activation: type[nn.Module] = nn.ReLU,
    *,
    in_key: str = "observation",
    encoder: nn.Module | None = None,
) -> ValueOperator | QValueActor:
    """Builds a Q critic.

    Continuous actions: ``Q(s, a)`` reading ``[in_key, "action"]`` and writing
    ``"state_action_value"`` (SAC, TD3, DDPG). Discrete actions: a :class:`QValueActor` over
    ``n`` action values (DQN).

    Args:
        observation_spec: the env's observation spec.
        action_spec: the env's action spec.
        num_cells: hidden layer sizes.
        activation: activation class.
        in_key: observation key.
        encoder: a module in front of the MLP (e.g. a ConvNet reading ``in_key="pixels"``);
            for ``Q(s, a)`` its features are concatenated with the action.
    """
    kind = spec_kind(action_spec)
    obs = _head_input(observation_spec, in_key, encoder)
    if kind in ("one_hot", "categorical"):
        net = MLP(obs, int(action_spec.n), num_cells=list(num_cells), activation_class=activation)
        return QValueActor(_with_encoder(encoder, net), in_keys=[in_key], spec=action_spec)
    in_features = None if obs is None else obs + action_size(action_spec)
    net = MLP(in_features, 1, num_cells=list(num_cells), activation_class=activation)
    if encoder is not None:
        net = EncodedQValueNet(encoder, net)
    return ValueOperator(net, in_keys=[in_key, "action"])
