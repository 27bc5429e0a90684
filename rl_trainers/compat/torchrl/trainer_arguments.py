"""torchrl's constructor arguments of the algorithm trainers, translated to rl_trainers'.

A torchrl script builds ``PPOTrainer(collector=..., total_frames=..., frame_skip=1,
optim_steps_per_batch=..., loss_module=..., optimizer=..., replay_buffer=..., gamma=...)``;
rl_trainers' own form is ``PPOTrainer(..., frames_per_batch=..., num_epochs=...,
minibatch_size=...)``. ``optim_steps_per_batch`` (which torchrl requires and rl_trainers'
algorithm trainers never take) selects torchrl's form in the classes of
:mod:`rl_trainers.compat.torchrl.trainers`; one translation per family turns torchrl's
arguments into what the trainer needs and the hooks torchrl registers:

* :class:`TorchrlOnPolicy` (PPO, A2C, REINFORCE/PG): per batch, ``num_epochs`` passes of
  ``optim_steps_per_batch`` steps. Before each pass (``pre_epoch``) the advantages are
  computed (``gae``, else ``GAE(gamma, lmbda, average_gae=True)`` on the loss's critic when
  ``add_gae``) and the ``replay_buffer`` is extended with the flattened batch; each step
  draws the next sample of the buffer's iteration (its ``batch_size``, its sampler). Without
  a buffer each step sees the whole batch.
* :class:`TorchrlOffPolicy` (SAC, DQN, TD3, DDPG): ``optim_steps_per_batch`` updates per
  batch from ``replay_buffer`` (samples of ``batch_size``, else the buffer's), the
  ``target_net_updater`` stepped after each, DQN's ``greedy_module`` annealed by the frames
  collected. Every collected frame is written to the buffer, the collector's random
  warm-up (``init_random_frames``) included.

Both register torchrl's logging (:func:`register_torchrl_logging`) and a weight sync of the
collector's policy after every batch (``UpdateWeights``). An argument whose torchrl meaning
rl_trainers cannot give raises a TypeError naming what to do instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from tensordict import TensorDictBase

from rl_trainers.hooks import (
    LogScalar,
    ReplayBufferTrainer,
    UpdateWeights,
    UTDRHook,
    ValueEstimatorHook,
)

__all__ = [
    "TorchrlOffPolicy",
    "TorchrlOnPolicy",
    "register_torchrl_logging",
    "reject_torchrl_only",
    "uses_torchrl_arguments",
]

#: torchrl's names of the entries its trainers read (``<name>_key`` arguments) and defaults
KEY_ARGS = {
    "done_key": "done",
    "terminated_key": "terminated",
    "reward_key": "reward",
    "action_key": "action",
    "observation_key": "observation",
}

#: torchrl's logging switches and their defaults
LOGGING_ARGS = {
    "enable_logging": True,
    "log_rewards": True,
    "log_actions": True,
    "log_observations": False,
}

#: torchrl arguments with no rl_trainers counterpart, and what to do instead
UNSUPPORTED = {
    "checkpoint": "rl_trainers checkpoints every registered module, the counters and the RNG "
    "states with save_trainer_file=...; resume with trainer.load_from_file(); drop checkpoint",
    "optimization_stepper": "rl_trainers has no OptimizationStepper; for TD3's delayed actor "
    "updates build the trainer in rl_trainers' form: TD3Trainer(..., frames_per_batch=..., "
    "optimizers={'critic': ..., 'actor': ...}, target_updater=..., policy_delay=2, "
    "replay_buffer=...), or drop it to step one optimizer on every loss as torchrl does",
}

#: rl_trainers' own loop arguments, which torchrl's form replaces
RL_TRAINERS_LOOP_ARGS = {
    "minibatch_size": "the replay buffer's batch_size",
    "utd_ratio": "optim_steps_per_batch",
    "learning_starts": "the collector's init_random_frames",
    "target_updater": "target_net_updater",
}

_ON_POLICY_ONLY = (
    "replay_buffer",
    "batch_size",
    "gamma",
    "lmbda",
    "add_gae",
    "gae",
)
_OFF_POLICY_ONLY = (
    "batch_size",
    "target_net_updater",
    "greedy_module",
    "exploration_module",
)
_COMMON = (
    *LOGGING_ARGS,
    *KEY_ARGS,
    "episode_reward_key",
    "weight_update_map",
    *UNSUPPORTED,
)


def uses_torchrl_arguments(kwargs: dict[str, Any]) -> bool:
    """Whether a trainer is built with torchrl's arguments: ``optim_steps_per_batch`` given."""
    return "optim_steps_per_batch" in kwargs


def reject_torchrl_only(trainer_name: str, kwargs: dict[str, Any], on_policy: bool) -> None:
    """rl_trainers' form with one of torchrl's arguments: a TypeError saying to use
    torchrl's form (``optim_steps_per_batch``) for them."""
    only = _ON_POLICY_ONLY if on_policy else _OFF_POLICY_ONLY
    given = [name for name in (*only, *_COMMON) if name in kwargs]
    if given:
        raise TypeError(
            f"{trainer_name} got torchrl's argument(s) {given} without optim_steps_per_batch: "
            "add optim_steps_per_batch= for torchrl's form (which takes no minibatch_size, "
            f"utd_ratio, learning_starts or target_updater), or drop {given} for rl_trainers' form"
        )


def _check_form(trainer_name: str, kwargs: dict[str, Any]) -> None:
    for name, reason in UNSUPPORTED.items():
        if kwargs.get(name) is not None:
            raise TypeError(f"{trainer_name}({name}=...) is not supported: {reason}.")
        kwargs.pop(name, None)
    mixed = [name for name in RL_TRAINERS_LOOP_ARGS if name in kwargs]
    if mixed:
        fix = ", ".join(f"{n} -> {RL_TRAINERS_LOOP_ARGS[n]}" for n in mixed)
        raise TypeError(
            f"{trainer_name} got rl_trainers' argument(s) {mixed} with torchrl's "
            f"optim_steps_per_batch; in torchrl's form use {fix} (or drop "
            "optim_steps_per_batch and give frames_per_batch for rl_trainers' form)"
        )


def collector_frames_per_batch(collector: Any, trainer_name: str) -> int:
    """The frames of each batch of ``collector`` (torchrl's trainers take them from it)."""
    frames = getattr(collector, "frames_per_batch", None)
    if not isinstance(frames, int):
        raise TypeError(
            f"{trainer_name} cannot read frames_per_batch from the "
            f"{type(collector).__name__} collector: pass frames_per_batch=<frames of each batch>"
        )
    return frames


def _pop_keys(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs.pop(name, default) for name, default in KEY_ARGS.items()}


def _set_keys(module: Any, keys: dict[str, Any], names: tuple[str, ...]) -> None:
    """``module.set_keys`` with the keys that differ from torchrl's defaults (an unknown one
    raises, naming it)."""
    changed = {n: keys[f"{n}_key"] for n in names if keys[f"{n}_key"] != KEY_ARGS[f"{n}_key"]}
    if not changed:
        return
    if not hasattr(module, "set_keys"):
        raise TypeError(
            f"{type(module).__name__} has no set_keys() to read {changed}; use the default keys"
        )
    module.set_keys(**changed)


def register_torchrl_logging(
    trainer,
    *,
    logging: dict[str, bool],
    keys: dict[str, Any],
    episode_reward_key: Any,
    episode_reward_reduction: str,
    log_utd_ratio: bool,
) -> None:
    """torchrl's logging hooks of its algorithm trainers, on each collected batch
    (``pre_steps_log``; each optimisation sub-batch with ``async_collection``):
    ``done_percentage``; with ``log_rewards`` ``r_training`` (and ``_std``), ``r_max`` and
    ``r_total`` (the ``episode_reward_reduction`` of ``("next", episode_reward_key)``); with
    ``log_actions`` ``action_norm`` (and ``_std``); with ``log_observations`` ``obs_norm``
    (and ``_std``); off-policy also ``utd_ratio``. Nothing with ``enable_logging=False``."""
    if not logging["enable_logging"]:
        return
    point = "post_optim_log" if trainer.async_collection else "pre_steps_log"
    done = ("next", keys["done_key"])
    hooks = [LogScalar(done, "done_percentage", log_pbar=True, include_std=False)]
    if logging["log_rewards"]:
        reward = ("next", keys["reward_key"])
        hooks += [
            LogScalar(reward, "r_training", log_pbar=True),
            LogScalar(reward, "r_max", include_std=False, reduction="max"),
            _IfPresent(
                LogScalar(
                    ("next", episode_reward_key),
                    "r_total",
                    include_std=False,
                    reduction=episode_reward_reduction,
                )
            ),
        ]
    if logging["log_actions"]:
        hooks.append(LogScalar(keys["action_key"], "action_norm"))
    if logging["log_observations"]:
        hooks.append(LogScalar(keys["observation_key"], "obs_norm"))
    for hook in hooks:
        trainer.register_op(point, hook)
    if log_utd_ratio:
        trainer.register_op("pre_steps_log", UTDRHook(trainer))


class _IfPresent:
    """A LogScalar that logs nothing (and warns once) when its entry is not in the batch:
    ``r_total`` reads an episode-return entry only a ``RewardSum`` transform writes."""

    def __init__(self, hook: LogScalar) -> None:
        self.hook = hook
        self._warned = False

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        if batch.is_empty() or self.hook.key in batch.keys(True):
            return self.hook(batch)
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.hook.logname} is not logged: the batches have no {self.hook.key!r} "
                "entry; add a RewardSum transform writing it (RewardSum(out_keys=[...])) or "
                "pass episode_reward_key='episode_reward' (RewardSum's default)",
                stacklevel=2,
            )
        return None


def _update_weights(trainer, weight_update_map: dict[str, str] | None) -> None:
    """torchrl syncs the collector's policy after every batch; ``weight_update_map`` names
    the trainer path of the weights to send (``{"policy": "loss_module.actor_network"}``)."""
    UpdateWeights(trainer.collector, 1, weight_update_map=weight_update_map).register(trainer)


class _TorchrlForm:
    """What both families take from torchrl's arguments and register alike: the logging
    switches, the ``*_key`` arguments, ``episode_reward_key`` and ``weight_update_map``;
    the collector's weight sync and torchrl's logging hooks."""

    episode_reward_reduction = "sum"

    def _pop_logging_and_keys(
        self, kwargs: dict[str, Any], *, log_actions: bool, episode_reward_key: str
    ) -> None:
        defaults = {**LOGGING_ARGS, "log_actions": log_actions}
        self.logging = {n: kwargs.pop(n, d) for n, d in defaults.items()}
        self.keys = _pop_keys(kwargs)
        self.episode_reward_key = kwargs.pop("episode_reward_key", episode_reward_key)
        self.weight_update_map = kwargs.pop("weight_update_map", None)

    def _install_weight_sync_and_logging(self, trainer, *, log_utd_ratio: bool) -> None:
        _update_weights(trainer, self.weight_update_map)
        register_torchrl_logging(
            trainer,
            logging=self.logging,
            keys=self.keys,
            episode_reward_key=self.episode_reward_key,
            episode_reward_reduction=self.episode_reward_reduction,
            log_utd_ratio=log_utd_ratio,
        )


class TorchrlOnPolicy(_TorchrlForm):
    """torchrl's arguments of ``PPOTrainer``/``A2CTrainer``/``ReinforceTrainer``, taken out
    of ``kwargs``: :attr:`arguments` are the :class:`AlgorithmTrainer` arguments, and
    :meth:`install` registers torchrl's hooks on the built trainer (see the module doc).

    Args:
        trainer: the trainer being built (its class names errors and its
            ``torchrl_num_epochs`` is the default of ``num_epochs``).
        kwargs: the constructor's keyword arguments, torchrl's form.
    """

    def __init__(self, trainer, kwargs: dict[str, Any]) -> None:
        name = type(trainer).__name__
        kwargs = dict(kwargs)
        _check_form(name, kwargs)
        self.replay_buffer = kwargs.pop("replay_buffer", None)
        batch_size = kwargs.pop("batch_size", None)
        if batch_size is not None:
            buffer_size = getattr(self.replay_buffer, "batch_size", None)
            if batch_size != buffer_size:
                raise TypeError(
                    f"{name}(batch_size={batch_size}): torchrl's on-policy trainers sample the "
                    f"replay buffer's own batch_size ({buffer_size}); build the buffer with "
                    f"batch_size={batch_size} and drop batch_size"
                )
        self.gamma = kwargs.pop("gamma", 0.99)
        self.lmbda = kwargs.pop("lmbda", 0.95)
        self.add_gae = kwargs.pop("add_gae", True)
        self.gae = kwargs.pop("gae", None)
        if not self.add_gae and self.gae is not None:
            raise ValueError(f"{name}: gae must not be given with add_gae=False")
        self._pop_logging_and_keys(
            kwargs, log_actions=LOGGING_ARGS["log_actions"], episode_reward_key="reward"
        )
        if kwargs.get("num_epochs") is None:
            kwargs["num_epochs"] = trainer.torchrl_num_epochs
        if kwargs.get("frames_per_batch") is None:
            kwargs["frames_per_batch"] = collector_frames_per_batch(kwargs["collector"], name)
        kwargs["train_logs"] = False
        #: the :class:`AlgorithmTrainer` arguments
        self.arguments = kwargs

    def install(self, trainer) -> None:
        """Register torchrl's on-policy hooks on ``trainer`` (built with :attr:`arguments`)."""
        loss = trainer.loss_module
        _set_keys(loss, self.keys, ("reward", "done", "terminated", "action"))
        if self.add_gae:
            estimator = self.gae
            if estimator is None:
                estimator = trainer.torchrl_value_estimator(self.gamma, self.lmbda)
            if hasattr(estimator, "set_keys"):
                _set_keys(estimator, self.keys, ("reward", "done", "terminated"))
            ValueEstimatorHook(estimator).register(trainer)
        trainer.register_op("pre_epoch", trainer._keep_epoch_batch)
        if self.replay_buffer is not None:
            trainer.replay_buffer = self.replay_buffer
            buffer = ReplayBufferTrainer(self.replay_buffer, flatten_tensordicts=True, iterate=True)
            buffer.register(trainer, extend_at=None if trainer.async_collection else "pre_epoch")
        self._install_weight_sync_and_logging(trainer, log_utd_ratio=False)


class TorchrlOffPolicy(_TorchrlForm):
    """torchrl's arguments of ``SACTrainer``/``DQNTrainer``/``TD3Trainer``/``DDPGTrainer``,
    taken out of ``kwargs``: :attr:`arguments` are rl_trainers' :class:`OffPolicyTrainer`
    arguments (``utd_ratio`` from ``optim_steps_per_batch``, ``learning_starts=1``: no
    update from an empty buffer, which only an ``async_collection`` collector can leave,
    ``target_updater`` from ``target_net_updater``, ``exploration`` from DQN's
    ``greedy_module``), and :meth:`install` registers torchrl's other hooks.

    Args:
        trainer: the trainer being built (its class names errors; its
            ``torchrl_episode_reward`` and ``torchrl_log_actions`` give the defaults of
            ``episode_reward_key``, of the ``r_total`` reduction and of ``log_actions``).
        kwargs: the constructor's keyword arguments, torchrl's form.
    """

    def __init__(self, trainer, kwargs: dict[str, Any]) -> None:
        name = type(trainer).__name__
        kwargs = dict(kwargs)
        _check_form(name, kwargs)
        frames = kwargs.get("frames_per_batch")
        if frames is None:
            frames = collector_frames_per_batch(kwargs["collector"], name)
        steps = kwargs.pop("optim_steps_per_batch")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(
                f"{name}: optim_steps_per_batch must be an integer >= 1, got {steps!r}"
            )
        if kwargs.get("replay_buffer") is None:
            raise TypeError(f"{name} needs replay_buffer=... to sample its updates from")
        greedy = kwargs.pop("greedy_module", None)
        self.exploration_module = kwargs.pop("exploration_module", None)
        key, self.episode_reward_reduction = trainer.torchrl_episode_reward
        self._pop_logging_and_keys(
            kwargs, log_actions=trainer.torchrl_log_actions, episode_reward_key=key
        )
        kwargs.update(
            frames_per_batch=frames,
            utd_ratio=steps / frames,
            learning_starts=1,
            target_updater=kwargs.pop("target_net_updater", None),
            sample_size=kwargs.pop("batch_size", None),
            train_logs=False,
        )
        if greedy is not None:
            kwargs["exploration"] = greedy
        #: rl_trainers' :class:`OffPolicyTrainer` arguments
        self.arguments = kwargs

    def install(self, trainer) -> None:
        """Register torchrl's off-policy hooks on ``trainer`` (built with :attr:`arguments`)."""
        _set_keys(trainer.loss_module, self.keys, ("reward", "done", "terminated", "action"))
        module = self.exploration_module
        if module is not None and hasattr(module, "state_dict"):
            # torchrl sends it with the policy's weights and does not anneal it
            trainer.register_module("exploration", module)
        self._install_weight_sync_and_logging(trainer, log_utd_ratio=True)
