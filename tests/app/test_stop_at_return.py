"""``eval.stop_at_return``: training ends, complete, at the first periodic evaluation whose
mean return reaches the target (as SB3's ``StopTrainingOnRewardThreshold``)."""

from __future__ import annotations

import json

import pytest

from rl_trainers.app.run import run
from rl_trainers.configs.validation import validate_config
from rl_trainers.errors import ConfigError


def _summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_training_ends_at_the_first_evaluation_reaching_the_target(tiny_config, tmp_path):
    # TINY["ppo"]: batches of 64 frames, 256 in all; an evaluation after every second batch
    cfg = tiny_config("ppo", ["eval.interval=128", "eval.stop_at_return=-1e9"])
    mean = run(cfg, output_dir=tmp_path)
    summary = _summary(tmp_path)
    assert summary["frames"] == 128
    assert "eval.stop_at_return=-1000000000.0" in summary["finished_early"]
    assert mean >= -1e9
    assert (tmp_path / "checkpoints" / "trainer_128.pt").exists()


def test_an_unreached_target_trains_every_frame(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["eval.interval=128", "eval.stop_at_return=1e9"])
    run(cfg, output_dir=tmp_path)
    summary = _summary(tmp_path)
    assert summary["frames"] == 256 and summary["finished_early"] is None


def test_a_target_without_periodic_evaluations_is_refused(tiny_config):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("ppo", ["eval.stop_at_return=475"]))
    assert "eval.stop_at_return=475" in str(err.value)
    assert "eval.interval" in str(err.value)
