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
from .compose_errors import composition_errors
from .errors import user_errors
from .launch import started
from .overrides import translate_torchrl_overrides
from .run import run


def train(cfg: DictConfig) -> float:
    """One run of the composed config, the task Hydra runs; returns the mean evaluation
    return (what a Hydra sweeper optimises)."""
    with user_errors():
        return run(cfg)


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
    args = list(sys.argv[1:] if argv is None else argv)
    started(algorithm, program)
    check_options(algorithm, args)
    sys.argv = [sys.argv[0], *translate_torchrl_overrides(args)]  # what hydra.main reads
    hydra_main = hydra.main(
        config_path=RECIPES_DIR, config_name=f"{algorithm}_trainer", version_base=None
    )(train)
    with composition_errors():  # unknown fields, options or presets: one line, exit 2
        hydra_main()


def check_options(algorithm: str, args: Sequence[str]) -> None:
    """An argparse-style option (``--episodes 3``, ``-n 100000``, as SB3 and rl-zoo scripts
    take them) is one ``Error:`` line naming the override to write, where Hydra printed its
    whole usage."""
    from rl_trainers.configs.field_names import suggest_field

    from .errors import report_and_exit
    from .launch import command_of
    from .mujoco_presets import env_override

    if not any(arg.startswith("-") for arg in args):
        return
    from hydra._internal.utils import get_args_parser  # the parser hydra.main reads argv with

    hydra_options = {
        s for action in get_args_parser()._actions for s in action.option_strings
    }  # --cfg, --multirun, --info, -m...
    for i, arg in enumerate(args):
        if not arg.startswith("-") or _is_number(arg):
            continue
        dashes = "--" if arg.startswith("--") else "-"
        name, eq, value = arg.removeprefix(dashes).partition("=")
        if not name or f"{dashes}{name}" in hydra_options:
            continue
        if not eq and i + 1 < len(args) and "=" not in args[i + 1]:
            value = args[i + 1]
        if dashes == "-":
            name = RL_ZOO_SHORT_OPTIONS.get(name, name)
        meant = suggest_field(algorithm, name.replace("-", "_"))
        write = f" ({meant}={value or '<value>'})" if meant else ""
        if meant == "env" and value:  # rl-zoo's --env takes a gymnasium id
            write = f" ({env_override(value)})"
        report_and_exit(
            f"{arg} is not an option: settings are Hydra overrides, field=value{write}; "
            f"{command_of(algorithm)} --help lists every field"
        )


#: rl-zoo's one-dash options, by the name of the setting they stand for
RL_ZOO_SHORT_OPTIONS = {"n": "n_timesteps"}


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


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
