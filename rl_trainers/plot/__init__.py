"""Learning curves of rl_trainers runs: ``python -m rl_trainers.plot <run or sweep dir>``.

:func:`find_runs` finds the runs (directories with ``.hydra/config.yaml``) and where their
logs are, :func:`group_runs` puts runs that differ only by seed together, :func:`aggregate`
makes one mean/std/min/max curve per group; :func:`main` is the command line
(``rl-trainers-plot``). See ``docs/plotting.md``.
"""

from .cli import main
from .curves import IGNORED_KEYS, Curve, Group, aggregate, common_range, group_runs, smooth
from .runs import PlotError, Run, find_runs, read_series

__all__ = [
    "IGNORED_KEYS",
    "Curve",
    "Group",
    "PlotError",
    "Run",
    "aggregate",
    "common_range",
    "find_runs",
    "group_runs",
    "main",
    "read_series",
    "smooth",
]
