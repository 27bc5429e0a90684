"""The algorithm trainers with torchrl's constructor form, at torchrl's names.

Each class here is rl_trainers' trainer of the same name (:mod:`rl_trainers.algorithms`)
with a constructor that also takes torchrl's arguments. Given ``optim_steps_per_batch``
(which torchrl requires and rl_trainers' form never takes), the arguments are torchrl's:
:mod:`~rl_trainers.compat.torchrl.trainer_arguments` translates them and installs torchrl's
loop and logging. Otherwise they are rl_trainers' and pass through unchanged, so a script
may use either form with ``from rl_trainers.trainers.algorithms import PPOTrainer``.

The app (``rl-trainers <algo>``, ``build_trainer``, ``instantiate(cfg.trainer)``) builds
the product classes; an instance of a class here is an instance of its product class.
"""

from __future__ import annotations

from typing import Any

from rl_trainers.algorithms import a2c, ddpg, dqn, on_policy, pg, ppo, sac, td3
from rl_trainers.algorithms.base import AlgorithmTrainer
from rl_trainers.compat.torchrl.trainer_arguments import (
    TorchrlOffPolicy,
    TorchrlOnPolicy,
    reject_torchrl_only,
    uses_torchrl_arguments,
)
from rl_trainers.trainers.algorithms import TORCHRL_TRAINER_NAMES

#: torchrl's trainer names, as its path (``rl_trainers.trainers.algorithms``) declares them
__all__ = list(TORCHRL_TRAINER_NAMES)


class TorchrlOnPolicyForm:
    """Mixed in before an on-policy product trainer: torchrl's form when
    ``optim_steps_per_batch`` is given (:class:`TorchrlOnPolicy`), rl_trainers' otherwise.

    torchrl's loop is the :class:`~rl_trainers.core.Trainer`'s own: ``num_epochs``
    passes of ``optim_steps_per_batch`` steps, with torchrl's GAE and replay buffer at
    ``pre_epoch``; the product's minibatches are not used.
    """

    #: torchrl's default of ``num_epochs`` (torchrl's PPOTrainer: 4)
    torchrl_num_epochs: int = 1

    def __init__(self, **kwargs: Any) -> None:
        if not uses_torchrl_arguments(kwargs):
            reject_torchrl_only(type(self).__name__, kwargs, on_policy=True)
            super().__init__(**kwargs)
            return
        self.minibatches = None
        self._epoch_batch = None
        form = TorchrlOnPolicy(self, kwargs)
        self.build_torchrl_loop(**form.arguments)
        form.install(self)

    def build_torchrl_loop(self, **arguments: Any) -> None:
        """The :class:`AlgorithmTrainer` built with the translated ``arguments``; subclasses
        add what their algorithm registers in both forms."""
        AlgorithmTrainer.__init__(self, **arguments)

    @property
    def current_batch(self):
        """The batch of the current pass (flat; None before the first)."""
        if self.minibatches is not None:
            return self.minibatches.current_batch
        return self._epoch_batch

    def _keep_epoch_batch(self, batch) -> None:
        """Keep each pass's batch (with its advantages) for :attr:`current_batch`
        (``async_collection``: the hooks get an empty batch)."""
        if batch.batch_dims:
            self._epoch_batch = batch.reshape(-1)

    def torchrl_value_estimator(self, gamma: float, lmbda: float):
        """With ``add_gae`` and no ``gae``: the advantage estimator, torchrl's
        ``GAE(gamma, lmbda, value_network=critic, average_gae=True)``."""
        from rl_trainers.objectives.value import GAE

        critic = getattr(self.loss_module, "critic_network", None)
        if critic is None:
            raise TypeError(
                f"{type(self).__name__}: add_gae=True builds GAE on loss_module.critic_network, "
                "which this loss has none of; pass gae=<an estimator writing 'advantage'> or "
                "add_gae=False"
            )
        return GAE(gamma=gamma, lmbda=lmbda, value_network=critic, average_gae=True)


class TorchrlOffPolicyForm:
    """Mixed in before an off-policy product trainer: torchrl's form when
    ``optim_steps_per_batch`` is given (:class:`TorchrlOffPolicy`: the product's
    arguments, then torchrl's hooks), rl_trainers' otherwise."""

    #: torchrl's default ``episode_reward_key`` of ``r_total`` and its reduction
    torchrl_episode_reward: tuple[str, str] = ("reward_sum", "max")
    #: torchrl's default of ``log_actions`` (torchrl's DQNTrainer logs no actions)
    torchrl_log_actions: bool = True

    def __init__(self, **kwargs: Any) -> None:
        if not uses_torchrl_arguments(kwargs):
            reject_torchrl_only(type(self).__name__, kwargs, on_policy=False)
            super().__init__(**kwargs)
            return
        form = TorchrlOffPolicy(self, kwargs)
        super().__init__(**form.arguments)
        form.install(self)


class OnPolicyTrainer(TorchrlOnPolicyForm, on_policy.OnPolicyTrainer):
    """:class:`rl_trainers.algorithms.on_policy.OnPolicyTrainer`, in torchrl's form too."""


class PPOTrainer(TorchrlOnPolicyForm, ppo.PPOTrainer):
    """:class:`rl_trainers.algorithms.ppo.PPOTrainer`, in torchrl's form too:
    ``PPOTrainer(collector=..., total_frames=..., frame_skip=1, optim_steps_per_batch=...,
    loss_module=..., optimizer=..., replay_buffer=..., num_epochs=4, gamma=0.99,
    lmbda=0.95, log_rewards=True...)``: GAE before each of ``num_epochs`` passes (default 4,
    as torchrl's) of ``optim_steps_per_batch`` samples of the replay buffer."""

    torchrl_num_epochs = 4

    def build_torchrl_loop(self, *, anneal_clip_epsilon: bool = False, **arguments: Any) -> None:
        super().build_torchrl_loop(**arguments)
        self.register_ppo_ops(anneal_clip_epsilon)


class A2CTrainer(TorchrlOnPolicyForm, a2c.A2CTrainer):
    """:class:`rl_trainers.algorithms.a2c.A2CTrainer`, in torchrl's form too
    (``optim_steps_per_batch``, ``num_epochs`` (default 1), ``replay_buffer``, ``gamma``,
    ``lmbda``, ``add_gae``, ``gae``, the logging flags and keys)."""


class PGTrainer(TorchrlOnPolicyForm, pg.PGTrainer):
    """:class:`rl_trainers.algorithms.pg.PGTrainer`, in torchrl's form too (as
    :class:`A2CTrainer`; torchrl's name is :data:`ReinforceTrainer`). A loss without a critic
    gets the returns-to-go with the trainer's ``gamma`` where torchrl's GAE needs a critic."""

    def torchrl_value_estimator(self, gamma: float, lmbda: float):
        """torchrl's GAE on the loss's critic; without a critic, the returns-to-go."""
        if self.loss_module.critic_network is None:
            key = self.loss_module.advantage_key
            return lambda batch: pg.returns_to_go(batch, gamma, key)
        return super().torchrl_value_estimator(gamma, lmbda)


#: torchrl's name of the REINFORCE trainer (``torchrl.trainers.algorithms.ReinforceTrainer``)
ReinforceTrainer = PGTrainer


class SACTrainer(TorchrlOffPolicyForm, sac.SACTrainer):
    """:class:`rl_trainers.algorithms.sac.SACTrainer`, in torchrl's form too
    (``optim_steps_per_batch``, ``replay_buffer``, ``batch_size``, ``target_net_updater``,
    the logging flags and keys...)."""


class DQNTrainer(TorchrlOffPolicyForm, dqn.DQNTrainer):
    """:class:`rl_trainers.algorithms.dqn.DQNTrainer`, in torchrl's form too
    (``optim_steps_per_batch``, ``replay_buffer``, ``target_net_updater`` (e.g.
    ``HardUpdate``), ``greedy_module`` (annealed as ``exploration``), the logging flags...)."""

    torchrl_log_actions = False


class TD3Trainer(TorchrlOffPolicyForm, td3.TD3Trainer):
    """:class:`rl_trainers.algorithms.td3.TD3Trainer`, in torchrl's form too
    (``optim_steps_per_batch``, ``optimizer``, ``replay_buffer``, ``target_net_updater``,
    ``exploration_module`` (checkpointed, not annealed, as torchrl), the logging flags...):
    one optimizer over every loss and the targets updated after every update, as torchrl's."""

    torchrl_episode_reward = ("reward", "sum")


class DDPGTrainer(TorchrlOffPolicyForm, ddpg.DDPGTrainer):
    """:class:`rl_trainers.algorithms.ddpg.DDPGTrainer`, in torchrl's form too (as
    :class:`TD3Trainer`'s)."""
