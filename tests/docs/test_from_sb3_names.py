"""Every field docs/from-sb3.md gives for an SB3 hyperparameter exists in that algorithm's
config, and every command it shows composes: the page cannot name a field that is not
there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rl_trainers.app import RECIPES_DIR

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "from-sb3.md").read_text()
_FIELD = re.compile(
    r"\b((?:env|network|model|collector|loss|optimizer|lr_scheduler|trainer|"
    r"replay_buffer|eval)\.[a-z_.]+[a-z_])"
)


def _section(title: str) -> str:
    return PAGE.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _config(algorithm: str):
    # model/policy=tanh_normal: the node with every policy field the page names
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        return compose(f"{algorithm}_trainer", overrides=["model/policy=tanh_normal"])


@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_every_field_of_the_algorithms_table_exists(algorithm):
    fields = set(_FIELD.findall(_section(algorithm.upper())))
    assert len(fields) > 10
    cfg = _config(algorithm)
    missing = sorted(
        f for f in fields if OmegaConf.select(cfg, f, default="<missing>") == "<missing>"
    )
    assert missing == []


def test_the_commands_of_a_run_compose():
    commands = re.findall(r"`rl-trainers (sac [^`]+)`", _section("A run"))
    assert commands
    for command in commands:
        algorithm, *overrides = command.split()
        with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
            cfg = compose(f"{algorithm}_trainer", overrides=overrides)
        assert cfg.env.env_name == "Hopper-v5" and cfg.trainer.total_frames == 300_000
