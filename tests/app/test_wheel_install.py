"""The built wheel is the whole product: installed away from the checkout, ``rl-trainers ppo``
finds its recipes, lists them in ``--help`` and trains, from any working directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

#: What the wheel is built from: the project's metadata and its one package.
SOURCES = ("pyproject.toml", "README.md", "rl_trainers")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A ``site`` directory holding the wheel's files (no dependencies: they are this
    interpreter's), and the wheel built from a copy of the sources (the checkout stays clean)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(root / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = (root / "dist").glob("rl_trainers-*.whl")
    site = root / "site"
    install = subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return site


def rl_trainers_command(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``rl-trainers ...`` of the installed wheel (its console script's entry point, run as
    ``python -m rl_trainers``), first checking the package is the wheel's, not the checkout."""
    check = (
        "import pathlib, sys, rl_trainers; "
        f"assert pathlib.Path(rl_trainers.__file__).is_relative_to({str(site)!r}), "
        "rl_trainers.__file__; "
        "from rl_trainers.app.cli import main; "
        "main(sys.argv[1:])"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-c", check, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_wheel_declares_the_rl_trainers_command(installed):
    (dist_info,) = installed.glob("rl_trainers-*.dist-info")
    entry_points = (dist_info / "entry_points.txt").read_text()
    assert "rl-trainers = rl_trainers.app.cli:main" in entry_points
    assert (installed / "rl_trainers" / "app" / "recipes" / "ppo_trainer.yaml").is_file()


def test_help_of_the_installed_app_lists_the_groups(installed, tmp_path):
    proc = rl_trainers_command(installed, "ppo", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "== Config groups (group=option) ==" in proc.stdout
    for group in ("env: ", "experiment: ", "logger: ", "optimizer: "):
        assert group in proc.stdout
    assert "pendulum" in proc.stdout and "ppo_pendulum" in proc.stdout


def test_the_installed_command_trains_and_writes_its_summary(installed, tmp_path):
    """The wheel's ``rl-trainers`` script trains from a directory outside the checkout, on
    the recipes inside the installed package."""
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [
            str(installed / "bin" / "rl-trainers"),
            "ppo",
            "env=pendulum",
            "trainer.total_frames=512",
            "collector.frames_per_batch=256",
            "env.num_envs=4",
            "eval.episodes=1",
            "trainer.progress_bar=false",
            "trainer.log_interval=256",
            "logger=csv",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["algorithm"] == "ppo" and summary["env"] == "Pendulum-v1"
    assert summary["frames"] == 512
    hydra = (run_dir / ".hydra" / "hydra.yaml").read_text()
    assert f"path: {installed / 'rl_trainers' / 'app' / 'recipes'}" in hydra
    assert "started: rl-trainers ppo env=pendulum" in (run_dir / "train.log").read_text()
