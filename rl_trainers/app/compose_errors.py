"""Mistakes Hydra finds while composing the config, reported as one ``Error:`` line (exit 2).

Hydra stops on an unknown field, a value of the wrong type, a group option that does not
exist or another algorithm's ``experiment`` preset with a multi-line message and exit
status 1 (``Key 'lrr' not in 'AdamConfig'``, ``To append to your config use +...``).
The app (:func:`rl_trainers.app.train.main`) composes inside :func:`composition_errors`,
which rewrites those messages the way :func:`~rl_trainers.app.errors.user_errors` reports a
:class:`ConfigError`: the field, the value, what is allowed and the likely intended name::

    Error: optimizer.lrr is not a field: did you mean optimizer.lr? (--help lists every field)
    Error: experiment='ppo_pendulum' is invalid: a preset of PPO: run it with
      python sota-implementations/ppo_trainer/train.py experiment=ppo_pendulum ...

With ``HYDRA_FULL_ERROR=1`` Hydra's own error and traceback are shown unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import re
import sys
import typing
from collections.abc import Iterator
from typing import Any

from rl_trainers.configs import GROUP_OPTIONS, ROOT_SCHEMAS
from rl_trainers.configs.field_names import (
    expected_type,
    field_paths,
    schema_fields,
    suggest_field,
    torchrl_field_hint,
)
from rl_trainers.configs.validation import no_groups_error
from rl_trainers.errors import ConfigError

from .errors import JobFailed, report_and_exit
from .launch import command_of, running_algorithm


def algorithms() -> list[str]:
    """The algorithms with a primary config (``ppo``, ``sac``, ...)."""
    return [name.removesuffix("_trainer_schema") for name in ROOT_SCHEMAS]


def _preset_algorithm(preset: str) -> str | None:
    prefix = preset.partition("_")[0]
    return prefix if prefix in algorithms() else None


#: Hydra's options that plugins of the ``sweep`` extra provide, and the plugin of each.
PLUGINS = {
    "hydra/launcher=joblib": "hydra-joblib-launcher",
    "hydra/launcher=submitit_local": "hydra-submitit-launcher",
    "hydra/launcher=submitit_slurm": "hydra-submitit-launcher",
    "hydra/sweeper=optuna": "hydra-optuna-sweeper",
}

#: The groups whose options belong to one algorithm, named by prefix (``ppo_acrobot``).
PRESET_GROUPS = ("experiment", "hparams_search")


def check_experiment(
    algorithm: str, preset: str, presets: list[str], group: str = "experiment"
) -> None:
    """Raise :class:`ConfigError` when ``preset`` is another algorithm's option of ``group``
    (an ``experiment`` or an ``hparams_search``)."""
    owner = _preset_algorithm(preset)
    if owner is None or owner == algorithm:
        return
    own = ", ".join(p for p in presets if p.startswith(f"{algorithm}_")) or "none"
    plus = "+" if group == "hparams_search" else ""
    raise ConfigError(
        group,
        preset,
        f"a preset of {owner.upper()}: run it with {command_of(owner)} {plus}{group}={preset} "
        f"({algorithm}_trainer's presets: {own})",
    )


def _recipe_env_option(algorithm: str) -> str | None:
    """The ``env`` option ``algorithm``'s recipe trains on by default (``cartpole``)."""
    from omegaconf import OmegaConf

    from . import RECIPES_DIR

    recipe = OmegaConf.load(os.path.join(RECIPES_DIR, f"{algorithm}_trainer.yaml"))
    for entry in recipe.get("defaults", []):
        if isinstance(entry, typing.Mapping) and "env" in entry:
            return str(entry["env"])
    return None


def _experiment_hint(algorithm: str, option: str, options: list[str]) -> str | None:
    """What ``experiment=<algorithm>_<env>`` meant, for a preset that does not exist: the
    default recipe when ``<env>`` is the recipe's own env, the MuJoCo preset on a MuJoCo
    env; else None."""
    from .mujoco_presets import env_option_id, missing_preset_hint

    env_option = option.removeprefix(f"{algorithm}_")
    if env_option != option and env_option == _recipe_env_option(algorithm):
        return (
            f"{algorithm.upper()}'s default recipe is tuned for "
            f"{env_option_id(env_option)}: leave experiment out; "
        )
    mujoco = missing_preset_hint(algorithm, option, options)
    return f"{mujoco}; " if mujoco else None


def _gymnasium_id_hint(env_id: str) -> str:
    """For ``env=<gymnasium id>``: the option that sets that id, else ``env.env_name``."""
    from .mujoco_presets import env_option_of

    option = env_option_of(env_id)
    if option is not None:
        return f"did you mean env={option}? "
    return f"any gymnasium id runs with env.env_name={env_id}; "


# ----------------------------------------------------------------------------- translation


def _saved_config_launched() -> bool:
    """Whether the app was started on another config than its recipes (``--config-path
    <run>/.hydra --config-name config``: a run's saved config)."""
    words = sys.argv[1:]
    return any(w in ("--config-path", "-cp") or w.startswith("--config-path=") for w in words)


def explain(exc: BaseException, algorithm: str) -> str | None:
    """One line for a composition error of Hydra's, or None to leave it to Hydra."""
    from hydra.errors import ConfigCompositionException, MissingConfigException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

    if isinstance(exc, ConfigCompositionException) and "No match in the defaults list" in str(exc):
        # a group the recipe does not list (hparams_search): Hydra's last line says "+group=..."
        append = str(exc).strip().splitlines()[-1].rpartition(" ")[2]
        group, _, option = append.lstrip("+").partition("=")
        if _saved_config_launched():  # a run's .hydra/config.yaml: no groups at all
            return str(no_groups_error(group, option))
        missing_node = _missing_node(algorithm, group)
        if missing_node is not None:
            return str(ConfigError(group, option, missing_node))
        return str(
            ConfigError(group, option, f"{group} is not in the recipe's defaults: use {append}")
        )
    defaults_hint = _defaults_list_hint(exc, algorithm)
    if defaults_hint is not None:
        return defaults_hint
    option_set = _option_setting_another_options_field(exc, algorithm)
    if option_set is not None:
        return option_set
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file:
        group, _, option = exc.missing_cfg_file.rpartition("/")
        preset_group, _, named = group.partition("/")
        if preset_group in PRESET_GROUPS and named:
            # "- env: pendulum" in an experiment file names experiment/env, its own subgroup
            return str(
                ConfigError(
                    group,
                    option,
                    f"in the defaults list of a file of {preset_group}/, '{named}: {option}' "
                    f"names {group}: write '- override /{named}: {option}' there",
                )
            )
        plugin = PLUGINS.get(f"{group}={option}")
        if plugin is not None:
            return str(
                ConfigError(
                    group,
                    option,
                    f"an option of the {plugin} plugin, which is not installed: "
                    "pip install -e '.[sweep]' (docs/scaling.md)",
                )
            )
        # the dataclass nodes YAML options extend (``logger/csv_schema``) are not options
        options = [o for o in exc.options or [] if not o.endswith("_schema")]
        if not options and _saved_config_launched():
            return str(no_groups_error(group, option))
        if group in PRESET_GROUPS:
            options = [o for o in options if o.startswith(f"{algorithm}_")] or options
        close = difflib.get_close_matches(option, options, n=1, cutoff=0.5)
        hint = f"did you mean {group}={close[0]}? " if close else ""
        if group == "experiment":
            hint = _experiment_hint(algorithm, option, options) or hint
        if group == "env" and re.search(r"-v\d+$|:", option):  # a gymnasium id
            hint = _gymnasium_id_hint(option)
        return str(ConfigError(group, option, f"{hint}options of {group}: {', '.join(options)}"))
    cause = exc.__cause__
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and cause.full_key:
        parent, _, key = cause.full_key.rpartition(".")
        node_type = cause.object_type
        if not schema_fields(node_type):  # an untyped node (a saved config): the schema's
            node_type = _schema_node(algorithm, parent) or node_type
        if parent in field_paths(algorithm) and not schema_fields(node_type):
            # a free-form dict field such as env.make_kwargs: new keys need a '+' (a dict
            # given whole is merged into the keys an env option sets, env=ant's)
            return f"{parent} has no key {key!r}: add it with +{cause.full_key}=<value>"
        torchrl_hint = torchrl_field_hint(cause.full_key, algorithm)
        if torchrl_hint is not None:
            return f"{cause.full_key} is not a field: {torchrl_hint}"
        owners = [a for a in algorithms() if cause.full_key in field_paths(a)]
        meant = suggest_field(algorithm, cause.full_key, node_type)
        hint = f": did you mean {meant}?" if meant else ""
        options = _options_with_field(cause.full_key)
        if algorithm in owners and options:  # a field of another option of its group
            group = options[0].partition("=")[0]
            return (
                f"{cause.full_key} is a field of {' and '.join(options)}, not of the chosen "
                f"{group} option: choose one with {options[0]}"
            )
        if owners:
            hint = f" of {algorithm.upper()} (it is {'/'.join(owners).upper()}'s)"
        return f"{cause.full_key} is not a field{hint} ({command_of(algorithm)} --help lists every field)"
    if isinstance(cause, ValidationError) and cause.full_key:
        allowed = expected_type(cause.object_type, str(cause.key), str(cause.msg))
        allowed += " (it cannot be null)" if cause.value is None else ""
        if (
            allowed == "expected int"
            and isinstance(cause.value, float)
            and cause.value.is_integer()
        ):
            allowed += f": write {int(cause.value)}"  # 1e6 reads as a float
        return str(ConfigError(cause.full_key, cause.value, allowed))
    return None


def _defaults_list_hint(exc: BaseException, algorithm: str) -> str | None:
    """What to write for a group chosen twice (``+env=pendulum``, which the recipe's
    defaults already choose, or ``- /env: pendulum`` in a file's defaults list without
    ``override``) or a schema field deleted with ``~``; None for other errors."""
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import ConfigTypeError

    if not isinstance(exc, ConfigCompositionException):
        return None
    text = str(exc)
    twice = re.match(
        r"Multiple values for (\S+)\. To override a value use 'override \S+: (.*)'", text
    )
    if twice:
        group, option = twice.group(1), twice.group(2)
        if any(w.startswith(f"+{group}=") for w in sys.argv[1:]):
            return str(
                ConfigError(
                    f"+{group}",
                    option,
                    f"the recipe's defaults choose {group} already: write {group}={option} "
                    "(without '+')",
                )
            )
        return str(
            ConfigError(
                group,
                option,
                f"chosen twice: the recipe's defaults choose {group} already; in your "
                f"config's defaults list write '- override /{group}: {option}'",
            )
        )
    deleted = re.match(r"Error merging override ~(\S+)", text)
    cause = exc.__cause__
    null_field = re.match(r"Could not delete from config\. '([^']+)' does not exist", text)
    if null_field and null_field.group(1) in field_paths(algorithm):
        deleted = null_field  # a field whose value is null: Hydra says it does not exist
        cause = ConfigTypeError("does not support deletion")
    if deleted and isinstance(cause, ConfigTypeError) and "does not support deletion" in str(cause):
        key = deleted.group(1).partition("=")[0]
        return (
            f"~{key} is not allowed: {key} is a field of the schema, which cannot be deleted; "
            f"set it instead ({key}=<value>, or null where the field takes null)"
        )
    return None


@contextlib.contextmanager
def composition_errors(in_launcher_worker: bool = False) -> Iterator[None]:
    """Report Hydra's composition mistakes as one ``Error:`` line and exit status 2.

    Wraps Hydra's config loader while the block runs (the app runs Hydra's ``main`` in it),
    so every composition is covered: a run, each job of a sweep, ``--cfg`` and ``--help``.

    ``in_launcher_worker``: the block wraps a launcher's worker process (joblib), which
    composes its jobs' configs itself. A mistake there raises :class:`JobFailed` with the
    ``Error:`` line, which the launcher hands to the app's process, which prints it
    once; printing it in the worker printed it once per parallel job.
    """

    def fail(message: str) -> typing.NoReturn:
        if in_launcher_worker:
            raise JobFailed(f"Error: {message}") from None
        report_and_exit(message)

    try:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
    except ImportError:  # another Hydra layout: its own messages stay
        yield
        return
    original = ConfigLoaderImpl.load_configuration

    def load_configuration(self, config_name, overrides, *args, **kwargs):
        algorithm = (config_name or "").removesuffix("_trainer")
        if algorithm not in algorithms():  # a run's saved config: the app's algorithm
            algorithm = running_algorithm() or ""
        if algorithm not in algorithms() or os.environ.get("HYDRA_FULL_ERROR") == "1":
            return original(self, config_name, overrides, *args, **kwargs)
        try:
            for group in PRESET_GROUPS:
                for preset in _chosen(group, overrides):
                    check_experiment(algorithm, preset, _presets(group), group)
            cfg = original(self, config_name, overrides, *args, **kwargs)
            check_sweeper_storage(cfg)
            return cfg
        except ConfigError as err:
            fail(str(err))
        except Exception as exc:
            message = explain(exc, algorithm)
            if message is None:
                raise
            fail(message)

    ConfigLoaderImpl.load_configuration = load_configuration
    try:
        yield
    except SystemExit as stop:
        # a sweep stopped on a job's user error (JobFailed): Hydra printed the job's overrides
        # and its Error: line, and exits with 1; exit with 2 as a single run does
        if stop.code == 1 and isinstance(stop.__context__, JobFailed):
            raise SystemExit(2) from None
        raise
    finally:
        ConfigLoaderImpl.load_configuration = original


def check_sweeper_storage(cfg: Any) -> None:
    """Raise :class:`ConfigError` for an Optuna study kept in a database that the installed
    Optuna cannot use: hydra-optuna-sweeper pins Optuna 2, whose SQL storage fails on
    SQLAlchemy 2 (an assertion deep in Optuna, after the sweep has started)."""
    from importlib.metadata import PackageNotFoundError, version

    from omegaconf import OmegaConf

    storage = OmegaConf.select(cfg, "hydra.sweeper.storage", default=None)
    if not isinstance(storage, str) or "://" not in storage:
        return
    try:
        optuna, sqlalchemy = version("optuna"), version("sqlalchemy")
    except PackageNotFoundError:
        return
    if int(optuna.split(".")[0]) < 3 and int(sqlalchemy.split(".")[0]) >= 2:
        raise ConfigError(
            "hydra.sweeper.storage",
            storage,
            f"null (in memory) here: Optuna {optuna} (hydra-optuna-sweeper's pin) cannot "
            f"open a database with SQLAlchemy {sqlalchemy}; for one, pip install "
            "'sqlalchemy<2' 'alembic<1.14' (docs/scaling.md)",
        )


def _missing_node(algorithm: str, group: str) -> str | None:
    """Why ``group`` (``model/policy``) cannot be chosen when the algorithm's config has no
    node at its path (TD3's model has no stochastic policy); None when it has."""
    parent, _, name = group.replace("/", ".").rpartition(".")
    parent_node = _schema_node(algorithm, parent) if parent else None
    if parent_node is not None and name not in schema_fields(parent_node):
        return (
            f"{algorithm.upper()}'s {parent} has no {name} to choose "
            f"({command_of(algorithm)} --help lists its groups and fields)"
        )
    return None


def _option_setting_another_options_field(exc: BaseException, algorithm: str) -> str | None:
    """A config file (a preset, ``experiment/sac_halfcheetah``) that sets a field of a group
    option other than the one chosen (``model/policy=auto`` after the preset chose
    ``tanh_normal``), which Hydra reports with its merge error: one line naming both."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    found = re.match(r"In '([^']+)': Config(Key|Attribute)Error", str(exc))
    context = exc.__context__
    if found is None or not isinstance(context, (ConfigAttributeError, ConfigKeyError)):
        return None
    key = context.full_key
    if not key:
        return None
    group, _, name = found.group(1).rpartition("/")
    setter = f"{group}={name}" if group else found.group(1)
    options = _options_with_field(key)
    if options:
        chosen_group = options[0].partition("=")[0]
        return (
            f"{setter} sets {key}, a field of {' and '.join(options)}, not of the "
            f"{chosen_group} option chosen with it: drop that {chosen_group} option, or run "
            f"without {setter}"
        )
    missing_node = _missing_node(algorithm, group) if group else None
    if missing_node is not None:
        return str(ConfigError(group, name, missing_node))
    if group.startswith("model/"):  # a user's option file naming a builder of their own
        return (
            f"{setter} sets {key}, which is not a field of {algorithm}'s config; the "
            "arguments of a builder of your own (the option's _target_) go on the command "
            f"line with +: +{key}=..."
        )
    return f"{setter} sets {key}, which is not a field of {algorithm}'s config"


def _options_with_field(full_key: str) -> list[str]:
    """The ``group=option`` choices whose node has the field ``full_key``
    (``optimizer.betas`` -> ``optimizer=adam``, ``optimizer=adamw``)."""
    found = []
    for group, options in GROUP_OPTIONS.items():
        prefix = group.replace("/", ".") + "."
        if not full_key.startswith(prefix):
            continue
        for option, node in options.items():
            if full_key[len(prefix) :] in schema_fields(node):
                found.append(f"{group}={option.removesuffix('_schema')}")
    return found


def _schema_node(algorithm: str, path: str) -> Any:
    """The schema's dataclass of the node at dotted ``path`` (None if there is none)."""
    node: Any = ROOT_SCHEMAS.get(f"{algorithm}_trainer_schema")
    for name in path.split(".") if path else []:
        node = schema_fields(node).get(name)
    return node if dataclasses.is_dataclass(node) else None


def _presets(group: str = "experiment") -> list[str]:
    from .help_page import group_options

    return sorted({p for a in algorithms() for p in group_options(a).get(group, [])})


def _chosen(group: str, overrides: list[str]) -> list[str]:
    """The options the command line picks for ``group`` (every value of a sweep)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # Hydra reports unparsable overrides itself
        return []
    chosen = []
    for override in parsed:
        if override.key_or_group != group or override.is_delete():
            continue
        if isinstance(override.value(), Glob):  # matched against the shipped presets
            chosen.extend(override.value().filter(_presets(group)))
        elif override.is_sweep_override():
            chosen.extend(override.sweep_string_iterator())
        else:
            chosen.append(override.get_value_element_as_str())
    return chosen
