"""The DQN CartPole example learns (slow: about a minute on 2 cores)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dqn_cartpole.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("dqn_cartpole", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_dqn_cartpole_reaches_200_within_50k_frames(tmp_path):
    example = _load_example()
    result = example.main(seed=0, total_frames=50_000, log_dir=str(tmp_path), progress_bar=False)
    assert result["trainer"].collected_frames >= 50_000
    assert result["eval_return"] >= 200, result["eval_return"]
    # the evaluation hook's results reached the CSV logger
    csv = tmp_path / "dqn_cartpole_seed0" / "scalars" / "eval" / "episode_return_mean.csv"
    rows = [line.split(",") for line in csv.read_text().split()]
    assert rows and all(math.isfinite(float(v)) for _, v in rows)


def test_dqn_cartpole_rejects_unknown_hyperparameters():
    example = _load_example()
    with pytest.raises(ValueError, match="Unknown hyperparameters \\['lrr'\\]"):
        example.main(total_frames=64, lrr=1.0)
