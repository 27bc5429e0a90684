"""Recipes written in torchrl's config schema (``tests/app/torchrl_recipes/``: a
``config/config.yaml`` and ``train.py`` each, as a torchrl user brings them over with the
package renamed) compose and train, with one policy module shared by the collector and the
loss; rl_trainers' own apps do not list torchrl's options."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from app.conftest import compose_config  # tests/ is on sys.path
from app.test_configs import _nodes
from app.test_configs import test_node_fields_match_target_signature as check_node_signature
from hydra import compose, initialize_config_dir
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rl_trainers.compat.torchrl import schema
from rl_trainers.compat.torchrl.schema import SHARED_OPTION_NAMES
from rl_trainers.trainers.algorithms.configs import GROUP_OPTIONS, TORCHRL_GROUP_OPTIONS

RECIPES = Path(__file__).parent / "torchrl_recipes"
REPO = Path(__file__).resolve().parents[2]

#: SAC's recipe, shortened to 2000 frames and a few updates per batch, for two cores.
SAC_SMALL = ["collector.total_frames=2000", "trainer.optim_steps_per_batch=8"]


@pytest.fixture
def recipe(tmp_path):
    """A copy of one of the torchrl-schema recipes in a fresh directory; returns its path."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(RECIPES / name, target)
        return target

    return copy


def _run(directory: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_SILENT": "true"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "train.py", *overrides],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _run_dir(directory: Path) -> Path:
    (run,) = (directory / "outputs").glob("*/*")  # hydra.job.chdir: true
    return run


def test_recipes_name_rl_trainers_only():
    for name in ("ppo_trainer", "sac_trainer"):
        text = "".join(p.read_text() for p in sorted((RECIPES / name).rglob("*.y*ml")))
        text += (RECIPES / name / "train.py").read_text()
        assert "torchrl." not in text and "rl_trainers" in text


def test_ppo_recipe_trains_and_writes_csv_logs(recipe):
    directory = recipe("ppo_trainer")
    proc = _run(directory, "trainer.total_frames=2048")
    assert proc.returncode == 0, proc.stderr[-3000:]
    scalars = _run_dir(directory) / "csv_logs" / "ppo_pendulum_v1" / "scalars"
    for name in ("r_training", "loss_objective", "loss_critic"):
        rows = (scalars / f"{name}.csv").read_text().strip().splitlines()
        assert len(rows) == 2  # one per collected batch of 1024 frames


def test_sac_recipe_trains_and_saves_the_checkpoint_it_asks_for(recipe):
    directory = recipe("sac_trainer")
    proc = _run(
        directory,
        *SAC_SMALL,
        "trainer.save_trainer_file=sac.pt",
        "trainer.save_trainer_interval=1000",
        "trainer.log_interval=500",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the recipe keeps the working directory (no hydra.job.chdir): outputs land there
    assert (directory / "sac.pt").exists()
    (wandb_run,) = (directory / "wandb").glob("offline-run-*")
    assert any(wandb_run.rglob("*.wandb"))


def _trainer(name: str, out: Path, *overrides: str):
    """The trainer of a recipe composed in this process, its logs under ``out``."""
    logs = {"ppo_trainer": f"logger.log_dir={out}", "sac_trainer": f"logger.save_dir={out}"}
    with initialize_config_dir(str(RECIPES / name / "config"), version_base="1.3"):
        cfg = compose("config", overrides=[logs[name], *overrides])
    return instantiate(cfg.trainer)


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # weight_update_map: {policy: loss_module.actor_network}
        ["trainer.weight_update_map=null"],  # the same node in collector.policy and loss
    ],
)
def test_ppo_collector_acts_with_the_losss_actor(overrides, tmp_path):
    trainer = _trainer("ppo_trainer", tmp_path, *overrides)
    try:
        assert trainer.collector.policy is trainer.loss_module.actor_network
        before = [p.clone() for p in trainer.loss_module.actor_network.parameters()]
        batch = next(iter(trainer.collector))
        loss = trainer.loss_module(batch.reshape(-1))
        sum(v for k, v in loss.items() if k.startswith("loss_")).backward()
        trainer.optimizer.step()
        moved = [p for p, b in zip(trainer.collector.policy.parameters(), before) if p.ne(b).any()]
        assert moved  # the optimizer's step changed the collector's policy
    finally:
        trainer.collector.shutdown()


def test_sac_multi_process_collector_holds_the_losss_actor(tmp_path):
    trainer = _trainer("sac_trainer", tmp_path, *SAC_SMALL)
    try:
        assert trainer.collector.policy is trainer.loss_module.actor_network
    finally:
        trainer.collector.shutdown()


def test_weight_update_map_naming_no_module_is_one_line_error(tmp_path):
    with pytest.raises(InstantiationException, match="weight_update_map.policy"):
        _trainer("ppo_trainer", tmp_path, "trainer.weight_update_map.policy=loss_module.nope")


def test_network_sizes_not_fitting_the_env_are_one_error_naming_the_model(tmp_path):
    # the recipe's in_features: 3 is Pendulum's; MountainCarContinuous observes 2 values
    env = "training_env.create_env_fn.base_env.env_name=MountainCarContinuous-v0"
    with pytest.raises(InstantiationException, match=r"loss.actor_network.*\(2,\).*in_features"):
        _trainer("ppo_trainer", tmp_path, env)


def test_seed_set_before_the_networks_are_built(tmp_path):
    first = _trainer("ppo_trainer", tmp_path)
    second = _trainer("ppo_trainer", tmp_path)
    try:
        for a, b in zip(first.loss_module.parameters(), second.loss_module.parameters()):
            assert torch.equal(a, b)
    finally:
        first.collector.shutdown()
        second.collector.shutdown()


def test_rl_trainers_option_errors_do_not_list_torchrls_options():
    proc = subprocess.run(
        [sys.executable, "sota-implementations/ppo_trainer/train.py", "env=nope"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "options of env: acrobot" in proc.stderr
    assert "batched_env" not in proc.stderr and "gym" not in proc.stderr


@pytest.mark.parametrize(
    ("group", "option"), [(g, o) for g, names in SHARED_OPTION_NAMES.items() for o in names]
)
def test_an_option_name_both_use_picks_each_apps_own_node(group, option, tmp_path):
    """rl_trainers' app gets its own node for ``group=option``; a torchrl-style config
    (``group@node: option``) gets torchrl's (Hydra would merge a ConfigStore node into a
    YAML option of the same name)."""
    ours = compose_config("ppo", [f"{group}={option}"])
    assert OmegaConf.get_type(ours[group]) is GROUP_OPTIONS[group][f"{option}_schema"]
    (tmp_path / "config.yaml").write_text(f"defaults:\n  - {group}@node: {option}\n")
    with initialize_config_dir(str(tmp_path), version_base="1.3"):
        theirs = compose("config")
    assert OmegaConf.get_type(theirs.node) is TORCHRL_GROUP_OPTIONS[group][option]


@pytest.mark.parametrize(
    "node",
    [
        n
        for n in _nodes(schema, schema.TORCHRL_GROUP_OPTIONS)
        if n.__module__ == schema.__name__ and n._target_ != "???"  # not a base node
    ],
    ids=lambda n: n.__name__,
)
def test_torchrl_node_fields_match_target_signature(node):
    """torchrl's own nodes cannot drift from the builders they target either."""
    check_node_signature(node)


def _with_transforms(*overrides: str):
    """The PPO recipe's ``config_with_transforms.yaml`` (torchrl's file of that name, in
    layout: a transformed env whose transform node names its factory by ``_target_``)."""
    with initialize_config_dir(str(RECIPES / "ppo_trainer" / "config"), version_base="1.3"):
        return compose("config_with_transforms", overrides=list(overrides))


def _transforms(env) -> list:
    """The transforms of ``env`` and of the envs it wraps, outermost first."""
    found = []
    while hasattr(env, "transform"):
        transform = env.transform
        found += list(transform) if hasattr(transform, "__iter__") else [transform]
        env = env.base_env
    return found


def test_config_with_transforms_builds_the_envs_its_factories_name():
    from rl_trainers.envs import DoubleToFloat, NoopResetEnv

    cfg = _with_transforms()
    env = instantiate(cfg.training_env)()  # a partial node, as torchrl's
    try:
        (noop,) = [t for t in _transforms(env) if isinstance(t, NoopResetEnv)]
        assert (noop.noops, noop.random) == (8, True)
        assert env.reset()["observation"].shape[-1] == 3
    finally:
        env.close()
    # the composed form torchrl's file shows commented out: make_compose of factory nodes
    factories = "rl_trainers.trainers.algorithms.configs.transforms"
    cfg.training_env.transform = {
        "_target_": f"{factories}.make_compose",
        "transforms": [
            {"_target_": f"{factories}.make_noop_reset_env", "noops": 3, "random": False},
            {"_target_": "rl_trainers.envs.transforms.transforms.DoubleToFloat"},
        ],
    }
    env = instantiate(cfg.batched_env)
    try:
        kinds = [type(t) for t in _transforms(env)]
        assert NoopResetEnv in kinds and DoubleToFloat in kinds
        assert env.batch_size == torch.Size([1])
        rollout = env.rollout(4)
        assert rollout["next", "reward"].shape == (1, 4, 1)
    finally:
        env.close()


def test_config_with_transforms_trainer_collects_with_the_losss_actor(tmp_path):
    trainer = instantiate(_with_transforms(f"logger.save_dir={tmp_path}").trainer)
    try:
        assert trainer.collector.policy is trainer.loss_module.actor_network
        batch = next(iter(trainer.collector))
        assert batch.numel() == 256 and "sample_log_prob" in batch.keys()
    finally:
        trainer.collector.shutdown()


def test_only_torchrls_path_registers_torchrls_nodes():
    """A process running rl_trainers' own app has none of torchrl's nodes in its ConfigStore;
    importing torchrl's path adds them."""
    code = (
        "from hydra.core.config_store import ConfigStore\n"
        "import rl_trainers.app\n"
        "def names(): return {f'{g}/{n}' for g, o in ConfigStore.instance().repo.items()"
        " if isinstance(o, dict) for n in o}\n"
        "print('env/batched_env.yaml' in names(), 'trainer/ppo.yaml' in names())\n"
        "import rl_trainers.trainers.algorithms.configs\n"
        "print('env/batched_env.yaml' in names(), 'trainer/ppo.yaml' in names())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False", "True", "True"], proc.stdout
