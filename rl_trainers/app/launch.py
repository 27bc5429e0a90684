"""How the running app was started, so that the commands it suggests (the ``Continue with:``
line of a stopped run, the command for another algorithm's preset) are typed the same way."""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: The words before the algorithm when the app runs as a subcommand (``rl-trainers``, or
#: ``python -m rl_trainers``); empty when a ``train.py`` script runs it.
_program: tuple[str, ...] = ()
#: The algorithm the app runs (``ppo``), once :func:`started` recorded it.
_algorithm: str | None = None


def started(algorithm: str, program: Sequence[str] = ()) -> None:
    """Record that the app runs ``algorithm``: as ``<program> <algorithm>`` (``rl-trainers
    ppo``), or, with no ``program``, as the script ``sys.argv[0]`` (a ``train.py``)."""
    global _program, _algorithm
    _program, _algorithm = tuple(program), algorithm


def running_algorithm() -> str | None:
    """The algorithm :func:`started` recorded, or None."""
    return _algorithm


def app_words(world_size: int = 1) -> list[str]:
    """The words that start the running app, before its overrides: ``rl-trainers ppo``, or
    ``python <script>``; with several processes ``torchrun --nproc_per_node=N`` and the
    script, or ``-m rl_trainers ppo``."""
    launcher = ["torchrun", f"--nproc_per_node={world_size}"] if world_size > 1 else []
    if _program and _algorithm:
        if launcher:
            return [*launcher, "-m", "rl_trainers", _algorithm]
        return [*_program, _algorithm]
    return [*(launcher or ["python"]), sys.argv[0]]


def command_of(algorithm: str) -> str:
    """The command that runs ``algorithm``'s app, in the form this one was started with:
    ``rl-trainers sac``, or ``python sota-implementations/sac_trainer/train.py``."""
    if _program:
        return " ".join([*_program, algorithm])
    return f"python sota-implementations/{algorithm}_trainer/train.py"
