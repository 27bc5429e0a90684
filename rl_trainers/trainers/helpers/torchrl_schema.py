"""the ``_target_`` path of torchrl's config nodes' builders: an alias, no logic.

Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are those of
:mod:`rl_trainers.compat.torchrl.schema_builders`.
"""

from rl_trainers.compat.torchrl.schema_builders import (
    build_multi_async_collector,
    build_multi_sync_collector,
    build_ppo_loss,
    build_ppo_trainer,
    build_replay_buffer,
    build_round_robin_writer,
    build_sac_loss,
    build_sac_trainer,
    build_sync_collector,
    build_tanh_normal_model,
    build_value_model,
)

__all__ = [
    "build_multi_async_collector",
    "build_multi_sync_collector",
    "build_ppo_loss",
    "build_ppo_trainer",
    "build_replay_buffer",
    "build_round_robin_writer",
    "build_sac_loss",
    "build_sac_trainer",
    "build_sync_collector",
    "build_tanh_normal_model",
    "build_value_model",
]
