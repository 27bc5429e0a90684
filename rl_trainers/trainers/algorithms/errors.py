"""The error a user sees for a bad configuration."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is invalid: {allowed}")
