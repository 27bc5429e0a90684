"""Checks of a composed config that its schema's types alone cannot express."""

from __future__ import annotations

from omegaconf import DictConfig

from rl_trainers.trainers.algorithms.errors import ConfigError


def _positive(cfg: DictConfig, path: str) -> None:
    node, _, key = path.rpartition(".")
    value = cfg[node][key] if node else cfg[key]
    if value is None or value <= 0:
        raise ConfigError(path, value, "a positive number")


def validate_config(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` naming the first invalid field, its value and what is allowed."""
    for path in ("trainer.total_frames", "env.num_envs", "collector.frames_per_batch"):
        _positive(cfg, path)
    if cfg.trainer.log_interval <= 0:
        raise ConfigError(
            "trainer.log_interval", cfg.trainer.log_interval, "a positive number of frames"
        )
    if cfg.trainer.save_trainer_interval < 0:
        raise ConfigError(
            "trainer.save_trainer_interval",
            cfg.trainer.save_trainer_interval,
            "0 (at the end) or a positive number of frames",
        )
    if cfg.eval.episodes <= 0:
        raise ConfigError("eval.episodes", cfg.eval.episodes, "a positive number of episodes")
    frames, envs = cfg.collector.frames_per_batch, cfg.env.num_envs
    workers = cfg.collector.get("num_workers", 1)
    if frames % (envs * workers):
        raise ConfigError(
            "collector.frames_per_batch",
            frames,
            f"a multiple of env.num_envs ({envs})"
            + (f" times collector.num_workers ({workers})" if workers > 1 else "")
            + f", e.g. {max(1, frames // (envs * workers)) * envs * workers}",
        )
    if cfg.algorithm == "ppo":
        _positive(cfg, "trainer.num_epochs")
        _positive(cfg, "trainer.minibatch_size")
        if cfg.trainer.minibatch_size > frames:
            raise ConfigError(
                "trainer.minibatch_size",
                cfg.trainer.minibatch_size,
                f"at most collector.frames_per_batch ({frames})",
            )
        if not cfg.model.policy.get("return_log_prob", True):
            raise ConfigError(
                "model.policy.return_log_prob",
                False,
                "must be true, PPO's probability ratio needs the log-probability of each collected action",
            )
    if cfg.algorithm == "sac":
        _positive(cfg, "replay_buffer.size")
        _positive(cfg, "replay_buffer.batch_size")
        if cfg.trainer.learning_starts < 0:
            raise ConfigError(
                "trainer.learning_starts",
                cfg.trainer.learning_starts,
                "0 or a positive number of frames",
            )
