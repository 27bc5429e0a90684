"""The table of torchrl's module paths that are alias modules here, and their generator.

A torchrl script ports by changing the import prefix (``torchrl.`` -> ``rl_trainers.``), so
torchrl's module paths exist in the package as alias modules with no logic: each re-exports
names from this adapter (torchrl's forms) or from the product (the config schema,
:mod:`rl_trainers.configs`). :data:`ALIASES` is the one place they are written down; the
files are generated from it::

    python -m rl_trainers.compat.torchrl.aliases          # check the files match the table
    python -m rl_trainers.compat.torchrl.aliases --write  # (re)write them

``tests/torchrl_parity/test_alias_modules.py`` fails when a file and the table differ.
The packages' own ``__init__`` modules (``rl_trainers.trainers``,
``rl_trainers.trainers.algorithms``, ``rl_trainers.trainers.algorithms.configs``,
``rl_trainers.trainers.helpers``) are written by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

from rl_trainers.compat.torchrl.config_factories import TORCHRL_FACTORIES

_TRAINERS = "rl_trainers.compat.torchrl.trainers"
_HELPERS = "rl_trainers.compat.torchrl.helpers"
_ADAPTER = "rl_trainers.compat."
_SCHEMA = "rl_trainers.compat.torchrl.schema"
_FACTORIES = "rl_trainers.compat.torchrl.config_factories"


class Alias(NamedTuple):
    """One alias module: where it is, what it stands for, and the names it re-exports."""

    module: str  # the alias module (torchrl's path with the prefix changed)
    source: str  # the adapter (or product) module the names come from
    names: tuple[str, ...]
    path: str  # torchrl's path it stands for, or the config node paths it serves
    #: torchrl's own nodes among the names of a product config module, from the adapter
    torchrl_names: tuple[str, ...] = ()
    #: the factories torchrl's nodes of that config module target, from the adapter
    #: (:data:`~rl_trainers.compat.torchrl.config_factories.TORCHRL_FACTORIES`)
    factories: tuple[str, ...] = ()

    def imports(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The ``(module, names)`` of each import of the alias module."""
        own = ((_SCHEMA, self.torchrl_names),) if self.torchrl_names else ()
        made = ((_FACTORIES, self.factories),) if self.factories else ()
        return ((self.source, self.names), *own, *made)

    def exported(self) -> tuple[str, ...]:
        """Every name the alias module re-exports (its ``__all__``)."""
        return self.names + self.torchrl_names + self.factories


#: torchrl's nodes with no rl_trainers counterpart, by torchrl's config module: the alias
#: module takes them from :mod:`rl_trainers.compat.torchrl.schema`.
TORCHRL_NODES: dict[str, tuple[str, ...]] = {
    "envs": ("BatchedEnvConfig", "TransformedEnvConfig"),
    "transforms": ("ComposeConfig",),
}

#: Every generated alias module, in the order of the files.
ALIASES: tuple[Alias, ...] = (
    *(
        Alias(
            f"rl_trainers.trainers.algorithms.{name}",
            _TRAINERS,
            names,
            f"torchrl's path ``torchrl.trainers.algorithms.{name}``",
        )
        for name, names in (
            ("a2c", ("A2CTrainer",)),
            ("ddpg", ("DDPGTrainer",)),
            ("dqn", ("DQNTrainer",)),
            ("on_policy", ("OnPolicyTrainer",)),
            ("pg", ("PGTrainer", "ReinforceTrainer")),
            ("ppo", ("PPOTrainer",)),
            ("reinforce", ("ReinforceTrainer",)),
            ("sac", ("SACTrainer",)),
            ("td3", ("TD3Trainer",)),
        )
    ),
    *(
        Alias(
            f"rl_trainers.trainers.algorithms.configs.{name}",
            f"rl_trainers.configs.{name}",
            names,
            f"torchrl's path ``torchrl.trainers.algorithms.configs.{name}``",
            TORCHRL_NODES.get(name, ()),
            TORCHRL_FACTORIES.get(name, ()),
        )
        for name, names in (
            (
                "collectors",
                (
                    "MultiSyncDataCollectorConfig",
                    "MultiaSyncDataCollectorConfig",
                    "SyncDataCollectorConfig",
                ),
            ),
            (
                "common",
                (
                    "ComposedConfig",
                    "ROOT_CONFIG_INTERPOLATION",
                    "ROOT_CONFIG_RESOLVER",
                    "config_field",
                    "field_help",
                    "register_root_resolver",
                ),
            ),
            (
                "data",
                (
                    "ImmutableDatasetWriterConfig",
                    "LazyMemmapStorageConfig",
                    "LazyTensorStorageConfig",
                    "ListStorageConfig",
                    "PrioritizedSamplerConfig",
                    "PrioritizedSliceSamplerConfig",
                    "RandomSamplerConfig",
                    "ReplayBufferConfig",
                    "RoundRobinWriterConfig",
                    "SamplerWithoutReplacementConfig",
                    "SliceSamplerConfig",
                    "SliceSamplerWithoutReplacementConfig",
                    "TensorDictMaxValueWriterConfig",
                    "TensorDictReplayBufferConfig",
                    "TensorDictRoundRobinWriterConfig",
                    "TensorStorageConfig",
                ),
            ),
            (
                "envs",
                ("ENV_PRESET_ACTIONS", "GymEnvConfig"),
            ),
            ("envs_libs", ("GymEnvConfig",)),
            (
                "logging",
                (
                    "CSVLoggerConfig",
                    "LOGGER_ON_ERROR",
                    "LoggerConfig",
                    "MLFlowLoggerConfig",
                    "TensorboardLoggerConfig",
                    "WandbLoggerConfig",
                ),
            ),
            (
                "modules",
                (
                    "ActorCriticNetworkConfig",
                    "ActorQValueModelConfig",
                    "ActorValueModelConfig",
                    "CategoricalModelConfig",
                    "ConvActorCriticNetworkConfig",
                    "ConvNetConfig",
                    "DQNModelConfig",
                    "DeterministicActorQValueModelConfig",
                    "DeterministicModelConfig",
                    "MLPConfig",
                    "NormalModelConfig",
                    "PolicyModelConfig",
                    "QValueModelConfig",
                    "TanhNormalModelConfig",
                    "ValueModelConfig",
                ),
            ),
            (
                "objectives",
                (
                    "A2CLossConfig",
                    "DDPGLossConfig",
                    "DQNLossConfig",
                    "PGLossConfig",
                    "PPOLossConfig",
                    "SACLossConfig",
                    "TD3LossConfig",
                ),
            ),
            (
                "trainers",
                (
                    "A2CLoopConfig",
                    "A2CTrainerConfig",
                    "DDPGLoopConfig",
                    "DDPGTrainerConfig",
                    "DQNLoopConfig",
                    "DQNTrainerConfig",
                    "EvalConfig",
                    "LoopConfig",
                    "PGLoopConfig",
                    "PGTrainerConfig",
                    "PPOLoopConfig",
                    "PPOTrainerConfig",
                    "SACLoopConfig",
                    "SACTrainerConfig",
                    "TD3LoopConfig",
                    "TD3TrainerConfig",
                ),
            ),
            (
                "transforms",
                (
                    "BinarizeRewardConfig",
                    "CatFramesConfig",
                    "CatTensorsConfig",
                    "CenterCropConfig",
                    "ClipTransformConfig",
                    "DoubleToFloatConfig",
                    "EndOfLifeTransformConfig",
                    "FlattenObservationConfig",
                    "FrameSkipTransformConfig",
                    "GrayScaleConfig",
                    "InitTrackerConfig",
                    "NoopResetEnvConfig",
                    "ObservationNormConfig",
                    "PermuteTransformConfig",
                    "ResizeConfig",
                    "RewardClippingConfig",
                    "RewardScalingConfig",
                    "RewardSumConfig",
                    "SignTransformConfig",
                    "StepCounterConfig",
                    "TargetReturnConfig",
                    "ToTensorImageConfig",
                    "TrajCounterConfig",
                    "UnsqueezeTransformConfig",
                    "VecNormConfig",
                ),
            ),
            (
                "utils",
                ("AdamConfig", "AdamWConfig", "LRSchedulerConfig", "RMSpropConfig", "SGDConfig"),
            ),
        )
    ),
    Alias(
        "rl_trainers.trainers.algorithms.configs.hooks",
        _FACTORIES,
        TORCHRL_FACTORIES["hooks"],
        "torchrl's path ``torchrl.trainers.algorithms.configs.hooks``",
    ),
    *(
        Alias(
            f"rl_trainers.trainers.helpers.{name}",
            _HELPERS,
            names,
            f"torchrl's path ``torchrl.trainers.helpers.{name}``",
        )
        for name, names in (
            (
                "collectors",
                (
                    "make_collector_offpolicy",
                    "make_collector_onpolicy",
                    "sync_async_collector",
                    "sync_sync_collector",
                ),
            ),
            (
                "envs",
                (
                    "correct_for_frame_skip",
                    "get_stats_random_rollout",
                    "parallel_env_constructor",
                    "transformed_env_constructor",
                ),
            ),
            ("losses", ("make_dqn_loss", "make_target_updater")),
            ("replay_buffer", ("make_replay_buffer",)),
            ("trainers", ("make_trainer",)),
        )
    ),
    Alias(
        "rl_trainers.trainers.helpers.torchrl_nodes",
        "rl_trainers.compat.torchrl.config_nodes",
        ("make_batched_env", "make_compose", "make_transformed_env"),
        "the ``_target_`` path of torchrl's config nodes' builders",
    ),
    Alias(
        "rl_trainers.trainers.helpers.torchrl_schema",
        "rl_trainers.compat.torchrl.schema_builders",
        (
            "build_multi_async_collector",
            "build_multi_sync_collector",
            "build_ppo_loss",
            "build_ppo_trainer",
            "build_replay_buffer",
            "build_round_robin_writer",
            "build_sac_loss",
            "build_sac_trainer",
            "build_sync_collector",
            "build_tanh_normal_model",
            "build_value_model",
        ),
        "the ``_target_`` path of torchrl's config nodes' builders",
    ),
)

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def imports_the_adapter(alias: Alias) -> bool:
    """Whether the alias module imports :mod:`rl_trainers.compat` (then the
    ``compat-is-an-adapter`` import contract lists it as an exception)."""
    return any(source.startswith(_ADAPTER) for source, _ in alias.imports())


def file_of(alias: Alias) -> Path:
    """The alias module's file in the package."""
    return _PACKAGE_ROOT.joinpath(*alias.module.split(".")[1:]).with_suffix(".py")


def _import_order(name: str) -> tuple[int, str]:
    """ruff's (isort's) order of imported names: constants, classes, then the others."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def source_text(alias: Alias) -> str:
    """The alias module's text, as generated from the table."""
    imports = "".join(
        f"from {source} import (\n"
        + "".join(f"    {name},\n" for name in sorted(names, key=_import_order))
        + ")\n"
        for source, names in sorted(alias.imports())
    )
    modules = [f":mod:`{source}`" for source, _ in alias.imports()]
    sources = " and\n".join([",\n".join(modules[:-1]), modules[-1]] if modules[1:] else modules)
    listed = "".join(f'    "{name}",\n' for name in sorted(alias.exported()))
    return (
        f'"""{alias.path}: an alias, no logic.\n\n'
        f"Generated from :data:`rl_trainers.compat.torchrl.aliases.ALIASES`; the names are "
        f"those of\n{sources}.\n"
        '"""\n\n'
        f"{imports}\n"
        f"__all__ = [\n{listed}]\n"
    )


def stale() -> list[Path]:
    """The alias files whose text differs from the table's (or that are missing)."""
    return [
        file_of(a)
        for a in ALIASES
        if not file_of(a).is_file() or file_of(a).read_text() != source_text(a)
    ]


def write() -> list[Path]:
    """(Re)write every stale alias file; returns those written."""
    written = stale()
    by_file = {file_of(a): a for a in ALIASES}
    for path in written:
        path.write_text(source_text(by_file[path]))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="torchrl's alias modules, from their table.")
    parser.add_argument("--write", action="store_true", help="rewrite the stale files")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path}")
        return 0
    paths = stale()
    for path in paths:
        print(f"stale: {path}", file=sys.stderr)
    return 1 if paths else 0


if __name__ == "__main__":
    sys.exit(main())
