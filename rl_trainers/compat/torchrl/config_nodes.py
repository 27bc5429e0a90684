"""Builders of the torchrl-named env and transform nodes whose fields are not their
component's constructor arguments (``configs/envs.py``, ``configs/transforms.py``).

``BatchedEnvConfig`` targets :func:`make_batched_env`, ``TransformedEnvConfig``
:func:`make_transformed_env` (torchrl's ``base_env`` field) and ``ComposeConfig``
:func:`make_compose` (torchrl's ``transforms`` list); the nodes' ``_target_`` paths name
:mod:`rl_trainers.trainers.helpers.torchrl_nodes`, an alias of this module.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from rl_trainers.configs.envs import GymEnvConfig
from rl_trainers.errors import ConfigError

__all__ = ["make_batched_env", "make_compose", "make_transformed_env"]

#: The ``_target_`` of rl_trainers' root env node (``GymEnvConfig``): a vector env already;
#: also its path at torchrl's helpers package, which configs saved by earlier versions name.
VECTOR_ENV_TARGETS = (GymEnvConfig._target_, "rl_trainers.trainers.helpers.make_env")

#: ``batched_env_type`` values and the vector engine each gives ``GymEnvConfig``.
BATCHED_ENV_TYPES = {"parallel": "async", "serial": "sync"}


def make_batched_env(
    create_env_fn: Any,
    num_workers: int = 1,
    batched_env_type: str = "parallel",
    create_env_kwargs: dict[str, Any] | None = None,
    device: str | None = None,
) -> Any:
    """``num_workers`` copies of the env ``create_env_fn`` describes, stepped as one batch.

    ``create_env_fn`` is a callable returning one env (as for
    :class:`~rl_trainers.envs.ParallelEnv`) or a config node, un-instantiated (the
    ``BatchedEnvConfig`` node sets ``_recursive_: false``). A node that is, or wraps through
    ``base_env``, rl_trainers' ``GymEnvConfig`` (a vector env of ``num_envs`` sub-envs) is
    asked for ``num_workers`` sub-envs: its ``num_envs`` becomes ``num_workers`` and its
    ``vectorization`` ``async`` (``parallel``: one process per sub-env) or ``sync``
    (``serial``: all in this process), so the result has batch size ``[num_workers]`` and the
    node's transforms run once on the batch. Any other node is instantiated once per worker.

    Args:
        create_env_fn: a callable returning one env, or an env config node.
        num_workers: number of sub-envs (the batch size).
        batched_env_type: ``parallel`` (worker processes) or ``serial`` (this process).
        create_env_kwargs: keyword arguments of ``create_env_fn`` (for a node: its fields).
        device: device of the env's tensors (None: the node's, else cpu).
    """
    if batched_env_type not in BATCHED_ENV_TYPES:
        raise ConfigError(
            "batched_env_type", batched_env_type, f"one of {sorted(BATCHED_ENV_TYPES)}"
        )
    if int(num_workers) < 1:
        raise ConfigError("num_workers", num_workers, "a positive number of sub-envs")
    kwargs = _plain(create_env_kwargs) or {}
    node = _as_node(create_env_fn)
    if node is not None:
        vector_nodes = list(_vector_env_nodes(node))
        if vector_nodes:
            for vector_node in vector_nodes:
                vector_node.num_envs = int(num_workers)
                vector_node.vectorization = BATCHED_ENV_TYPES[batched_env_type]
                if device is not None:
                    vector_node.device = device
            return _instantiate(node, kwargs)
        create_env_fn = _NodeEnvFactory(node)
    from rl_trainers.envs import ParallelEnv, SerialEnv

    batched = ParallelEnv if batched_env_type == "parallel" else SerialEnv
    return batched(int(num_workers), create_env_fn, kwargs or None, device=device or "cpu")


def make_transformed_env(base_env: Any, transform: Any = None) -> Any:
    """``TransformedEnv(base_env, transform)``, torchrl's ``TransformedEnvConfig`` fields.

    Args:
        base_env: the env (from a node: its instantiated ``base_env``). A partial (a node
            marked ``_partial_: true``, as torchrl's recipes mark it) is called; a node
            without ``_target_`` (torchrl's ``base_env: {env_name: ..., _partial_: true}``)
            is a gym env node (``env/gym``).
        transform: a transform, e.g. from a ``ComposeConfig`` (None: none; a partial is
            called).
    """
    from rl_trainers.envs import TransformedEnv

    if isinstance(base_env, DictConfig | dict) and "_target_" not in base_env:
        base_env = _instantiate(_with_gym_target(OmegaConf.create(_plain(base_env))), {})
    if isinstance(base_env, functools.partial):
        base_env = base_env()
    if isinstance(transform, functools.partial):
        transform = transform()
    return TransformedEnv(base_env, transform)


def make_compose(transforms: Sequence[Any] | None = ()) -> Any:
    """``Compose(*transforms)``, torchrl's ``ComposeConfig`` field.

    Args:
        transforms: the transforms, applied in order (None: none).
    """
    from rl_trainers.envs import Compose

    return Compose(*list(transforms or ()))


def _with_gym_target(node: DictConfig) -> DictConfig:
    """An env node given by its fields only (no ``_target_``) as rl_trainers' gym env node,
    without torchrl's ``_partial_`` mark (the node describes an env, built when needed)."""
    node.pop("_partial_", None)
    node["_target_"] = GymEnvConfig._target_
    return node


class _NodeEnvFactory:
    """A picklable factory instantiating an env config node (one env per call)."""

    def __init__(self, node: DictConfig) -> None:
        self.node = node

    def __call__(self, **kwargs: Any) -> Any:
        return _instantiate(self.node, kwargs)


def _instantiate(node: DictConfig, kwargs: dict[str, Any]) -> Any:
    from hydra.utils import instantiate

    return instantiate(node, _partial_=False, **kwargs)


def _as_node(value: Any) -> DictConfig | None:
    """A copy of ``value`` as a DictConfig if it is a config node (``_target_``), else None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = OmegaConf.structured(value)
    elif isinstance(value, dict):
        value = OmegaConf.create(value)
    if isinstance(value, DictConfig) and "_target_" in value:
        node = OmegaConf.create(
            OmegaConf.to_container(value, resolve=True)
        )  # an open, editable copy
        node.pop("_partial_", None)  # torchrl marks create_env_fn partial; a node is a factory here
        return node
    return None


def _vector_env_nodes(node: DictConfig) -> Iterator[DictConfig]:
    """The ``GymEnvConfig`` nodes along the ``base_env`` chain starting at ``node`` (a
    ``base_env`` given by its fields only is one, see :func:`make_transformed_env`)."""
    while isinstance(node, DictConfig):
        if node.get("_target_") in VECTOR_ENV_TARGETS:
            yield node
        base_env = node.get("base_env")
        if isinstance(base_env, DictConfig) and "_target_" not in base_env:
            _with_gym_target(base_env)
        node = base_env


def _plain(value: Any) -> Any:
    """A DictConfig/ListConfig (what ``_recursive_: false`` passes) as plain containers."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value
