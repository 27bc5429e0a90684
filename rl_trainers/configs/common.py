"""The one helper every config node uses: a typed field with a one-line description."""

from __future__ import annotations

import copy
from dataclasses import MISSING, field, fields, is_dataclass
from typing import Any


def config_field(default: Any = MISSING, help: str = "") -> Any:  # noqa: A002
    """A dataclass field carrying its one-line description in ``metadata["help"]``.

    Mutable defaults (lists, dicts) are copied per instance.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Node:
        ...     lr: float = config_field(3e-4, "learning rate")
    """
    metadata = {"help": help}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    if is_dataclass(default) and not isinstance(default, type):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def field_help(node: type) -> dict[str, str]:
    """The one-line description of each field of a config dataclass."""
    return {f.name: f.metadata.get("help", "") for f in fields(node) if not f.name.startswith("_")}


# ----------------------------------------------------------------------------- the root config

#: The OmegaConf resolver that hands the composed root config to the ``trainer`` node's
#: ``_target_`` (``trainer._config_: ${rl_trainers.root_config:}``).
ROOT_CONFIG_RESOLVER = "rl_trainers.root_config"
ROOT_CONFIG_INTERPOLATION = f"${{{ROOT_CONFIG_RESOLVER}:}}"


class ComposedConfig:
    """The composed root config, as ``hydra.utils.instantiate(cfg.trainer)`` passes it to the
    trainer's builder (an opaque holder: OmegaConf neither copies nor resolves it).

    Args:
        root: the root config the ``trainer`` node belongs to.
    """

    def __init__(self, root: Any) -> None:
        self.root = root

    def __repr__(self) -> str:
        return "ComposedConfig(<the composed root config>)"


def _root_config(*, _root_: Any, _node_: Any) -> ComposedConfig | str:
    """The value of ``${rl_trainers.root_config:}``.

    Hydra's ``instantiate`` resolves a node's interpolations on a copy that allows objects
    and keeps the node's parent, so there the root config arrives, wrapped. Everywhere
    else (``OmegaConf.to_yaml(cfg, resolve=True)``, ``to_container``, ``OmegaConf.resolve``,
    ``--cfg job --resolve``) the value is the interpolation itself, a fixed point: resolving
    the whole config never recurses into itself, and a resolved copy still instantiates.
    """
    if _node_._get_flag("allow_objects"):
        return ComposedConfig(_root_)
    return ROOT_CONFIG_INTERPOLATION


def register_root_resolver() -> None:
    """Register ``${rl_trainers.root_config:}`` with OmegaConf (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(ROOT_CONFIG_RESOLVER):
        OmegaConf.register_new_resolver(ROOT_CONFIG_RESOLVER, _root_config)
