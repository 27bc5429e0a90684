"""Errors the library raises for an invalid setting, below the app that reports them.

:class:`ConfigError` names the field, the value and what is allowed. The library's builders
(e.g. :mod:`rl_trainers.modules.model_builders`) raise it, as do the config checks
(:mod:`rl_trainers.configs.validation`) and the algorithm trainers' build steps
(:class:`ComponentError`: a config node that could not be built); the Hydra app
(:mod:`rl_trainers.app.errors`) prints each as one ``Error:`` line, and a
:class:`ConfigWarning` as one ``Warning:`` line.
"""

from __future__ import annotations

__all__ = ["ComponentError", "ConfigError", "ConfigWarning", "RunError", "TrainingError"]


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
