"""torchrl's path of the algorithm trainers (``torchrl.trainers.algorithms``), an alias, no logic.

The trainer names here are torchrl's constructor form
(:mod:`rl_trainers.compat.torchrl.trainers`, which takes rl_trainers' form too), loaded on
first use so that importing ``rl_trainers.trainers.algorithms.configs`` does not load
torch. rl_trainers' own trainers are in :mod:`rl_trainers.algorithms`, with
``build_trainer`` and ``TRAINERS`` (re-exported here). Every submodule is an alias:
torchrl's paths of the trainers (``ppo``, ``sac``...) and of the config schema
(``configs``, the names of :mod:`rl_trainers.configs`).
"""

from __future__ import annotations

from rl_trainers.errors import ConfigError

#: torchrl's names of the algorithm trainers, each in torchrl's constructor form
TORCHRL_TRAINER_NAMES = (
    "A2CTrainer",
    "DDPGTrainer",
    "DQNTrainer",
    "OnPolicyTrainer",
    "PGTrainer",
    "PPOTrainer",
    "ReinforceTrainer",
    "SACTrainer",
    "TD3Trainer",
)


def __getattr__(name: str):
    if name in TORCHRL_TRAINER_NAMES:
        from rl_trainers.compat.torchrl import trainers

        value = getattr(trainers, name)
    elif name in ("TRAINERS", "build_trainer"):
        # rl_trainers.algorithms imports this package's modules: loaded on first use, so
        # that either package can be imported first
        from rl_trainers import algorithms

        value = getattr(algorithms, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "TRAINERS",
    "ConfigError",
    "build_trainer",
    *TORCHRL_TRAINER_NAMES,
]
