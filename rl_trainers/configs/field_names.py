"""The fields of the algorithms' config schemas, by dotted name: the lists and the "did you
mean" suggestions that config errors give (``optimizer.lrr`` -> ``optimizer.lr``)."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any

from rl_trainers.configs import GROUP_OPTIONS, ROOT_SCHEMAS


def type_name(tp: Any) -> str:
    """A type as a user reads it in ``--help`` and errors: ``int``, ``list[int] | None``."""
    if tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    if origin is None:
        return getattr(tp, "__name__", str(tp))
    args = [type_name(a) for a in typing.get_args(tp)]
    if origin in (typing.Union, types.UnionType):
        return " | ".join(args)
    return f"{getattr(origin, '__name__', str(origin))}[{', '.join(args)}]"


def _unwrap(tp: Any) -> Any:
    """The dataclass inside ``Node | None``, else ``tp``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 and dataclasses.is_dataclass(args[0]) else tp


def schema_fields(node: Any) -> dict[str, Any]:
    """Public field name -> type of a config dataclass (empty for anything else)."""
    if not (isinstance(node, type) and dataclasses.is_dataclass(node)):
        return {}
    hints = typing.get_type_hints(node)
    return {
        f.name: _unwrap(hints.get(f.name, f.type))
        for f in dataclasses.fields(node)
        if not f.name.startswith("_")
    }


def field_paths(algorithm: str) -> list[str]:
    """Every dotted field of ``algorithm``'s root schema and of its group options."""
    paths: set[str] = set()

    def walk(node: Any, prefix: str) -> None:
        for name, tp in schema_fields(node).items():
            paths.add(prefix + name)
            walk(tp, f"{prefix}{name}.")

    walk(ROOT_SCHEMAS.get(f"{algorithm}_trainer_schema"), "")
    for group, options in GROUP_OPTIONS.items():
        for node in options.values():
            walk(node, group.replace("/", ".") + ".")
    return sorted(paths)


#: Names other libraries (Stable-Baselines3, CleanRL, torchrl's recipes) give a field, and
#: the field's name here; a misspelling of these finds its field by :func:`suggest_field`.
FIELD_ALIASES: dict[str, str] = {
    "learning_rate": "lr",
    "batch_size": "minibatch_size",  # PPO's; off-policy trainers have replay_buffer.batch_size
    "n_epochs": "num_epochs",
    "update_epochs": "num_epochs",
    "ent_coef": "entropy_coef",
    "vf_coef": "critic_coef",
    "clip_range": "clip_epsilon",
    "clip_coef": "clip_epsilon",
    "gae_lambda": "lmbda",
    "lambda": "lmbda",
    "max_grad_norm": "clip_norm",
    "n_envs": "num_envs",
    "total_timesteps": "total_frames",
    "n_timesteps": "total_frames",  # rl-zoo's hyperparameter files
    "n_steps": "frames_per_batch",  # per env in SB3: frames_per_batch counts all envs
    "buffer_size": "size",
    "env_id": "env_name",
}


def _alias(key: str) -> str | None:
    """The field name :data:`FIELD_ALIASES` gives ``key`` (``learningRate``, ``learning-rate``
    and ``learning_rate`` alike)."""
    plain = key.replace("-", "").replace("_", "").lower()
    for alias, name in FIELD_ALIASES.items():
        if alias.replace("_", "") == plain:
            return name
    return None


def suggest_field(algorithm: str, full_key: str, node: Any = None) -> str | None:
    """The field a user most likely meant by ``full_key``: a field of that name elsewhere
    (``collector.total_frames`` -> ``trainer.total_frames``, ``lr`` -> ``optimizer.lr``),
    else the field another library's name stands for (:data:`FIELD_ALIASES`,
    ``optimizer.learning_rate`` -> ``optimizer.lr``, ``batch_size`` -> PPO's
    ``trainer.minibatch_size``), else a close name in the same node (``optimizer.lrr`` ->
    ``optimizer.lr``), else a close dotted path anywhere."""
    parent, _, key = full_key.rpartition(".")
    prefix = f"{parent}." if parent else ""
    paths = [] if full_key.startswith("hydra.") else field_paths(algorithm)

    def named(name: str) -> str | None:
        found = [p for p in paths if p.rpartition(".")[2] == name]
        return min(found, key=len) if found else None

    alias = _alias(key)
    meant = named(key) or (named(alias) if alias else None)
    if meant:
        return meant
    close = difflib.get_close_matches(key, list(schema_fields(node)), n=1, cutoff=0.6)
    if close:
        return prefix + close[0]
    # not a node holding full_key ("trainer" for "trainer.foo"): that is where it already is
    others = [p for p in paths if not full_key.startswith(f"{p}.")]
    close = difflib.get_close_matches(full_key, others, n=1, cutoff=0.75)
    return close[0] if close else None


#: Fields of torchrl's trainer configs (its ``Trainer`` arguments) that have no field of the
#: same meaning to be renamed to (``TORCHRL_OVERRIDES`` in :mod:`rl_trainers.app.overrides`): what to set instead,
#: by algorithm (``"*"``: any).
TORCHRL_FIELDS: dict[str, dict[str, str]] = {
    "trainer.optim_steps_per_batch": {
        "ppo": "PPO's optimisation steps per batch are trainer.num_epochs passes of "
        "collector.frames_per_batch / trainer.minibatch_size minibatches",
        "a2c": "A2C takes one gradient step per collected batch",
        "pg": "PG takes one gradient step per collected batch",
        "*": "set trainer.utd_ratio, the gradient updates per collected frame "
        "(optim_steps_per_batch / collector.frames_per_batch)",
    },
    "trainer.save_trainer_file": {
        "*": "checkpoints go to <run dir>/checkpoints/ (choose the run directory with "
        "hydra.run.dir=...; docs/resume.md)",
    },
    "trainer.async_collection": {
        "*": "it is an argument of a Trainer built in a script, not a field of the app; "
        "collector=multi_async collects in worker processes while the trainer learns",
    },
    # the node and its fields alike (target_net_updater.tau, target_net_updater.eps)
    "target_net_updater": {
        "sac": "SAC soft-updates its target critics by trainer.tau after every gradient "
        "update (torchrl's SoftUpdate tau; its eps is 1 - tau)",
        "td3": "TD3 soft-updates its target networks by trainer.tau (torchrl's SoftUpdate "
        "tau; its eps is 1 - tau)",
        "ddpg": "DDPG soft-updates its target networks by trainer.tau (torchrl's SoftUpdate "
        "tau; its eps is 1 - tau)",
        "dqn": "DQN updates its target network every trainer.target_update_interval gradient "
        "updates by trainer.tau (1, a copy, is torchrl's HardUpdate; torchrl's SoftUpdate "
        "eps is 1 - tau)",
        "*": "the on-policy trainers (ppo, a2c, pg) keep no target network",
    },
}


def torchrl_field_hint(full_key: str, algorithm: str) -> str | None:
    """What to set instead of torchrl's ``full_key`` (:data:`TORCHRL_FIELDS`), or None. An
    override of a field of a node the app lacks (``target_net_updater.tau=0.01``) is
    reported at the node (``target_net_updater``), which has its own entry."""
    hints = TORCHRL_FIELDS.get(full_key)
    if hints is None:
        return None
    return f"torchrl's {full_key} has no counterpart here: {hints.get(algorithm, hints['*'])}"


def expected_type(node: Any, key: str, message: str) -> str:
    """``expected <type>`` from the node's type hints, else OmegaConf's own first line."""
    tp = schema_fields(node).get(key)
    return f"expected {type_name(tp)}" if tp is not None else message.splitlines()[0]
