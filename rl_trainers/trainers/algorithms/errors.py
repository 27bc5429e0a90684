"""The errors a user sees for a bad configuration: one short line, no traceback."""

from __future__ import annotations

import contextlib
import sys
import typing
import warnings
from collections.abc import Iterator

from hydra.errors import CompactHydraException

from rl_trainers.errors import ConfigError  # the library's; re-exported for the app


class ConfigWarning(UserWarning):
    """A legal setting that is likely a mistake (e.g. a log interval the run never reaches);
    the app prints it as one ``Warning:`` line (:func:`config_warnings_as_lines`)."""


@contextlib.contextmanager
def config_warnings_as_lines() -> Iterator[None]:
    """While the block runs, a shown :class:`ConfigWarning` is one ``Warning: <message>``
    line on stderr instead of Python's file, line number and source line; other warnings
    keep their format, and filters (``-W error``, ``pytest.warns``) act as usual."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ConfigWarning):
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


def report_and_exit(message: str) -> typing.NoReturn:
    """Print ``Error: <message>`` and the traceback hint to stderr, then exit with status 2."""
    print(f"Error: {message}", file=sys.stderr)
    print("(set HYDRA_FULL_ERROR=1 for the full traceback)", file=sys.stderr)
    sys.exit(2)


class JobFailed(CompactHydraException):
    """A job of a sweep (``-m``) stopped on a user error; the message is its ``Error:`` line.

    Hydra records it as the job's failure instead of ending the process, so the other jobs
    of the sweep run on (a launcher's parallel jobs are not killed, Optuna marks the trial
    failed). When the sweep then stops on it, Hydra prints ``Error executing job with
    overrides: [...]`` and this one line, and ``train.py`` exits with status 2.
    """
