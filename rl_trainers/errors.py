"""Errors the library raises for an invalid setting, below the app that reports them.

:class:`ConfigError` names the field, the value and what is allowed. The library's builders
(e.g. :mod:`rl_trainers.modules.model_builders`) raise it; the Hydra app
(:mod:`rl_trainers.app.errors`) prints it as one ``Error:`` line.
"""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is invalid: {allowed}")
