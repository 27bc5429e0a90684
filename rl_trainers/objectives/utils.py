"""Target-network updaters and optimiser grouping."""

from __future__ import annotations

import contextlib

import torch

from rl_trainers.objectives.common import LossModule, ValueEstimators, distance_loss
from rl_trainers.objectives.value import default_value_kwargs

__all__ = [
    "SoftUpdate",
    "HardUpdate",
    "IntervalTargetUpdate",
    "TargetNetUpdater",
    "group_optimizers",
    "hold_out_net",
    "ValueEstimators",
    "distance_loss",
    "default_value_kwargs",
]


@contextlib.contextmanager
def hold_out_net(network: torch.nn.Module):
    """Within the block, ``network``'s parameters get no gradient (torchrl's
    ``hold_out_net``): e.g. backpropagate a policy loss through a frozen critic.
    Their ``requires_grad`` flags are restored on exit."""
    params = list(network.parameters())
    flags = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(params, flags):
            p.requires_grad_(flag)


def group_optimizers(*optimizers: torch.optim.Optimizer | None) -> torch.optim.Optimizer:
    """One optimiser stepping the parameter groups of several of the same class (torchrl's
    ``group_optimizers``), e.g. SAC's actor, critic and alpha optimisers.

    Each group keeps its hyperparameters (``lr``...); the optimiser state starts afresh.
    ``None`` entries are skipped.
    """
    kept = [opt for opt in optimizers if opt is not None]
    if not kept:
        raise ValueError("group_optimizers needs at least one optimizer")
    cls = type(kept[0])
    if any(type(opt) is not cls for opt in kept):
        raise ValueError("Cannot group optimizers of different type.")
    return cls([group for opt in kept for group in opt.param_groups])


class TargetNetUpdater:
    """Base class of target updaters: ``step()`` after each optimisation step.

    Args:
        loss_module: a loss that registered target networks.
    """

    def __init__(self, loss_module: LossModule) -> None:
        if not isinstance(loss_module, LossModule) or not loss_module.has_targets:
            raise ValueError(
                f"{type(loss_module).__name__} has no target networks "
                "(build it with delay_value/delay_qvalue/delay_actor=True)"
            )
        self.loss_module = loss_module

    @torch.no_grad()
    def init_(self) -> None:
        """Copies the online parameters into the targets."""
        srcs, tgts = self.loss_module.target_pairs()
        torch._foreach_copy_(tgts, srcs)

    def step(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def __call__(self, *args, **kwargs) -> None:
        """Lets the updater be registered directly as a trainer op."""
        self.step()

    def register(self, trainer, name: str = "target_net_updater") -> None:
        """Registers :meth:`step` at the trainer's ``post_optim`` point."""
        trainer.register_op("post_optim", self.step)
        if hasattr(trainer, "register_module"):
            trainer.register_module(name, self)

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        return None


class SoftUpdate(TargetNetUpdater):
    """Polyak averaging ``target <- eps * target + (1 - eps) * online`` (``tau = 1 - eps``).

    Args:
        loss_module: the loss holding the targets.
        eps: weight of the old target (e.g. 0.995).
        tau: weight of the online parameters (e.g. 0.005); give exactly one of ``eps``/``tau``.
    """

    def __init__(
        self, loss_module: LossModule, *, eps: float | None = None, tau: float | None = None
    ) -> None:
        super().__init__(loss_module)
        if (eps is None) == (tau is None):
            raise ValueError(
                f"SoftUpdate needs exactly one of eps or tau, got eps={eps}, tau={tau}"
            )
        tau = 1.0 - eps if tau is None else tau
        if not 0.0 < tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1] (eps in [0, 1)), got tau={tau}")
        self.tau = float(tau)
        self.eps = 1.0 - self.tau

    @torch.no_grad()
    def step(self) -> None:
        srcs, tgts = self.loss_module.target_pairs()
        torch._foreach_lerp_(tgts, srcs, self.tau)


class HardUpdate(TargetNetUpdater):
    """Copies the online parameters into the targets every ``value_network_update_interval`` steps.

    Args:
        loss_module: the loss holding the targets.
        value_network_update_interval: number of ``step()`` calls between copies.
    """

    def __init__(
        self, loss_module: LossModule, *, value_network_update_interval: int = 1000
    ) -> None:
        super().__init__(loss_module)
        if value_network_update_interval < 1:
            raise ValueError(
                f"value_network_update_interval must be >= 1, got {value_network_update_interval}"
            )
        self.value_network_update_interval = int(value_network_update_interval)
        self.counter = 0

    def step(self) -> None:
        self.counter += 1
        if self.counter % self.value_network_update_interval == 0:
            self.init_()

    def state_dict(self) -> dict:
        return {"counter": self.counter}

    def load_state_dict(self, state_dict: dict) -> None:
        self.counter = int(state_dict["counter"])


class IntervalTargetUpdate(HardUpdate):
    """Every ``interval`` steps, ``target <- tau * online + (1 - tau) * target``.

    ``tau = 1`` copies the online network (:class:`HardUpdate`); ``interval = 1`` with a
    small ``tau`` is Polyak averaging after every update (:class:`SoftUpdate`). The step
    counter is checkpointed.

    Args:
        loss_module: the loss holding the target network.
        interval: steps (gradient updates) between target updates.
        tau: weight of the online parameters in each target update, in (0, 1].
    """

    def __init__(self, loss_module, *, interval: int, tau: float = 1.0) -> None:
        super().__init__(loss_module, value_network_update_interval=interval)
        if not 0.0 < tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {tau}")
        self.tau = float(tau)

    @torch.no_grad()
    def step(self) -> None:
        self.counter += 1
        if self.counter % self.value_network_update_interval:
            return
        if self.tau == 1.0:
            self.init_()
        else:
            srcs, tgts = self.loss_module.target_pairs()
            torch._foreach_lerp_(tgts, srcs, self.tau)
