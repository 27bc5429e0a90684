"""The ``rl-trainers`` command (also ``python -m rl_trainers``)::

    rl-trainers ppo env=pendulum trainer.total_frames=50000   # train: any algorithm's app
    rl-trainers ppo --help                                    # its groups and fields
    rl-trainers eval RUN_DIR                                  # the commands on a trained run

``rl-trainers <algorithm> ...`` is ``python sota-implementations/<algorithm>_trainer/train.py
...``: the same recipes, overrides, ``--help``, ``--cfg job``, sweeps (``-m``) and errors.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from . import RECIPES_DIR

#: The commands on a trained run or on run directories (:mod:`rl_trainers.agents.cli`).
AGENT_COMMANDS = ("eval", "enjoy", "export", "results")


def algorithms() -> list[str]:
    """The algorithms with a recipe (``<algorithm>_trainer.yaml``): ``a2c``, ``ddpg``..."""
    return sorted(p.stem.removesuffix("_trainer") for p in Path(RECIPES_DIR).glob("*_trainer.yaml"))


def usage(prog: str = "rl-trainers") -> str:
    """The page ``rl-trainers --help`` prints."""
    return "\n".join(
        [
            f"usage: {prog} <command> ...",
            "",
            "Train (Hydra overrides, --help, --cfg job, -m for a sweep):",
            f"  {{{','.join(algorithms())}}} [group=option] [field=value]",
            f"      e.g. {prog} ppo env=pendulum trainer.total_frames=50000",
            "",
            "Use a trained run:",
            "  eval RUN_DIR [--episodes N] [--seed S] [--stochastic] [--checkpoint PATH]",
            "  enjoy RUN_DIR [--video out.mp4] [--episodes N]",
            "  export RUN_DIR OUT (.pt2, .ts or .onnx) [--format exported|torchscript|onnx]",
            "  results DIR... [--format text|csv|markdown] [--group-by run|KEY,...]",
            "",
            f"{prog} <command> --help for each command's options; {prog} --version.",
        ]
    )


def train_main(
    algorithm: str, argv: Sequence[str] | None = None, program: Sequence[str] = ()
) -> None:
    """Run ``algorithm``'s Hydra app (:func:`rl_trainers.app.train.main`) on ``argv``.

    ``torch._dynamo`` stays unloaded until something compiles
    (:func:`rl_trainers._lazy_dynamo.install`, before tensordict is imported), which keeps
    ``--help``, ``--cfg job`` and config errors quick.
    """
    from rl_trainers import _lazy_dynamo

    _lazy_dynamo.install()
    from .train import main

    main(algorithm, argv, program)


def rl_zoo_hint(argv: Sequence[str], prog: str) -> str:
    """For rl-zoo's command line (``train --algo sac --env Hopper-v5``, as ``python -m
    rl_zoo3.train`` takes it): the command here, else ``""``."""
    from .rl_zoo import rl_zoo_hint, split_options

    words = argv[1:] if argv[0] == "train" else argv
    algo = next((v[0] for _, name, v in split_options(words) if name == "algo" and v), None)
    if algo not in algorithms():
        return f"the algorithm is the command ({prog} ppo ...); " if argv[0] == "train" else ""
    command = f"{prog} {algo}"
    return f"the algorithm is the command ({command} ...){rl_zoo_hint(algo, words, command)}; "


def main(argv: Sequence[str] | None = None, prog: str = "rl-trainers") -> None:
    """``rl-trainers <command> ...``: an algorithm's app, or a command on trained runs."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(prog))
        raise SystemExit(0 if argv else 2)
    if argv[0] in ("-V", "--version"):
        from rl_trainers import __version__

        print(f"rl_trainers {__version__}")
        raise SystemExit(0)
    command, rest = argv[0], argv[1:]
    if command in AGENT_COMMANDS:
        from rl_trainers.agents.cli import run_command

        raise SystemExit(run_command(command, rest))
    if command in algorithms():
        train_main(command, rest, prog.split())
        return
    names = [*algorithms(), *AGENT_COMMANDS]
    close = difflib.get_close_matches(command.lower(), names, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else rl_zoo_hint(argv, prog)
    print(f"Error: unknown command {command!r}: {hint}one of {', '.join(names)}", file=sys.stderr)
    raise SystemExit(2)
