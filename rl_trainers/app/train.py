"""The Hydra entry point of every algorithm.

``rl-trainers <algorithm> ...``, ``python -m rl_trainers <algorithm> ...`` and
``sota-implementations/<algorithm>_trainer/train.py`` all call :func:`main`, which runs
:func:`train` through ``hydra.main`` on the packaged recipes (once, or once per job of a
sweep), inside the blocks that turn a user's mistake into one ``Error:`` line.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

import hydra
from omegaconf import DictConfig

from . import RECIPES_DIR, help_page  # noqa: F401 - help_page stores each --help page
from .command_line import check_options, check_overrides, config_path_from_here
from .compose_errors import composition_errors
from .errors import user_errors
from .launch import started
from .overrides import translate_torchrl_overrides
from .run import run


def train(cfg: DictConfig) -> float:
    """One run of the composed config, the task Hydra runs; returns the mean evaluation
    return (what a Hydra sweeper optimises)."""
    with user_errors():
        check_saved_config(cfg)
        return run(cfg)


def check_saved_config(cfg: DictConfig) -> None:
    """A run's saved config run again (``--config-path <run>/.hydra --config-name config``)
    has no config groups and names its algorithm: another algorithm's app or a group option
    given to it (``env=pendulum``) is one ``Error:`` line, before anything reads the
    config."""
    from rl_trainers.configs.validation import typed_config
    from rl_trainers.errors import ConfigError

    from .launch import command_of, running_algorithm

    app = running_algorithm()
    if app is not None and cfg.get("algorithm") not in (None, app):
        raise ConfigError(
            "algorithm",
            cfg.algorithm,
            f"this config is a {cfg.algorithm} run's: run it with {command_of(cfg.algorithm)}",
        )
    typed_config(cfg)


def main(algorithm: str, argv: Sequence[str] | None = None, program: Sequence[str] = ()) -> None:
    """Run ``algorithm``'s app (``ppo``: the recipe ``ppo_trainer.yaml``) on the command line
    ``argv`` (default: ``sys.argv[1:]``): Hydra's overrides and flags (``--help``,
    ``--cfg job``, ``-m``), torchrl's override names translated.

    Args:
        algorithm: the algorithm, e.g. ``ppo``.
        argv: the words after the command.
        program: the words of the command before the algorithm (``["rl-trainers"]``), for
            the commands the app prints; empty for a ``train.py`` script.
    """
    args = config_path_from_here(list(sys.argv[1:] if argv is None else argv))
    started(algorithm, program)
    check_options(algorithm, args)
    check_overrides(algorithm, args)
    sys.argv = [sys.argv[0], *translate_torchrl_overrides(args)]  # what hydra.main reads
    hydra_main = hydra.main(
        config_path=RECIPES_DIR, config_name=f"{algorithm}_trainer", version_base=None
    )(train)
    with composition_errors():  # unknown fields, options or presets: one line, exit 2
        hydra_main()


def _report_composition_errors_in_workers() -> contextlib.AbstractContextManager | None:
    """joblib's workers (loky processes, which import this module to run :func:`train`)
    compose each job's config themselves, outside the ``composition_errors`` block of
    :func:`main`: enter it for the worker's lifetime, so a mistake in a job's overrides (an
    Optuna search space naming an unknown field) is one ``Error:`` line there too."""
    import multiprocessing

    if not multiprocessing.current_process().name.startswith("LokyProcess"):
        return None
    block = composition_errors(in_launcher_worker=True)
    block.__enter__()
    return block


# kept: the block ends (and Hydra's loader is restored) when it is garbage-collected
_WORKER_COMPOSITION_ERRORS = _report_composition_errors_in_workers()
