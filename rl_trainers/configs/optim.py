"""Optimizer config nodes (group ``optimizer``)."""

from __future__ import annotations

from dataclasses import dataclass

from .common import config_field


@dataclass
class OptimizerConfig:
    """Fields every optimizer shares (the keyword arguments of its ``torch.optim`` class)."""

    _target_: str = "torch.optim.Adam"
    lr: float = config_field(3e-4, "learning rate")
    weight_decay: float = config_field(0.0, "L2 penalty")


@dataclass
class AdamConfig(OptimizerConfig):
    """Adam."""

    _target_: str = "torch.optim.Adam"
    betas: list[float] = config_field([0.9, 0.999], "moment decay rates")
    eps: float = config_field(1e-8, "denominator term")
    fused: bool | None = config_field(
        True, "one fused kernel for all parameters (same maths, 2-3x faster step on CPU)"
    )


@dataclass
class AdamWConfig(AdamConfig):
    """Adam with decoupled weight decay."""

    _target_: str = "torch.optim.AdamW"
    weight_decay: float = config_field(0.01, "decoupled weight decay")


@dataclass
class SGDConfig(OptimizerConfig):
    """Stochastic gradient descent."""

    _target_: str = "torch.optim.SGD"
    momentum: float = config_field(0.0, "momentum factor")
    nesterov: bool = config_field(False, "Nesterov momentum")


@dataclass
class RMSpropConfig(OptimizerConfig):
    """RMSprop."""

    _target_: str = "torch.optim.RMSprop"
    alpha: float = config_field(0.99, "smoothing constant")
    eps: float = config_field(1e-8, "denominator term")
    momentum: float = config_field(0.0, "momentum factor")


@dataclass
class LRSchedulerConfig:
    """How the learning rate changes over training (stepped once per collected batch)."""

    _target_: str = "rl_trainers.algorithms.components.make_lr_scheduler"
    kind: str = config_field("constant", "constant | linear (anneal to 0 at the end) | cosine")
