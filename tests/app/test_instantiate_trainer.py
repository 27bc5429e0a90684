"""torchrl's entry point: ``trainer = hydra.utils.instantiate(cfg.trainer); trainer.train()``
builds the trainer the app builds, from ``@hydra.main`` or from the compose API."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rl_trainers.algorithms import PPOTrainer, SACTrainer, build_trainer
from rl_trainers.algorithms.build import plain_config
from rl_trainers.app import RECIPES_DIR
from rl_trainers.configs import PPOLoopConfig, PPOTrainerConfig
from rl_trainers.core import TrainerHookBase

from .conftest import TINY


def _params(trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.loss_module.state_dict().items()}


def test_instantiate_from_compose_trains_the_apps_trainer_under_outputs(
    tiny_config, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    cfg = tiny_config("ppo", ["env=pendulum"])
    trainer = instantiate(cfg.trainer)
    assert type(trainer) is PPOTrainer
    run_dir = trainer.save_trainer_file.parent.parent
    assert run_dir.parent == tmp_path / "outputs" / "ppo" / "Pendulum-v1"
    trainer.train()
    assert trainer.collected_frames == 256
    assert (run_dir / "checkpoints" / "trainer_256.pt").exists()
    assert list((run_dir / "logs" / "ppo_Pendulum-v1" / "scalars").glob("*.csv"))

    reference = build_trainer(cfg, tmp_path / "app")  # what train.py's run() builds
    reference.train()
    mine, theirs = _params(trainer), _params(reference)
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)


@pytest.mark.parametrize("algorithm", ["td3", "ddpg"])
def test_instantiate_builds_td3_and_ddpg_as_the_app_does(
    tiny_config, algorithm, tmp_path, monkeypatch
):
    from rl_trainers.algorithms import TRAINERS

    monkeypatch.chdir(tmp_path)
    cfg = tiny_config(algorithm)
    trainer = instantiate(cfg.trainer)
    assert type(trainer) is TRAINERS[algorithm]
    run_dir = trainer.save_trainer_file.parent.parent
    assert run_dir.parent == tmp_path / "outputs" / algorithm / "Pendulum-v1"
    trainer.train()
    assert trainer.collected_frames == 200
    reference = build_trainer(cfg, tmp_path / "app")
    reference.train()
    mine, theirs = _params(trainer), _params(reference)
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)


def test_instantiate_keyword_arguments_and_overrides_reach_the_trainer(tmp_path):
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(
            "sac_trainer",
            [*TINY["sac"], "env=mountaincar_continuous", f"hydra.run.dir={tmp_path}/run"],
            return_hydra_config=True,
        )
    trainer = instantiate(cfg.trainer, total_frames=120)
    assert type(trainer) is SACTrainer
    assert trainer.total_frames == 120
    assert trainer.save_trainer_file == tmp_path / "run" / "checkpoints" / "trainer.pt"
    assert trainer.collector.env.env_name == "MountainCarContinuous-v0"


def test_a_misspelt_keyword_argument_names_the_field(tiny_config):
    cfg = tiny_config("ppo")
    with pytest.raises(Exception) as info:
        instantiate(cfg.trainer, total_frame=512)
    assert "trainer.total_frame=512 is invalid" in str(info.value)
    assert "did you mean trainer.total_frames?" in str(info.value)


def test_a_loop_node_without_its_config_says_what_to_instantiate():
    with pytest.raises(Exception) as info:
        instantiate(PPOLoopConfig())
    assert "builds the trainer from the whole config" in str(info.value)
    assert (
        "composed ppo_trainer, sac_trainer, dqn_trainer, td3_trainer, ddpg_trainer, a2c_trainer "
        "or pg_trainer config" in str(info.value)
    )


def test_a_structured_root_config_instantiates_its_trainer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = OmegaConf.structured(PPOTrainerConfig(trainer=PPOLoopConfig(total_frames=512)))
    trainer = instantiate(cfg.trainer)
    assert type(trainer) is PPOTrainer and trainer.total_frames == 512
    assert trainer.collector.env.env_name == "CartPole-v1"


def test_resolving_the_whole_config_does_not_recurse_and_hparams_leave_the_link_out(
    tiny_config,
):
    cfg = tiny_config("ppo")
    link = "${rl_trainers.root_config:}"
    assert OmegaConf.to_container(cfg, resolve=True)["trainer"]["_config_"] == link
    assert f"_config_: {link}" in OmegaConf.to_yaml(cfg, resolve=True)
    assert "_config_" not in plain_config(cfg)["trainer"]
    assert plain_config(cfg)["trainer"]["total_frames"] == 256


def test_a_resolved_config_and_its_plain_copy_still_instantiate(tiny_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tiny_config("sac")
    OmegaConf.resolve(cfg)  # in place, as some scripts do first
    plain = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    for config in (cfg, plain):
        trainer = instantiate(config.trainer)
        assert type(trainer) is SACTrainer and trainer.total_frames == 200


def test_instantiate_resumes_the_checkpoint_of_its_run_directory(tmp_path):
    def composed(*overrides):
        with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
            return compose(
                "ppo_trainer",
                [*TINY["ppo"], f"hydra.run.dir={tmp_path}", *overrides],
                return_hydra_config=True,
            )

    first = instantiate(composed().trainer)
    counter = _BatchCounter()
    counter.register(first)
    first.train()
    assert counter.batches > 1
    with pytest.raises(Exception, match="add trainer.resume=true"):
        instantiate(composed().trainer)
    trainer = instantiate(composed("trainer.resume=true", "trainer.total_frames=320").trainer)
    assert trainer.collected_frames == 256
    resumed = _BatchCounter()
    resumed.register(trainer)  # after the load: its state comes from the checkpoint
    assert resumed.batches == counter.batches
    trainer.train()
    assert trainer.collected_frames == 320
    assert resumed.batches == counter.batches + 1


class _BatchCounter(TrainerHookBase):
    """A user's hook with a checkpointed state."""

    batches = 0

    def register(self, trainer, name="batch_counter"):
        trainer.register_op("post_steps", self)
        trainer.register_module(name, self)

    def __call__(self):
        self.batches += 1

    def state_dict(self):
        return {"batches": self.batches}

    def load_state_dict(self, state_dict):
        self.batches = state_dict["batches"]


USER_SCRIPT = """
import hydra
from rl_trainers.trainers.algorithms.configs import *


@hydra.main(config_path="myconfigs", config_name="{name}", version_base="1.1")
def main(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.train()
    print("trained", type(trainer).__name__, trainer.collected_frames)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    ("algorithm", "cls", "frames", "env"),
    [
        ("ppo", "PPOTrainer", 256, "pendulum"),
        ("sac", "SACTrainer", 200, "pendulum"),
        ("dqn", "DQNTrainer", 256, "acrobot"),
        ("td3", "TD3Trainer", 200, "pendulum"),
        ("ddpg", "DDPGTrainer", 200, "pendulum"),
        ("a2c", "A2CTrainer", 256, "pendulum"),
        ("pg", "PGTrainer", 256, "pendulum"),
    ],
)
def test_torchrls_hydra_main_script_trains_in_hydras_run_directory(
    algorithm, cls, frames, env, tmp_path
):
    shutil.copytree(Path(RECIPES_DIR), tmp_path / "myconfigs")
    script = tmp_path / "my_train.py"
    script.write_text(textwrap.dedent(USER_SCRIPT.format(name=f"{algorithm}_trainer")))
    overrides = [*TINY[algorithm], f"env={env}", "trainer.num_threads=1", "hydra.run.dir=run"]
    proc = subprocess.run(
        [sys.executable, str(script), *overrides],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HYDRA_FULL_ERROR": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"trained {cls} {frames}" in proc.stdout
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoints" / f"trainer_{frames}.pt").exists()
    env_name = {"pendulum": "Pendulum-v1", "acrobot": "Acrobot-v1"}[env]
    assert list((run_dir / "logs" / f"{algorithm}_{env_name}" / "scalars").glob("*.csv"))
    saved = (run_dir / ".hydra" / "config.yaml").read_text()
    assert f"env_name: {env_name}" in saved
    assert "_config_: ${rl_trainers.root_config:}" in saved
    assert not Path(tmp_path / "logs").exists()  # nothing outside the run directory
