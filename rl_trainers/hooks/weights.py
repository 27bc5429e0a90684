"""Operation hooks on weights: collector policy sync and target-network updates."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = ["TargetNetUpdaterHook", "UpdateWeights"]


_INTERVAL_UNITS = ("batches", "optim_steps")
_PATH_PART = re.compile(r"""\.?([A-Za-z_]\w*)|\[(-?\d+)\]|\[['"]([^'"]+)['"]\]""")


def resolve_path(root: Any, path: str) -> Any:
    """The object at ``path`` from ``root``: attribute names, ``[i]`` and ``["key"]`` items,
    e.g. ``"loss_module.actor_network"`` or ``"replay_buffer.transforms[0]"``."""
    obj, pos, done = root, 0, ""
    while pos < len(path):
        match = _PATH_PART.match(path, pos)
        if match is None or (pos == 0 and match.group(0).startswith(".")):
            raise ValueError(f"Cannot parse the path {path!r} at {path[pos:]!r}.")
        attr, index, key = match.groups()
        try:
            if attr is not None:
                obj = getattr(obj, attr)
            else:
                obj = obj[int(index)] if index is not None else obj[key]
        except (AttributeError, IndexError, KeyError, TypeError) as err:
            raise ValueError(
                f"The path {path!r} does not resolve on the {type(root).__name__}: "
                f"{done or type(root).__name__!s} has no {match.group(0).lstrip('.')!r} ({err})."
            ) from None
        done += match.group(0)
        pos = match.end()
    return obj


class UpdateWeights(TrainerHookBase):
    """Sync the collector's policy weights (``update_policy_weights_()``) every N batches.

    Args:
        collector: the collector to update.
        update_weights_interval: number of batches (or optimisation steps, see
            ``interval_unit``) between two updates.
        policy_weights_getter: a callable returning the weights to send (e.g.
            ``lambda: actor.state_dict()`` or ``partial(TensorDict.from_module, actor)``),
            passed as ``collector.update_policy_weights_(weights)``; None lets the collector
            read its own policy's weights.
        weight_update_map: torchrl's map from destinations to source paths on the trainer,
            e.g. ``{"policy": "loss_module.actor_network"}``: the module at the source path
            (attributes, ``[i]`` and ``["key"]`` items) is sent to the collector's policy.
            Takes precedence over ``policy_weights_getter``. ``"policy"`` is the only
            destination: rl_trainers collectors have no weight-sync schemes for other
            modules (a ValueError says so).
        trainer: the trainer the source paths start from; :meth:`register` (or
            ``trainer.register_op``) sets it.
        sender: torchrl's weight-sync-scheme sender; not available here (raises
            NotImplementedError naming the alternative).
        interval_unit: ``"batches"`` (run at ``post_steps``) or ``"optim_steps"`` (run at
            ``post_optim``, counting optimisation steps).

    Examples:
        >>> UpdateWeights(collector, 1).register(trainer)
        >>> UpdateWeights(
        ...     collector, weight_update_map={"policy": "loss_module.actor_network"}
        ... ).register(trainer)
    """

    def __init__(
        self,
        collector: Any = None,
        update_weights_interval: int = 1,
        policy_weights_getter: Callable[[], Any] | None = None,
        weight_update_map: dict[str, str] | None = None,
        trainer: Trainer | None = None,
        *,
        sender: Any = None,
        interval_unit: Literal["batches", "optim_steps"] = "batches",
    ) -> None:
        if sender is not None:
            raise NotImplementedError(
                "UpdateWeights(sender=...) sends weights through torchrl's weight-sync "
                "schemes, which rl_trainers does not have. Pass the collector instead: "
                "UpdateWeights(collector, weight_update_map={'policy': "
                "'loss_module.actor_network'}) or UpdateWeights(collector, "
                "policy_weights_getter=...)."
            )
        if collector is None:
            raise TypeError(
                "UpdateWeights needs the collector whose policy it syncs: "
                "UpdateWeights(collector, update_weights_interval)."
            )
        if not callable(getattr(collector, "update_policy_weights_", None)):
            raise TypeError(
                f"{type(collector).__name__} has no update_policy_weights_() method to call."
            )
        if (
            isinstance(update_weights_interval, bool)
            or not isinstance(update_weights_interval, int)
            or update_weights_interval < 1
        ):
            raise ValueError(
                f"update_weights_interval must be an integer >= 1, got {update_weights_interval!r}."
            )
        if policy_weights_getter is not None and not callable(policy_weights_getter):
            raise TypeError(
                f"policy_weights_getter must be callable, got {policy_weights_getter!r}."
            )
        if interval_unit not in _INTERVAL_UNITS:
            raise ValueError(
                f"interval_unit must be one of {_INTERVAL_UNITS}, got {interval_unit!r}."
            )
        if weight_update_map is not None:
            weight_update_map = self._check_map(weight_update_map)
        self.collector = collector
        self.update_weights_interval = update_weights_interval
        self.policy_weights_getter = policy_weights_getter
        self.weight_update_map = weight_update_map
        self.trainer = trainer
        self.interval_unit = interval_unit
        self.counter = 0
        if trainer is not None and weight_update_map is not None:
            self._mapped_weights()  # a wrong path fails here, not after the first batch

    @staticmethod
    def _check_map(weight_update_map: Any) -> dict[str, str]:
        if not isinstance(weight_update_map, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_update_map.items()
        ):
            raise TypeError(
                "weight_update_map must map destination names to source paths (str to str), "
                f"got {weight_update_map!r}."
            )
        others = sorted(set(weight_update_map) - {"policy"})
        if others:
            raise ValueError(
                f"weight_update_map destinations {others} need torchrl's weight-sync schemes, "
                "which rl_trainers collectors do not have: they sync their policy only "
                "(destination 'policy'). Copy other weights in a hook of your own, e.g. "
                "trainer.register_op('post_steps', lambda: dest.load_state_dict("
                "src.state_dict()))."
            )
        if not weight_update_map:
            raise ValueError("weight_update_map is empty; give {'policy': '<source path>'}.")
        return dict(weight_update_map)

    def _bind(self, trainer: Trainer) -> None:
        if self.trainer is None:
            self.trainer = trainer
            if self.weight_update_map is not None:
                self._mapped_weights()

    def _mapped_weights(self) -> Any:
        if self.trainer is None:
            raise RuntimeError(
                "UpdateWeights(weight_update_map=...) resolves its source paths on a trainer: "
                "pass trainer=..., or register the hook with .register(trainer)."
            )
        return resolve_path(self.trainer, self.weight_update_map["policy"])

    def __call__(self, *args: Any) -> None:
        self.counter += 1
        if self.counter % self.update_weights_interval == 0:
            if self.weight_update_map is not None:
                self.collector.update_policy_weights_(self._mapped_weights())
            elif self.policy_weights_getter is None:
                self.collector.update_policy_weights_()
            else:
                self.collector.update_policy_weights_(self.policy_weights_getter())

    def register(self, trainer: Trainer, name: str = "update_weights") -> None:
        """Register at ``"post_steps"`` (``"post_optim"`` with ``interval_unit="optim_steps"``)
        and checkpoint the counter."""
        point = "post_optim" if self.interval_unit == "optim_steps" else "post_steps"
        trainer.register_op(point, self)
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
