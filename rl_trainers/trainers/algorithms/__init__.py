"""torchrl's path of the algorithm trainers (``torchrl.trainers.algorithms``).

The trainer names here are torchrl's constructor form
(:mod:`rl_trainers.compat.torchrl.trainers`, which takes rl_trainers' form too), loaded on
first use so that the app, which imports this package's config modules, does not load
torch. rl_trainers' own trainers are in :mod:`rl_trainers.algorithms`, with
``build_trainer`` and ``TRAINERS`` (re-exported here). The modules of this package hold the
machinery the trainers share (``base``, ``common``, ``validation``, ``configs``...).
"""

from __future__ import annotations

from rl_trainers.trainers.algorithms.errors import ConfigError

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
