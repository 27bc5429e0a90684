"""What a user sees when a run stops on their mistake: one ``Error:`` line, exit status 2.

A :class:`~rl_trainers.errors.ConfigError` (or a bad checkpoint, a broken environment...)
raised while the app runs prints as ``Error: <message>`` on stderr, with a hint to set
``HYDRA_FULL_ERROR=1`` for the traceback; a :class:`ConfigWarning` prints as one
``Warning:`` line. In a sweep (``-m``) a job's error fails that job (:class:`JobFailed`)
and the other jobs run on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import typing
from collections.abc import Iterator

from hydra.errors import CompactHydraException

from rl_trainers.errors import ConfigError, warnings_as_lines

from .run_log import run_log


def _user_error_types() -> tuple[type[BaseException], ...]:
    """:class:`ConfigError`, and the errors of the modules that raise the others if those
    modules are loaded (else nothing raised them; a config error prints without loading
    torch)."""
    found: list[type[BaseException]] = [ConfigError]
    for module, names in (
        ("rl_trainers.core.checkpoint", ("CheckpointError",)),
        ("rl_trainers.core.loop", ("NonFiniteLossError",)),
        ("rl_trainers.collectors.collectors", ("NonFiniteBatchError", "EnvError")),
        ("rl_trainers.collectors.watchdog", ("EnvStepTimeout",)),
        ("rl_trainers.collectors.multi", ("CollectorWorkerError",)),
        ("rl_trainers.record.loggers.guard", ("LoggerBackendError",)),
        ("rl_trainers.core.distributed", ("RankLostError",)),
    ):
        if module in sys.modules:
            found.extend(getattr(sys.modules[module], name) for name in names)
    return tuple(found)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`ConfigError` (or a bad checkpoint) into a short message and exit status 2.

    In a job of a sweep (``-m``) the job prints its ``Error:`` line and fails with
    :class:`JobFailed` instead of ending the process: the sweep's other jobs run on (those
    a launcher runs in parallel too), an Optuna study records a failed trial, and the sweep
    ends with that line and status 2 (or, with the Optuna sweeper, goes on while fewer than
    ``hydra.sweeper.max_failure_rate`` of a batch failed).
    With ``HYDRA_FULL_ERROR=1`` the exception propagates with its full traceback.
    A :class:`ConfigWarning` is printed as one ``Warning:`` line.
    Every line printed meanwhile is copied to the run's log file (:func:`run_log`).
    """
    with run_log():
        try:
            with warnings_as_lines():
                yield
        except _user_error_types() as err:
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            line = getattr(err, "summary", None) or str(err)  # a worker's: without its traceback
            from rl_trainers.algorithms.run_dir import in_sweep

            if in_sweep():
                # on the job's own stderr: the terminal, or the job's log file with submitit
                print(f"Error: {line}", file=sys.stderr, flush=True)
                raise JobFailed(f"Error: {line}") from None
            report_and_exit(line)


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
    overrides: [...]`` and this one line, and the app exits with status 2.
    """
