"""Errors the library raises for an invalid setting, below the app that reports them.

:class:`ConfigError` names the field, the value and what is allowed. The library's builders
(e.g. :mod:`rl_trainers.modules.model_builders`) raise it, as do the config checks
(:mod:`rl_trainers.configs.validation`) and the algorithm trainers' build steps
(:class:`ComponentError`: a config node that could not be built); the Hydra app
(:mod:`rl_trainers.app.errors`) prints each as one ``Error:`` line, and a
:class:`ConfigWarning` or :class:`EnvWarning` as one ``Warning:`` line
(:func:`warnings_as_lines`).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator

__all__ = [
    "ComponentError",
    "ConfigError",
    "ConfigWarning",
    "EnvWarning",
    "RunError",
    "TrainingError",
    "warnings_as_lines",
]


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is invalid: {allowed}")


class ConfigWarning(UserWarning):
    """A legal setting that is likely a mistake (e.g. a log interval the run never reaches);
    the app prints it as one ``Warning:`` line."""


class EnvWarning(RuntimeWarning):
    """A warning about an environment: of the library it runs on (MuJoCo's, about a
    gymnasium model file), or a state a resumed run cannot restore; passed on once per
    process, the app prints it as one ``Warning:`` line."""


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """While the block runs, a shown :class:`ConfigWarning` or :class:`EnvWarning` is one
    ``Warning: <message>`` line on stderr instead of Python's file, line number and source
    line; other warnings keep their format, and filters (``-W error``, ``pytest.warns``)
    act as usual."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (ConfigWarning, EnvWarning)):
            print(f"Warning: {message}", file=sys.stderr if file is None else file)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


class ComponentError(ConfigError):
    """A config node could not be turned into its component; the message says why."""

    def __init__(self, node: str, cause: BaseException) -> None:
        self.node = node
        self.cause = cause
        ValueError.__init__(self, f"could not build '{node}': {cause}")


class RunError(ValueError):
    """A directory that is not a run, a run without a checkpoint, a checkpoint that does not
    belong to the run, a missing optional dependency: one line for the user of a trained
    run (``rl_trainers.load_policy``, ``rl-trainers eval|enjoy|export|results``)."""


class TrainingError(RuntimeError):
    """A run started by :func:`rl_trainers.train` stopped on an error: the message is the
    run's ``Error:`` line (a mistake in the overrides, a run directory in use...) or, for a
    crash, its exit status and the end of its output."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode
