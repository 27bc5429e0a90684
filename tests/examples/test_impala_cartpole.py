"""The IMPALA CartPole example learns (slow: about 15 s on 2 cores), and its workers' lag is
real, so V-trace's importance weights are not all 1."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "impala_cartpole.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("impala_cartpole", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_impala_cartpole_reaches_400_within_100k_frames(tmp_path):
    example = _load_example()
    result = example.main(seed=0, total_frames=100_000, log_dir=str(tmp_path))
    assert result["frames"] >= 100_000
    # seeds 0-19 reached 492-500 (mostly 500) in the measurements: a margin for the
    # asynchronous collection, which makes runs with the same seed differ
    assert result["eval_return"] >= 400, result["eval_return"]
    csv = tmp_path / "impala_cartpole_seed0" / "scalars" / "eval" / "episode_return_mean.csv"
    rows = [line.split(",") for line in csv.read_text().split()]
    assert rows and all(math.isfinite(float(v)) for _, v in rows)


def test_impala_cartpole_workers_lag_the_learner():
    example = _load_example()
    result = example.main(seed=0, total_frames=4096)
    lags = result["max_log_ratio"]  # per batch: max |log pi_learner - log mu_worker|
    assert len(lags) == 16
    # the first batch was collected with the learner's initial weights: on-policy
    assert lags[0] < 1e-5, lags[0]
    # later ones with weights one or more updates old: the importance weights correct them
    assert max(lags[1:]) > 1e-3, lags


def test_impala_cartpole_rejects_unknown_hyperparameters():
    example = _load_example()
    with pytest.raises(ValueError, match="Unknown hyperparameters \\['lrr'\\]"):
        example.main(total_frames=64, lrr=1.0)
