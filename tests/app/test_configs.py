"""Config nodes cannot drift from the components they build, and every group option builds."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import pytest
import torch
from hydra.utils import get_object

from rl_trainers import configs
from rl_trainers.app import RECIPES_DIR
from rl_trainers.configs import GROUP_OPTIONS, ROOT_SCHEMAS

from .conftest import ENV_OPTIONS, compose_config

#: Arguments a builder passes at run time (objects a config cannot hold).
#: Fields the app reads and removes before instantiating the node's target: the logger
#: backend guard's setting (``logger.on_error``, read by ``resolve_logger``).
READ_BY_THE_APP = {"on_error"}
RUNTIME_ARGS = {
    "params",
    "optimizer",
    "total_steps",
    "actor_network",
    "critic_network",
    "qvalue_network",
    "value_network",
    "create_env_fn",
    "policy",
    "total_frames",
    "observation_spec",
    "action_spec",
    "network",
    "loss_module",  # torchrl's target updater nodes are partials the trainer gives the loss
}


def _node_type(tp):
    """The dataclass inside ``Node | None``, else ``tp``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 and dataclasses.is_dataclass(args[0]) else tp


def _nodes(module=configs, group_options=GROUP_OPTIONS) -> list[type]:
    """The nodes with a ``_target_`` of ``module`` (its roots, its groups' options, the nodes
    it exports in no group) and the nodes inside them."""
    seen: dict[str, type] = {}

    def walk(node: type) -> None:
        seen[node.__qualname__] = node
        hints = typing.get_type_hints(node)
        for f in dataclasses.fields(node):
            tp = _node_type(hints[f.name])
            if dataclasses.is_dataclass(tp):
                walk(tp)

    for root in ROOT_SCHEMAS.values():
        walk(root)
    for options in group_options.values():
        for node in options.values():
            walk(node)
    for name in module.__all__:  # the nodes exported but in no group (torchrl's names)
        node = getattr(module, name)
        if isinstance(node, type) and dataclasses.is_dataclass(node):
            walk(node)
    return [n for n in seen.values() if any(f.name == "_target_" for f in dataclasses.fields(n))]


def _accepted_keywords(target) -> tuple[set[str], bool]:
    """The keywords ``target`` accepts, and whether it accepts any keyword.

    A class whose ``__init__`` takes ``**kwargs`` (e.g. ``TensorDictReplayBuffer``) is taken
    to pass them to its base class (``ReplayBuffer``), whose parameters are then the ones
    accepted: a node cannot hide a field its target drops into ``**kwargs``.
    """
    params = inspect.signature(target).parameters
    names = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    takes_kwargs = len(names) < len(params)
    for base in target.__mro__[1:] if isinstance(target, type) else ():
        if not takes_kwargs or base is object:
            break
        if "__init__" in vars(base):
            params = inspect.signature(base).parameters
            names |= {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
            takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    return names, takes_kwargs


def test_signature_check_covers_network_model_and_torchrl_named_nodes():
    names = {n.__name__ for n in _nodes()}
    for name in (
        "TensorDictReplayBufferConfig",
        "LazyMemmapStorageConfig",
        "PrioritizedSamplerConfig",
        "TensorDictRoundRobinWriterConfig",
        "VecNormConfig",
        "ConvNetConfig",
        "PolicyModelConfig",
        "TanhNormalModelConfig",
        "CategoricalModelConfig",
        "ValueModelConfig",
        "QValueModelConfig",
    ):
        assert name in names


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: n.__name__)
def test_node_fields_match_target_signature(node):
    target = get_object(node._target_)
    params = inspect.signature(target).parameters
    accepted, takes_kwargs = _accepted_keywords(target)
    fields = {f.name for f in dataclasses.fields(node) if not f.name.startswith("_")}
    unknown = fields - accepted - READ_BY_THE_APP
    assert takes_kwargs or not unknown, (
        f"{node.__name__} fields not accepted by {node._target_}: {unknown}"
    )
    required = {
        name
        for name, p in params.items()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    missing = required - fields - RUNTIME_ARGS
    assert not missing, f"{node._target_} requires {missing}, which {node.__name__} does not have"


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: n.__name__)
def test_every_field_is_documented(node):
    for f in dataclasses.fields(node):
        if not f.name.startswith("_"):
            assert f.metadata.get("help"), f"{node.__name__}.{f.name} has no one-line description"


@pytest.mark.parametrize("env", ENV_OPTIONS)
def test_every_env_option_builds_without_sizes(env):
    from hydra.utils import instantiate

    from rl_trainers.configs import ENV_PRESET_ACTIONS
    from rl_trainers.modules import spec_kind

    cfg = compose_config("ppo", [f"env={env}", "env.num_envs=2"])
    built = instantiate(cfg.env)
    try:
        td = built.reset()
        assert td["observation"].shape[0] == 2
        assert built.action_spec.shape[0] == 2
        # --help lists env presets per algorithm from this declaration, without building
        discrete = spec_kind(built.action_spec) in ("one_hot", "categorical")
        assert ENV_PRESET_ACTIONS.get(env) == ("discrete" if discrete else "continuous")
    finally:
        built.close()


def test_no_yaml_holds_a_size_or_bound():

    for path in Path(RECIPES_DIR).rglob("*.yaml"):
        text = path.read_text()
        for word in ("in_features", "out_features", "action_dim", "obs_dim", "low:", "high:"):
            assert word not in text, f"{path} sets {word}"


@pytest.mark.parametrize(
    ("sampler", "cls"),
    [
        ("random", "RandomSampler"),
        ("without_replacement", "SamplerWithoutReplacement"),
        ("prioritized", "PrioritizedSampler"),
    ],
)
def test_replay_buffer_node_names_its_sampler_and_writer(sampler, cls):
    from hydra.utils import instantiate
    from tensordict import TensorDict

    cfg = compose_config(
        "sac",
        [
            "replay_buffer.size=100",
            "replay_buffer.batch_size=4",
            f"replay_buffer.sampler={sampler}",
        ],
    )
    buffer = instantiate(cfg.replay_buffer)
    assert type(buffer._sampler).__name__ == cls
    assert type(buffer._writer).__name__ == "RoundRobinWriter"
    buffer.extend(TensorDict({"x": torch.arange(10.0)}, batch_size=[10]))
    assert buffer.sample()["x"].shape == (4,)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("replay_buffer.sampler=uniformm", ["replay_buffer.sampler", "uniformm", "prioritized"]),
        ("replay_buffer.writer=fifo", ["replay_buffer.writer", "fifo", "round_robin"]),
    ],
)
def test_replay_buffer_bad_choice_names_the_options(override, expected):
    from rl_trainers.algorithms.build import build
    from rl_trainers.errors import ConfigError

    cfg = compose_config("sac", [override])
    with pytest.raises(ConfigError) as info:
        build(cfg, "replay_buffer")
    for text in expected:
        assert text in str(info.value)


def test_env_transforms_field_appends_transforms_from_the_command_line():
    """``env.transforms`` takes transform nodes; a StepCounter cuts episodes at its limit."""
    from rl_trainers.algorithms.build import build
    from rl_trainers.envs import StepCounter

    cfg = compose_config(
        "ppo",
        ["env.num_envs=2", "env.transforms=[{_target_:rl_trainers.envs.StepCounter,max_steps:5}]"],
    )
    env = build(cfg, "env")
    assert isinstance(list(env.transform)[-1], StepCounter)
    rollout = env.rollout(12, break_when_any_done=False)
    assert int(rollout["next", "step_count"].max()) == 5
    assert bool(rollout["next", "truncated"][:, 4].all())


def test_env_transforms_rejects_a_non_transform():
    from rl_trainers.algorithms.build import build
    from rl_trainers.errors import ConfigError

    cfg = compose_config("ppo", ["env.transforms=[42]"])
    with pytest.raises(ConfigError) as info:
        build(cfg, "env")
    assert "env.transforms[0]" in str(info.value) and "_target_" in str(info.value)


def test_run_with_env_transforms_saves_and_resumes(tiny_config, tmp_path):
    """The transforms are part of the checkpoint's setup fingerprint (a plain, storable list)."""
    from rl_trainers.algorithms import build_trainer
    from rl_trainers.app.run import run
    from rl_trainers.core.checkpoint import CheckpointError

    step_counter = "env.transforms=[{_target_:rl_trainers.envs.StepCounter,max_steps:50}]"
    run(tiny_config("ppo", [step_counter]), output_dir=tmp_path)
    ckpt = tmp_path / "checkpoints" / "trainer.pt"
    same = build_trainer(tiny_config("ppo", [step_counter]), tmp_path / "same")
    same.load_from_file(ckpt)
    assert same.collected_frames >= 256
    other = build_trainer(tiny_config("ppo"), tmp_path / "other")
    with pytest.raises(CheckpointError, match="env.transforms"):
        other.load_from_file(ckpt)


@pytest.mark.parametrize("num_envs", [1, 4])
def test_sac_num_envs_alone_gives_one_step_of_every_env_per_batch(num_envs):
    """``env.num_envs=4`` is the one override SAC needs (frames_per_batch follows it)."""
    from rl_trainers.configs.validation import validate_config

    cfg = compose_config("sac", [f"env.num_envs={num_envs}"])
    assert cfg.collector.frames_per_batch == num_envs
    validate_config(cfg)
    assert (
        compose_config(
            "sac", ["env.num_envs=4", "collector.frames_per_batch=8"]
        ).collector.frames_per_batch
        == 8
    )


@pytest.mark.parametrize("override", ["env.make_kwargs={g:0.0}", "+env.make_kwargs.g=0.0"])
def test_env_make_kwargs_reach_gymnasium_make(override):
    """Pendulum-v1 without gravity: with no torque its angular velocity does not change."""
    from rl_trainers.algorithms.build import build

    def first_step(overrides):
        env = build(compose_config("ppo", ["env=pendulum", "env.num_envs=1", *overrides]), "env")
        td = env.reset(seed=0)
        td["action"] = torch.zeros(1, 1)
        out = env.step(td)
        env.close()
        return td["observation"][..., 2], out["next", "observation"][..., 2]

    before, after = first_step([override])
    assert torch.allclose(before, after, atol=1e-6)
    before, after = first_step([])
    assert not torch.allclose(before, after, atol=1e-3)


def test_env_make_kwargs_unknown_argument_is_a_config_error():
    from rl_trainers.algorithms.build import build
    from rl_trainers.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        build(compose_config("ppo", ["env.make_kwargs={nosuch:1}"]), "env")
    assert "env" in str(info.value) and "nosuch" in str(info.value)
