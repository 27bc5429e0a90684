"""Train 2N frames straight, or N frames, stop, resume to 2N: the results are bitwise equal."""

from __future__ import annotations

import pytest

from rl_trainers.trainers.algorithms.app import run

from .conftest import assert_same_state, csv_curves, interrupted_run, tiny

CASES = {
    # algorithm, stop frame, overrides (2N = TINY total_frames)
    "ppo": ("ppo", 128, ["trainer.save_trainer_interval=64"]),
    "ppo_vecnorm_pendulum": (
        "ppo",
        128,
        ["env=pendulum", "env.normalize_observations=true", "env.reward_scale=0.1"],
    ),
    "ppo_async_envs": ("ppo", 128, ["env.vectorization=async"]),
    "ppo_multi_sync": ("ppo", 128, ["collector=multi_sync", "collector.num_workers=2"]),
    "sac": (
        "sac",
        100,
        [
            "collector.frames_per_batch=2",
            "trainer.log_interval=20",
            "network.policy.num_cells=[32,32]",
            "network.value.num_cells=[32,32]",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_stop_and_resume_is_bitwise_identical(case, tmp_path):
    algorithm, stop_at, overrides = CASES[case]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run(tiny(algorithm, *overrides), straight)

    assert interrupted_run(tiny(algorithm, *overrides), resumed, stop_at) == stop_at
    run(tiny(algorithm, *overrides, "trainer.resume=true"), resumed)

    assert_same_state(
        straight / "checkpoints" / "trainer.pt", resumed / "checkpoints" / "trainer.pt"
    )
    a, b = csv_curves(straight), csv_curves(resumed)
    assert a and a == b
