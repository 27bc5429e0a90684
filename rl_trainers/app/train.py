"""The Hydra entry point of every algorithm.

``rl-trainers <algorithm> ...``, ``python -m rl_trainers <algorithm> ...`` and
``sota-implementations/<algorithm>_trainer/train.py`` all call :func:`main`, which runs
:func:`train` through ``hydra.main`` on the packaged recipes (once, or once per job of a
sweep), inside the blocks that turn a user's mistake into one ``Error:`` line.
"""

from __future__ import annotations

import contextlib
import os
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
        check_saved_config(cfg)
        return run(cfg)


def check_saved_config(cfg: DictConfig) -> None:
    """A run's saved config run again (``--config-path <run>/.hydra --config-name config``)
    has no config groups and names its algorithm: a group option given to it
    (``env=pendulum``) or another algorithm's app is one ``Error:`` line."""
    from omegaconf import DictConfig as Node

    from rl_trainers.errors import ConfigError

    from .compose_errors import no_groups_error
    from .launch import command_of, running_algorithm

    app = running_algorithm()
    if app is not None and cfg.get("algorithm") not in (None, app):
        raise ConfigError(
            "algorithm",
            cfg.algorithm,
            f"this config is a {cfg.algorithm} run's: run it with {command_of(cfg.algorithm)}",
        )
    for group in ("env", "optimizer", "logger", "collector", "network"):
        if group in cfg and not isinstance(cfg._get_node(group), Node):
            raise no_groups_error(group, cfg._get_node(group)._value())


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
    args = _config_path_from_here(list(sys.argv[1:] if argv is None else argv))
    started(algorithm, program)
    check_options(algorithm, args)
    check_overrides(algorithm, args)
    sys.argv = [sys.argv[0], *translate_torchrl_overrides(args)]  # what hydra.main reads
    hydra_main = hydra.main(
        config_path=RECIPES_DIR, config_name=f"{algorithm}_trainer", version_base=None
    )(train)
    with composition_errors():  # unknown fields, options or presets: one line, exit 2
        hydra_main()


def _config_path_from_here(args: list[str]) -> list[str]:
    """``--config-path`` (``-cp``) relative to the working directory, where Hydra would look
    for it beside the app's package (``--config-path run/.hydra`` of a saved run)."""
    out = list(args)
    for i, word in enumerate(out):
        name, eq, value = word.partition("=")
        if name not in ("--config-path", "-cp"):
            continue
        if not eq and i + 1 < len(out):
            name, value = word, out[i + 1]
        if value and not os.path.isabs(value) and os.path.isdir(value):
            if eq:
                out[i] = f"{name}={os.path.abspath(value)}"
            else:
                out[i + 1] = os.path.abspath(value)
    return out


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


def check_overrides(algorithm: str, args: Sequence[str]) -> None:
    """The words Hydra would refuse with its parser's text or a traceback, as one ``Error:``
    line: a bare word (``CartPole-v1``, ``trainer.total_frames 1000``, as SB3's scripts
    take them), an override Hydra's grammar cannot read (``lr=3e-4,``, ``lr==3e-4``), ``-m``
    with ``--cfg``, and a run directory that is a file."""
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    from .errors import report_and_exit
    from .launch import command_of

    takes_value = {s for a in get_args_parser()._actions if a.nargs != 0 for s in a.option_strings}
    command = command_of(algorithm)
    parser = OverridesParser.create()
    for i, word in enumerate(args):
        if word.startswith("-") or (i and args[i - 1] in takes_value):
            continue  # an option, or an option's value (--cfg job, -cn config)
        if "=" not in word and not word.startswith("~"):
            report_and_exit(f"{word} is not an override: {_bare_word_hint(algorithm, args, i)}")
        try:
            parser.parse_overrides([word])
        except OverrideParseException:
            report_and_exit(f"{word} is not an override Hydra can read: {_grammar_hint(word)}")
        key, _, value = word.partition("=")
        if key in ("hydra.run.dir", "hydra.sweep.dir") and os.path.isfile(value):
            report_and_exit(f"{word}: {value} is a file; a run directory is a directory")
    if {"-m", "--multirun"} & set(args) and any(
        a in ("-c", "--cfg") or a.startswith("--cfg=") for a in args
    ):
        report_and_exit(
            "-m and --cfg do not go together: --cfg prints the config of one run; leave -m "
            f"out and give one value per field to see a job's ({command} --cfg job seed=1)"
        )


def _bare_word_hint(algorithm: str, args: Sequence[str], i: int) -> str:
    """What a bare word on the command line was meant to be."""
    from rl_trainers.configs.field_names import field_paths

    from .mujoco_presets import env_option_id, env_option_of, env_override

    word = args[i]
    said = "settings are Hydra overrides, field=value"
    if env_option_of(word) or env_option_id(word) or _is_gym_id(word):
        return f"{said} ({env_override(word)})"
    following = args[i + 1] if i + 1 < len(args) else None
    if word in field_paths(algorithm) and following and "=" not in following:
        return f"{said} ({word}={following})"
    return f"{said}, e.g. optimizer.lr=3e-4"


def _is_gym_id(word: str) -> bool:
    import gymnasium

    return word in gymnasium.envs.registry


def _grammar_hint(word: str) -> str:
    """Why Hydra's override grammar refuses ``word``, in a user's terms."""
    key, _, value = word.partition("=")
    if value.startswith("="):
        return f"one '=' between the field and its value ({key}={value.lstrip('=')})"
    if value.endswith(","):
        return f"a comma separates a sweep's values, each after -m ({key}={value.rstrip(',')})"
    return (
        "quote a value holding spaces, commas, brackets or '=' "
        f"('{key}=\"{value}\"'); https://hydra.cc/docs/advanced/override_grammar/basic"
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
