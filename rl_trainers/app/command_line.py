"""The app's command line read before Hydra reads it: what Hydra would answer with its
usage, its parser's text or a traceback (an argparse-style option, rl-zoo's command line, a
bare word, an override its grammar refuses) becomes one ``Error:`` line naming what to
write; ``--config-path`` is taken relative to the working directory."""

from __future__ import annotations

import os
from collections.abc import Sequence


def config_path_from_here(args: list[str]) -> list[str]:
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


def options_first(args: Sequence[str]) -> list[str]:
    """``args`` with Hydra's options (and their values) before the overrides, each kind in
    its order: Hydra reads the overrides as one run of words, so an option between two
    overrides (``env=pendulum --cfg job optimizer=adamw``, ``-m hydra/launcher=joblib
    --config-dir mine seed=0,1``) left the later ones to argparse, which refused them
    (``unrecognized arguments``)."""
    from hydra._internal.utils import get_args_parser

    actions = {s: a for a in get_args_parser()._actions for s in a.option_strings}
    options: list[str] = []
    overrides: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        action = actions.get(word)
        if action is None:
            (options if word.startswith("-") else overrides).append(word)
            i += 1
            continue
        i += 1
        following = args[i] if i < len(args) else None
        if following is not None and following.startswith("-"):
            following = None
        if action.nargs == "?":
            if following is not None and (action.choices is None or following in action.choices):
                options += [word, following]
                i += 1
            else:  # its default value, written out: argparse would take the next override
                options.append(f"{action.option_strings[0]}={action.const}")
            continue
        options.append(word)
        if action.nargs is None and following is not None:
            options.append(following)
            i += 1
    return options + overrides


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
    from .rl_zoo import NOTES, option_overrides, rl_zoo_hint, split_options

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
    zoo_args = [a for a in args if a.partition("=")[0] not in hydra_options]
    write += rl_zoo_hint(algorithm, zoo_args, command, meant)
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
    multirun = bool({"-m", "--multirun"} & set(args)) or any(
        a.lstrip("+").replace(" ", "") == "hydra.mode=MULTIRUN" for a in args
    )
    if not multirun:
        _check_no_sweep(args, takes_value, command)
    if {"-m", "--multirun"} & set(args) and any(
        a in ("-c", "--cfg") or a.startswith("--cfg=") for a in args
    ):
        report_and_exit(
            "-m and --cfg do not go together: --cfg prints the config of one run; leave -m "
            f"out and give one value per field to see a job's ({command} --cfg job seed=1)"
        )


def _check_no_sweep(args: Sequence[str], takes_value: set[str], command: str) -> None:
    """A sweep (``seed=0,1``, ``seed=range(3)``) without ``-m``: one ``Error:`` line saying to
    add it, where Hydra printed a paragraph (``Ambiguous value for argument...``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .errors import report_and_exit

    parser = OverridesParser.create()
    for i, word in enumerate(args):
        if word.startswith("-") or (i and args[i - 1] in takes_value) or "=" not in word:
            continue
        try:
            (override,) = parser.parse_overrides([word])
        except Exception:  # noqa: BLE001 - reported above
            continue
        if override.is_sweep_override():
            key, _, value = word.partition("=")
            string = (
                f" (or, for one string value, quote it: {key}='{value}')" if "," in value else ""
            )
            report_and_exit(f"{word} is a sweep, which runs with -m: {command} -m {word}{string}")


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
