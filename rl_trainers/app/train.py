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
    whole usage; for rl-zoo's command line (``--algo sac --env Hopper-v5 -n 300000``), the
    whole command here too."""
    if not any(arg.startswith("-") for arg in args):
        return
    from hydra._internal.utils import get_args_parser  # the parser hydra.main reads argv with

    from .errors import report_and_exit
    from .launch import command_of
    from .rl_zoo import NOTES, command_here, option_overrides, split_options, without_counterpart

    hydra_actions = get_args_parser()._actions
    hydra_options = {s for action in hydra_actions for s in action.option_strings}  # --cfg, -m...
    info_topics = next(a.choices for a in hydra_actions if "--info" in a.option_strings)
    if "-i" in args[:-1] and args[args.index("-i") + 1] not in info_topics:
        hydra_options.discard("-i")  # rl-zoo's -i (--trained-agent) model.zip, not --info
    options = [
        option
        for option in split_options(args)
        if option[1] and option[0].partition("=")[0] not in hydra_options
    ]
    if not options:
        return
    arg, name, values = options[0]
    meant = option_overrides(algorithm, name, values) or ""
    said = "; ".join(filter(None, [meant, NOTES.get(name)]))
    write = f" ({said})" if said else ""
    command = command_of(algorithm)
    whole = command_here(algorithm, args, command)
    if whole is not None and whole != " ".join(filter(None, [command, meant])):
        write += f"; rl-zoo's command line here: {whole}"
    missing = without_counterpart(
        algorithm, [a for a in args if a.partition("=")[0] not in hydra_options]
    )
    if missing:
        write += f"; no counterpart here: {', '.join(missing)}"
    report_and_exit(
        f"{arg} is not an option: settings are Hydra overrides, field=value{write}; "
        f"{command} --help lists every field"
    )


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
