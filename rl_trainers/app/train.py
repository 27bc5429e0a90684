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
from .command_line import check_options, check_overrides, config_path_from_here, options_first
from .compose_errors import composition_errors
from .errors import user_errors
from .launch import started
from .overrides import globs_of_options, translate_torchrl_overrides
from .run import run


def train(cfg: DictConfig) -> float:
    """One run of the composed config, the task Hydra runs; returns the mean evaluation
    return (what a Hydra sweeper optimises)."""
    with user_errors():
        check_saved_config(cfg)
        check_interpolations(cfg)
        return run(cfg)


def check_interpolations(cfg: DictConfig) -> None:
    """Every ``${...}`` of the config resolves: a key that does not exist
    (``optimizer.lr=${loss.gama}``) or an environment variable that is not set
    (``seed=${oc.env:MYSEED}``) is one ``Error:`` line naming the field, before anything
    reads the config (where it was a traceback from whichever check read the field
    first)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import InterpolationResolutionError

    from rl_trainers.errors import ConfigError

    def walk(raw: object, path: str) -> None:
        if isinstance(raw, dict):
            for key, value in raw.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(raw, list):
            for index, value in enumerate(raw):
                walk(value, f"{path}[{index}]")
        elif isinstance(raw, str) and "${" in raw:
            try:
                OmegaConf.select(cfg, path, throw_on_resolution_failure=True)
            except InterpolationResolutionError as err:
                raise ConfigError(path, raw, _unresolved(str(err), paths)) from err

    raw = OmegaConf.to_container(cfg, resolve=False)
    paths = _leaf_paths(raw, "")
    walk(raw, "")


def _leaf_paths(raw: object, path: str) -> list[str]:
    """The dotted paths of the config's values (for a suggestion)."""
    if isinstance(raw, dict):
        return [p for k, v in raw.items() for p in _leaf_paths(v, f"{path}.{k}" if path else k)]
    return [path] if path else []


def _unresolved(message: str, paths: list[str]) -> str:
    """What to write instead of an interpolation that does not resolve (OmegaConf's
    ``message``)."""
    import difflib
    import re

    first = message.splitlines()[0]
    missing = re.search(r"Interpolation key '([^']+)' not found", first)
    if missing:
        key = missing.group(1)
        close = difflib.get_close_matches(key, paths, n=1, cutoff=0.6)
        hint = f": did you mean ${{{close[0]}}}?" if close else ""
        return f"the interpolation's key {key} is not in the config{hint}"
    unset = re.search(r"Environment variable '([^']+)' not found", first)
    if unset:
        name = unset.group(1)
        return (
            f"the environment variable {name} is not set: set it, or give a default, "
            f"${{oc.env:{name},<default>}}"
        )
    return f"its interpolation cannot be resolved: {first}"


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
    if "--help" in args or "-h" in args:  # list the options of the user's config directories
        user_dirs = help_page.user_config_dirs(args)
        if user_dirs:
            help_page.register_help(user_dirs)
    args = options_first(globs_of_options(algorithm, translate_torchrl_overrides(args)))
    sys.argv = [sys.argv[0], *args]  # what hydra.main reads
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
