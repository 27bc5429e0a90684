"""The packaged recipes compose from a fresh interpreter, as docs/configuration.md shows."""

from __future__ import annotations

import subprocess
import sys

COMPOSE = """
from hydra import compose, initialize_config_dir
from rl_trainers.app import RECIPES_DIR
with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
    cfg = compose("ppo_trainer", ["env=pendulum", "model/policy=normal"])
print(cfg.env.env_name, cfg.model.policy._target_)
"""


def test_recipes_compose_with_only_recipes_dir_imported(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", COMPOSE], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["Pendulum-v1", "rl_trainers.modules.make_normal_model"]
