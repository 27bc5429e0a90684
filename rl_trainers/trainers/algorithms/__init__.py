"""Algorithm trainers built on the shared :class:`~rl_trainers.trainers.Trainer` loop.

``build_trainer(cfg, output_dir)`` picks the trainer class named by ``cfg.algorithm`` from
:data:`TRAINERS`; a new algorithm adds its class here and its root config in ``configs/``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.trainers.algorithms.a2c import A2CTrainer
from rl_trainers.trainers.algorithms.ddpg import DDPGTrainer
from rl_trainers.trainers.algorithms.dqn import DQNTrainer
from rl_trainers.trainers.algorithms.errors import ConfigError
from rl_trainers.trainers.algorithms.on_policy import OnPolicyTrainer
from rl_trainers.trainers.algorithms.pg import PGTrainer, ReinforceTrainer
from rl_trainers.trainers.algorithms.ppo import PPOTrainer
from rl_trainers.trainers.algorithms.sac import SACTrainer
from rl_trainers.trainers.algorithms.td3 import TD3Trainer

#: algorithm name (``cfg.algorithm``) -> trainer class with a ``from_config`` builder.
TRAINERS: dict[str, type] = {
    "ppo": PPOTrainer,
    "sac": SACTrainer,
    "dqn": DQNTrainer,
    "td3": TD3Trainer,
    "ddpg": DDPGTrainer,
    "a2c": A2CTrainer,
    "pg": PGTrainer,
}


def build_trainer(cfg: DictConfig, output_dir: Path):
    """The algorithm trainer ``cfg`` describes, with every component built and seeded."""
    from rl_trainers.trainers.algorithms.validation import typed_config, validate_config
    from rl_trainers.trainers.distributed import get_rank

    cfg = typed_config(cfg)
    with warnings.catch_warnings():
        if get_rank() != 0:  # data-parallel: every rank validates, rank 0 warns once
            warnings.simplefilter("ignore")
        validate_config(cfg)
    try:
        trainer_class = TRAINERS[cfg.algorithm]
    except KeyError:
        raise ConfigError("algorithm", cfg.algorithm, f"one of {sorted(TRAINERS)}") from None
    return trainer_class.from_config(cfg, Path(output_dir))


__all__ = [
    "TRAINERS",
    "A2CTrainer",
    "OnPolicyTrainer",
    "PGTrainer",
    "ConfigError",
    "DDPGTrainer",
    "DQNTrainer",
    "PPOTrainer",
    "ReinforceTrainer",
    "SACTrainer",
    "TD3Trainer",
    "build_trainer",
]
