"""Operation hooks on weights: collector policy sync and target-network updates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_trainers.trainers.trainer import Trainer, TrainerHookBase

__all__ = ["TargetNetUpdaterHook", "UpdateWeights"]


class UpdateWeights(TrainerHookBase):
    """Sync the collector's policy weights (``update_policy_weights_()``) every N batches.

    Args:
        collector: the collector to update.
        update_weights_interval: number of ``post_steps`` calls between two updates.
        policy_weights_getter: a callable returning the weights to send (e.g.
            ``lambda: actor.state_dict()``), passed as
            ``collector.update_policy_weights_(weights)``; None lets the collector read its
            own policy's weights.
    """

    def __init__(
        self,
        collector: Any,
        update_weights_interval: int = 1,
        policy_weights_getter: Callable[[], Any] | None = None,
    ) -> None:
        if not callable(getattr(collector, "update_policy_weights_", None)):
            raise TypeError(
                f"{type(collector).__name__} has no update_policy_weights_() method to call."
            )
        if update_weights_interval < 1:
            raise ValueError(
                f"update_weights_interval must be >= 1, got {update_weights_interval}."
            )
        if policy_weights_getter is not None and not callable(policy_weights_getter):
            raise TypeError(
                f"policy_weights_getter must be callable, got {policy_weights_getter!r}."
            )
        self.collector = collector
        self.update_weights_interval = update_weights_interval
        self.policy_weights_getter = policy_weights_getter
        self.counter = 0

    def __call__(self) -> None:
        self.counter += 1
        if self.counter % self.update_weights_interval == 0:
            if self.policy_weights_getter is None:
                self.collector.update_policy_weights_()
            else:
                self.collector.update_policy_weights_(self.policy_weights_getter())

    def register(self, trainer: Trainer, name: str = "update_weights") -> None:
        """Register at ``"post_steps"`` and checkpoint the counter."""
        trainer.register_op("post_steps", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, int]:
        """The call counter."""
        return {"counter": self.counter}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the call counter."""
        self.counter = int(state_dict["counter"])


class TargetNetUpdaterHook(TrainerHookBase):
    """Call ``target_params_updater.step()`` after each optimisation step (``post_optim``).

    Args:
        target_params_updater: e.g. ``SoftUpdate`` or ``HardUpdate`` (anything with ``step()``).
    """

    def __init__(self, target_params_updater: Any) -> None:
        if not callable(getattr(target_params_updater, "step", None)):
            raise TypeError(
                f"{type(target_params_updater).__name__} has no step() method; expected a "
                "target-network updater such as SoftUpdate or HardUpdate."
            )
        self.target_params_updater = target_params_updater

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.target_params_updater.step()

    def register(self, trainer: Trainer, name: str = "target_net_updater") -> None:
        """Register at ``"post_optim"``; checkpoint the updater if it has a state dict."""
        trainer.register_op("post_optim", self)
        updater = self.target_params_updater
        if hasattr(updater, "state_dict") and hasattr(updater, "load_state_dict"):
            trainer.register_module(name, updater)
