"""torchrl's path ``torchrl.trainers.helpers``: builders, an alias, no logic.

The Hydra nodes' builders are rl_trainers' own (:mod:`rl_trainers.algorithms.components`,
re-exported here, as configs saved by earlier versions name them). torchrl's call forms
(``make_trainer``, ``make_collector_onpolicy``, ``transformed_env_constructor``...: a plain
config object, torchrl's field names) are in :mod:`rl_trainers.compat.torchrl.helpers`,
loaded from here on first use; ``make_replay_buffer`` here takes both forms.
"""

from rl_trainers.algorithms.components import (
    activation_class,
    make_a2c_loss,
    make_ddpg_loss,
    make_dqn_loss_module,
    make_env,
    make_lr_scheduler,
    make_ppo_loss,
    make_reinforce_loss,
    make_sac_loss,
    make_td3_loss,
    seed_everything,
)
from rl_trainers.algorithms.malloc import keep_freed_memory

#: torchrl's builders, in torchrl's call form (:mod:`rl_trainers.compat.torchrl.helpers`)
TORCHRL_HELPER_NAMES = (
    "correct_for_frame_skip",
    "get_stats_random_rollout",
    "make_collector_offpolicy",
    "make_collector_onpolicy",
    "make_dqn_loss",
    "make_replay_buffer",
    "make_target_updater",
    "make_trainer",
    "parallel_env_constructor",
    "sync_async_collector",
    "sync_sync_collector",
    "transformed_env_constructor",
)


def __getattr__(name: str):
    if name not in TORCHRL_HELPER_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rl_trainers.compat.torchrl import helpers

    value = getattr(helpers, name)
    globals()[name] = value
    return value


__all__ = [
    *TORCHRL_HELPER_NAMES,
    "activation_class",
    "keep_freed_memory",
    "make_a2c_loss",
    "make_ddpg_loss",
    "make_dqn_loss_module",
    "make_env",
    "make_lr_scheduler",
    "make_ppo_loss",
    "make_reinforce_loss",
    "make_sac_loss",
    "make_td3_loss",
    "seed_everything",
]
