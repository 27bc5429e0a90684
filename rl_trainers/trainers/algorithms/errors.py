"""The errors building an algorithm trainer raises for a bad configuration; the app
(:mod:`rl_trainers.app.errors`) prints each as one short line, without a traceback."""

from __future__ import annotations

from rl_trainers.errors import ConfigError  # the library's; re-exported for the trainers


class ConfigWarning(UserWarning):
    """A legal setting that is likely a mistake (e.g. a log interval the run never reaches);
    the app prints it as one ``Warning:`` line."""


class ComponentError(ConfigError):
    """A config node could not be turned into its component; the message says why."""

    def __init__(self, node: str, cause: BaseException) -> None:
        self.node = node
        self.cause = cause
        ValueError.__init__(self, f"could not build '{node}': {cause}")


__all__ = ["ComponentError", "ConfigError", "ConfigWarning"]
