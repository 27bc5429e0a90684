"""The algorithm trainers, one module per algorithm, each with one constructor.

``build_trainer(cfg, output_dir)`` picks the trainer class named by ``cfg.algorithm`` from
:data:`TRAINERS` and builds it from the config; a new algorithm adds its class here and its
recipe in ``rl_trainers/app/recipes/``. torchrl's constructor forms of these classes are in
:mod:`rl_trainers.compat.torchrl.trainers`.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.errors import ConfigError

# the trainer classes are loaded on first use (``TRAINERS``, ``build_trainer``, ``from
# rl_trainers.algorithms import SACTrainer``): the app, which imports this package for
# ``--help`` and config errors, does not load torch
_CLASSES = {
    "A2CTrainer": "a2c",
    "DDPGTrainer": "ddpg",
    "DQNTrainer": "dqn",
    "OffPolicyTrainer": "off_policy",
    "OnPolicyTrainer": "on_policy",
    "PGTrainer": "pg",
    "PPOTrainer": "ppo",
    "SACTrainer": "sac",
    "TD3Trainer": "td3",
}
#: algorithm name (``cfg.algorithm``) -> trainer class name (see :data:`TRAINERS`).
TRAINER_NAMES = {
    "ppo": "PPOTrainer",
    "sac": "SACTrainer",
    "dqn": "DQNTrainer",
    "td3": "TD3Trainer",
    "ddpg": "DDPGTrainer",
    "a2c": "A2CTrainer",
    "pg": "PGTrainer",
}


def __getattr__(name: str):
    if name == "TRAINERS":
        value = {algo: __getattr__(cls) for algo, cls in TRAINER_NAMES.items()}
    elif name in _CLASSES:
        module = importlib.import_module(f"{__name__}.{_CLASSES[name]}")
        value = getattr(module, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def build_trainer(cfg: DictConfig, output_dir: Path):
    """The algorithm trainer ``cfg`` describes, with every component built and seeded."""
    from omegaconf import open_dict

    from rl_trainers.configs.validation import resolve_device, typed_config, validate_config

    rank = 0  # without torch loaded no process group is initialised (a config error is quick)
    if "torch" in sys.modules:
        from rl_trainers.core.distributed import get_rank

        rank = get_rank()
    cfg = typed_config(cfg)
    with warnings.catch_warnings():
        if rank != 0:  # data-parallel: every rank validates, rank 0 warns once
            warnings.simplefilter("ignore")
        validate_config(cfg)
    if cfg.device == "auto":  # the device it trains on, from here on
        with open_dict(cfg):
            cfg.device = resolve_device(cfg.device)
    try:
        trainer_class = __getattr__(TRAINER_NAMES[cfg.algorithm])
    except KeyError:
        raise ConfigError("algorithm", cfg.algorithm, f"one of {sorted(TRAINER_NAMES)}") from None
    return trainer_class.from_config(cfg, Path(output_dir))


__all__ = [
    "TRAINERS",
    "TRAINER_NAMES",
    "A2CTrainer",
    "DDPGTrainer",
    "DQNTrainer",
    "OffPolicyTrainer",
    "OnPolicyTrainer",
    "PGTrainer",
    "PPOTrainer",
    "SACTrainer",
    "TD3Trainer",
    "build_trainer",
]
