"""Make ``import rl_trainers`` enough to resolve a saved run config with bare OmegaConf.

A run's ``.hydra/config.yaml`` holds ``trainer._config_: ${rl_trainers.root_config:}``;
OmegaConf refuses to resolve it unless that resolver is registered, which the config
package (:mod:`rl_trainers.trainers.algorithms.configs`) does when imported. Importing
omegaconf with every ``import rl_trainers`` would cost ~0.1 s, so :func:`install` waits:
right after ``omegaconf`` executes (or at once if it already has), it registers a stand-in
that hands each call to the config package's resolver, importing that package on the first
call only.
"""

from __future__ import annotations

from typing import Any

from rl_trainers._import_hooks import call_after_import

__all__ = ["install"]

_OMEGACONF = "omegaconf"
#: the name ``${rl_trainers.root_config:}`` uses (``configs.common.ROOT_CONFIG_RESOLVER``)
_RESOLVER = "rl_trainers.root_config"


def _root_config(*, _root_: Any, _node_: Any) -> Any:
    """``${rl_trainers.root_config:}``, by the config package's resolver."""
    from rl_trainers.trainers.algorithms.configs.common import _root_config as resolve

    return resolve(_root_=_root_, _node_=_node_)


def _register(omegaconf: Any) -> None:
    if not omegaconf.OmegaConf.has_resolver(_RESOLVER):
        omegaconf.OmegaConf.register_new_resolver(_RESOLVER, _root_config)


def install() -> None:
    """Register the resolver now if omegaconf is loaded, else right after it is (idempotent)."""
    call_after_import(_OMEGACONF, _register)
