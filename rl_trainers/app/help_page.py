"""The ``--help`` page of each algorithm: its config groups with their options, every field
with its description, and the composed config.

Importing this module stores one ``hydra/help`` option per algorithm (each recipe selects
its own with ``override hydra/help: <algorithm>_trainer``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore

from rl_trainers.configs import ENV_PRESET_ACTIONS, GROUP_OPTIONS, ROOT_SCHEMAS
from rl_trainers.configs.field_names import type_name

from . import RECIPES_DIR


def _node_type(tp: Any) -> Any:
    """The dataclass inside ``Node | None``, else ``tp``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1:
        if dataclasses.is_dataclass(args[0]):
            return args[0]
    return tp


def _field_lines(node: type, prefix: str = "") -> list[str]:
    lines = []
    hints = typing.get_type_hints(node)
    for f in dataclasses.fields(node):
        if f.name.startswith("_"):
            continue
        tp = _node_type(hints.get(f.name, f.type))
        if dataclasses.is_dataclass(tp):
            lines.append(f"  {prefix}{f.name}:  {f.metadata.get('help', '')}")
            lines.extend(_field_lines(tp, prefix=f"{prefix}{f.name}."))
            continue
        name = f"{prefix}{f.name} ({type_name(tp)})"
        lines.append(f"    {name:<42} {f.metadata.get('help', '')}")
    return lines


def _schema_has(schema: type | None, group: str) -> bool:
    """Whether ``schema`` has the node a group sets (``model/policy``: ``model.policy``)."""
    node: Any = schema
    for name in group.split("/"):
        if not dataclasses.is_dataclass(node):
            return False
        hints = typing.get_type_hints(node)
        if name not in hints:
            return False
        node = _node_type(hints[name])
    return True


def _groups_of(schema: type | None) -> dict[str, dict[str, type]]:
    """The groups registered in code whose node ``schema`` has (DQN has no ``model.policy``)."""
    if schema is None:
        return dict(GROUP_OPTIONS)
    return {g: o for g, o in GROUP_OPTIONS.items() if _schema_has(schema, g)}


def _option_field_lines(schema: type | None = None) -> list[str]:
    """Fields an option of a group adds to the group's base node (e.g. ``optimizer.betas``)."""
    lines = []
    for group, options in _groups_of(schema).items():
        for option, node in options.items():
            # the group's base node (its fields are listed above): the option's first
            # ancestor, so an option extending another (adamw: adam) lists its fields too
            root = node.__mro__[-2]
            if root is node:
                continue
            base = {f.name for f in dataclasses.fields(root)}
            extra = [
                f
                for f in dataclasses.fields(node)
                if f.name not in base and not f.name.startswith("_")
            ]
            if not extra:
                continue
            lines.append(f"  {group}={option.removesuffix('_schema')}:")
            hints = typing.get_type_hints(node)
            for f in extra:
                name = f"{group.replace('/', '.')}.{f.name} ({type_name(hints[f.name])})"
                lines.append(f"    {name:<42} {f.metadata.get('help', '')}")
    return lines


def group_options(algorithm: str, user_dirs: Sequence[str] = ()) -> dict[str, list[str]]:
    """The options of each config group a user can pick for ``algorithm`` (e.g. ``ppo``).

    Options registered in code keep their order (the default first); YAML options are sorted.
    Only what the algorithm can run is listed: its own ``experiment`` and ``hparams_search``
    presets, and the ``env`` presets whose action space (``ENV_PRESET_ACTIONS``) is the one
    its root schema's ``action_space_kind`` needs. The options of the config directories
    ``user_dirs`` (``--config-dir``, ``hydra.searchpath``) follow, all of them.
    """
    schema = ROOT_SCHEMAS.get(f"{algorithm}_trainer_schema")
    groups: dict[str, list[str]] = {  # ``<name>_schema``: the node of recipes/<group>/<name>.yaml
        g: [o.removesuffix("_schema") for o in options] for g, options in _groups_of(schema).items()
    }
    for path in sorted(Path(RECIPES_DIR).glob("*/*.yaml")):
        options = groups.setdefault(path.parent.name, [])
        if path.stem not in options:
            options.append(path.stem)
    for group, runs in _runnable(algorithm, schema).items():
        if group in groups:
            groups[group] = [o for o in groups[group] if runs(o)]
            if not groups[group]:  # no preset for this algorithm (pg has no experiment)
                del groups[group]
    for directory in user_dirs:
        for path in sorted(Path(directory).glob("*/*.yaml")):
            options = groups.setdefault(path.parent.name, [])
            if path.stem not in options:
                options.append(path.stem)
    return dict(sorted(groups.items()))


def user_config_dirs(args: Sequence[str]) -> list[str]:
    """The config directories of the user's own on a command line: ``--config-dir``
    (``-cd``) and the ``file://`` entries of ``hydra.searchpath=[...]``, which Hydra searches
    for group options too."""
    dirs = []
    for i, word in enumerate(args):
        name, eq, value = word.partition("=")
        if name in ("--config-dir", "-cd"):
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
            dirs.append(value)
        elif name.lstrip("+") == "hydra.searchpath" and eq:
            from hydra.core.override_parser.overrides_parser import OverridesParser

            try:
                paths = OverridesParser.create().parse_override(word).value()
            except Exception:  # noqa: BLE001 - Hydra reports a bad override itself
                continue
            if isinstance(paths, list):
                dirs.extend(
                    p.removeprefix("file://") for p in paths if str(p).startswith("file://")
                )
    return [d for d in dirs if d and Path(d).is_dir()]


def _runnable(algorithm: str, schema: type | None) -> dict[str, Callable[[str], bool]]:
    """Per group, which of its options ``algorithm`` can run: the presets named after it,
    and the env presets with the action space its schema needs (none built to tell)."""

    def own(preset: str) -> bool:
        return preset.startswith(f"{algorithm}_")

    need = getattr(schema, "action_space_kind", None)

    def env_runs(env: str) -> bool:
        return need is None or ENV_PRESET_ACTIONS.get(env, need) == need

    def policy_runs(policy: str) -> bool:
        return need is None or POLICY_ACTIONS.get(policy, need) == need

    return {"experiment": own, "hparams_search": own, "env": env_runs, "model/policy": policy_runs}


#: The actions each ``model/policy`` option acts with (``auto`` fits both).
POLICY_ACTIONS = {"categorical": "discrete", "tanh_normal": "continuous", "normal": "continuous"}


def _hidden_envs_note(algorithm: str, schema: type) -> list[str]:
    """The line under ``env:`` in ``--help`` saying which env presets it leaves out, and why."""
    need = getattr(schema, "action_space_kind", None)
    if need is None:
        return []
    other = "discrete" if need == "continuous" else "continuous"
    return [
        f"    (envs with {other} actions are not listed: {algorithm.upper()} needs {need} ones)"
    ]


def _example_env(algorithm: str) -> str:
    return {"dqn": "acrobot", "td3": "halfcheetah", "ddpg": "mountaincar_continuous"}.get(
        algorithm, "pendulum"
    )


#: How ``--help`` names an algorithm whose upper-cased name says too little.
_TITLES = {"pg": "PG (REINFORCE, the vanilla policy gradient)"}


def help_template(algorithm: str, schema: type, user_dirs: Sequence[str] = ()) -> str:
    """The ``--help`` page: groups with their options (those of the config directories
    ``user_dirs`` too), every field with its description, and the composed config
    (``$CONFIG``, so overrides given with ``--help`` show there)."""
    name = algorithm.removesuffix("_trainer")
    groups = []
    for g, o in group_options(name, user_dirs).items():
        if o or g != "hparams_search":
            groups.append(f"  {'+' if g == 'hparams_search' else ''}{g}: {', '.join(o)}")
        if g == "env":
            groups.extend(_hidden_envs_note(name, schema))
    text = "\n".join(
        [
            f"{algorithm}: train {_TITLES.get(name, name.upper())} with rl_trainers.",
            "",
            f"Usage: rl-trainers {name} [group=option] [field=value]",
            f"   or: python sota-implementations/{algorithm}/train.py [group=option] [field=value]",
            f"  e.g. env={_example_env(name)} logger=tensorboard "
            "optimizer.lr=3e-4 trainer.total_frames=50000",
            "  -m seed=0,1,2          sweep (each run in its own directory under multirun/)",
            "  -m hydra/launcher=joblib seed=0,1,2   the sweep's jobs in parallel (also",
            "                         submitit_local, submitit_slurm; pip install -e '.[sweep]')",
            "  -m +hparams_search=<preset>   an Optuna study (docs/scaling.md)",
            "  env.env_name=<id>      any gymnasium id, or 'module:Class'",
            "  --cfg job              print the composed config",
            "  torchrl's names work too: training_env.create_env_fn.base_env.env_name,",
            "  training_env.num_workers, networks.{policy,value,qvalue}_network.num_cells,",
            "  replay_buffer.storage.max_size, optim.policy_update_delay (TD3)",
            "",
            "== Config groups (group=option) ==",
            *groups,
            "",
            "== Fields (field (type) description) ==",
            *_field_lines(schema),
            "",
            "== Fields of group options (set after choosing the option) ==",
            *_option_field_lines(schema),
            "",
            "Network input/output sizes and action bounds are never configured:",
            "they are read from the environment's spaces.",
            "Set HYDRA_FULL_ERROR=1 for full tracebacks.",
            "",
            "== This recipe's values ==",
        ]
    )
    # "$${" survives OmegaConf's interpolation (as "\\${") and Hydra's string.Template ("$$").
    return text.replace("${", "$\\${") + "\n$CONFIG"


def register_help(user_dirs: Sequence[str] = ()) -> None:
    """Store one ``hydra/help`` option per algorithm (selected in its primary YAML), listing
    the options of the config directories ``user_dirs`` too."""
    store = ConfigStore.instance()
    for schema_name, schema in ROOT_SCHEMAS.items():
        algorithm = schema_name.removesuffix("_schema")
        node = {
            "app_name": algorithm,
            "header": "",
            "footer": "",
            "template": help_template(algorithm, schema, user_dirs),
        }
        store.store(group="hydra/help", name=algorithm, node=node)


def _share_config_store() -> None:
    """Let copies of Hydra's config repository share the one :class:`ConfigStore`.

    Hydra deep-copies its repository, with every node of the store (each schema and help
    page), for each config group it lists: ``--help`` made about 140 copies (20 s on two
    busy cores). The store is only read through :meth:`ConfigStore.load`, which hands out a
    copy of the node, so sharing it changes nothing else.
    """
    if "__deepcopy__" not in vars(ConfigStore):
        ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


_share_config_store()
register_help()
