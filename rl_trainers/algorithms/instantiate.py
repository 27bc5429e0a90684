"""What ``hydra.utils.instantiate(cfg.trainer)`` calls: torchrl's entry point on the app's configs.

torchrl's documentation writes an algorithm's script as::

    import hydra
    from rl_trainers.trainers.algorithms.configs import *

    @hydra.main(config_path="configs", config_name="ppo_trainer", version_base=None)
    def main(cfg):
        trainer = hydra.utils.instantiate(cfg.trainer)
        trainer.train()

The ``trainer`` node's ``_target_`` is :func:`trainer_from_config`, and its ``_config_``
field (``${rl_trainers.root_config:}``) hands it the composed root config, so it builds the
trainer the app (``rl-trainers <algorithm>``) builds
(:func:`~rl_trainers.trainers.algorithms.build_trainer`: same validation, seeding,
components and logger), in the same run directory. The
composition API works too::

    from rl_trainers.app import RECIPES_DIR

    with hydra.initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = hydra.compose("ppo_trainer", overrides=["env=pendulum"])
    trainer = hydra.utils.instantiate(cfg.trainer)  # outputs/ppo/Pendulum-v1/<date>_<time>/

Unlike the app's ``run``, ``train()`` does not evaluate at the end nor write
``summary.json``: ``trainer.evaluate_final()`` gives the evaluation returns.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from rl_trainers.configs.common import ROOT_CONFIG_INTERPOLATION, ComposedConfig
from rl_trainers.errors import ConfigError


def trainer_from_config(_config_: ComposedConfig | None = None, **loop: Any):
    """The algorithm trainer of the composed config the ``trainer`` node belongs to.

    Checks the run directory (:func:`run_output_dir`), builds every component as the app
    does, and loads the checkpoint ``trainer.resume``/``trainer.resume_from`` ask for.

    Args:
        _config_: the root config (``${rl_trainers.root_config:}``, resolved by Hydra's
            ``instantiate``).
        **loop: the ``trainer`` node's fields as ``instantiate`` resolved them, with its
            keyword arguments applied (``instantiate(cfg.trainer, total_frames=512)``).

    Raises:
        ValueError: the node is not part of an algorithm's composed config.
        ConfigError: a keyword argument is not a field of the loop, or the config is invalid.
    """
    from rl_trainers.algorithms import build_trainer
    from rl_trainers.algorithms.build import resume_checkpoint
    from rl_trainers.algorithms.run_dir import check_fresh_run_dir

    root = _config_.root if isinstance(_config_, ComposedConfig) else None
    if not isinstance(root, DictConfig) or "algorithm" not in root or "trainer" not in root:
        raise ValueError(
            "instantiate(cfg.trainer) builds the trainer from the whole config the trainer "
            "node belongs to, and this node has none: instantiate the trainer node of a "
            "composed ppo_trainer, sac_trainer, dqn_trainer, td3_trainer, ddpg_trainer, "
            "a2c_trainer or pg_trainer config "
            "(or of OmegaConf.structured("
            f"PPOTrainerConfig)), whose _config_ is {ROOT_CONFIG_INTERPOLATION}"
        )
    out = run_output_dir(root)
    cfg = config_with_loop(root, loop)
    check_fresh_run_dir(cfg, out)
    trainer = build_trainer(cfg, out)
    ckpt = resume_checkpoint(cfg, out)
    if ckpt is not None:
        trainer.load_from_file(ckpt)
        print(f"Resumed from {ckpt} at frame {trainer.collected_frames}.", file=sys.stderr)
    return trainer


def config_with_loop(root: DictConfig, loop: dict[str, Any]) -> DictConfig:
    """A copy of ``root`` (without a ``hydra`` node) whose ``trainer`` fields are ``loop``."""
    from rl_trainers.configs.field_names import suggest_field

    cfg = copy.deepcopy(root)
    cfg._set_parent(None)
    if "hydra" in cfg:
        with open_dict(cfg):
            del cfg["hydra"]
    for key, value in loop.items():
        if key not in cfg.trainer:
            meant = suggest_field(str(cfg.algorithm), f"trainer.{key}")
            hint = f": did you mean {meant}?" if meant else ""
            raise ConfigError(f"trainer.{key}", value, f"not a field of the trainer node{hint}")
        cfg.trainer[key] = value
    return cfg


def run_output_dir(root: DictConfig) -> Path:
    """Where a trainer built by ``instantiate(cfg.trainer)`` writes checkpoints and logs.

    Inside ``@hydra.main``: Hydra's run directory (``hydra.run.dir``, or the job's directory
    of a sweep). From ``hydra.compose(..., return_hydra_config=True)``: its
    ``hydra.run.dir``. Otherwise (``hydra.compose``, a config built by hand) the app's
    layout under the working directory: ``outputs/<algorithm>/<env_name>/<date>_<time>``
    (``<date>_<time>_1``, ``_2``... when that directory exists already).
    """
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        output_dir = HydraConfig.get().runtime.get("output_dir")
        if output_dir:
            return Path(output_dir)
    if "hydra" in root:
        from omegaconf import OmegaConf

        run_dir = OmegaConf.select(root, "hydra.run.dir", default=None)
        if run_dir:
            return Path(str(run_dir)).absolute()
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    base = Path.cwd() / "outputs" / str(root.algorithm) / str(root.env.env_name) / stamp
    # two trainers instantiated within the same second get their own directories
    out, n = base, 1
    while out.exists():
        out, n = base.with_name(f"{stamp}_{n}"), n + 1
    return out
