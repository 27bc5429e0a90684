"""Pieces every algorithm trainer shares: building from a config, evaluation, episode logs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDictBase

from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.trainers.algorithms.errors import ComponentError, ConfigError
from rl_trainers.trainers.trainer import TrainerHookBase


def build(cfg: DictConfig, node: str, **kwargs: Any) -> Any:
    """Instantiate ``cfg[node]``; a failure caused by the config becomes a short :class:`ConfigError`.

    Args:
        cfg: the composed root config.
        node: the name of the node to build (``"env"``, ``"loss"``...).
        **kwargs: runtime arguments the node cannot hold (networks, parameters...).
    """
    try:
        return instantiate(cfg[node], **kwargs)
    except InstantiationException as err:
        cause = err.__cause__ or err
        if isinstance(cause, ConfigError):
            raise cause from None
        if isinstance(cause, (ValueError, KeyError, ImportError, TypeError, OSError)):
            raise ComponentError(node, cause) from cause
        raise


class LogEpisodeReturn(TrainerHookBase):
    """Logs the return and length of the training episodes that ended in each batch.

    Reads ``("next", "episode_reward")`` (the ``RewardSum`` transform) where
    ``("next", "done")`` is set; logs nothing for a batch in which no episode ended.
    """

    def __init__(self, log_pbar: bool = True) -> None:
        self.log_pbar = log_pbar

    def register(self, trainer, name: str = "log_episode_return") -> None:
        trainer.register_op("pre_steps_log", self)

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        done = batch.get(("next", "done"))
        if not done.any():
            return None
        returns = batch.get(("next", "episode_reward"))[done]
        out: dict[str, Any] = {"train/episode_return": returns.mean()}
        if ("next", "step_count") in batch.keys(True):
            out["train/episode_length"] = batch.get(("next", "step_count"))[done].float().mean()
        out["log_pbar"] = self.log_pbar
        return out


def evaluate_episodes(env, policy, episodes: int, deterministic: bool = True) -> list[float]:
    """Returns of ``episodes`` complete episodes of ``policy`` on the batched ``env``.

    Each sub-env contributes its episodes in turn from a fresh reset, so short episodes are
    not over-represented. Rewards are summed as the env gives them (build the evaluation
    env without reward scaling).
    """
    num_envs = env.batch_size.numel() if len(env.batch_size) else 1
    per_env = -(-episodes // num_envs)
    mode = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
    returns: list[list[float]] = [[] for _ in range(num_envs)]
    running = torch.zeros(num_envs)
    td = env.reset()
    with torch.no_grad(), set_exploration_type(mode):
        while min(len(r) for r in returns) < per_env:
            td = policy(td)
            td, next_td = env.step_and_maybe_reset(td)
            running += td.get(("next", "reward")).reshape(num_envs)
            done = td.get(("next", "done")).reshape(num_envs)
            for i in done.nonzero().flatten().tolist():
                returns[i].append(float(running[i]))
                running[i] = 0.0
            td = next_td
    flat = [r for env_returns in returns for r in env_returns[:per_env]]
    return flat[:episodes]


def resolve_logger(cfg: DictConfig, output_dir: Path):
    """Build the logger node with its relative directories placed under the run directory."""
    cfg_logger = cfg.logger
    overrides: dict[str, Any] = {}
    for key in ("log_dir", "save_dir"):
        if key in cfg_logger and cfg_logger[key] is not None and not os.path.isabs(cfg_logger[key]):
            overrides[key] = str(output_dir / cfg_logger[key])
    uri = cfg_logger.get("tracking_uri")
    if uri is not None and "://" not in uri and not os.path.isabs(uri):
        overrides["tracking_uri"] = str(output_dir / uri)
    for key, value in overrides.items():
        if key != "tracking_uri":
            Path(value).mkdir(parents=True, exist_ok=True)
    return build(cfg, "logger", **overrides)


def check_output_dir(output_dir: Path) -> None:
    """Fail before training if the run directory cannot be written."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        probe = output_dir / ".write_test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        raise ConfigError(
            "hydra.run.dir", str(output_dir), f"a writable directory ({err})"
        ) from None


def set_num_threads(requested: int, widest_layer: int) -> int:
    """Set torch's intra-op threads: ``requested``, or 1 for small networks and 2 otherwise."""
    n = requested if requested > 0 else (1 if widest_layer <= 128 else min(2, os.cpu_count() or 1))
    torch.set_num_threads(n)
    return n


def plain_config(cfg: DictConfig) -> dict:
    """The resolved config as plain containers (for hyperparameter logging)."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def orthogonal_init_(module: torch.nn.Module, output_gain: float) -> None:
    """Orthogonal weights (gain sqrt(2) for hidden layers, ``output_gain`` for the last), zero biases."""
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linears):
        gain = output_gain if i == len(linears) - 1 else 2**0.5
        torch.nn.init.orthogonal_(layer.weight, gain=gain)
        torch.nn.init.zeros_(layer.bias)
