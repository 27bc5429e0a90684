"""Resume with the recipes' defaults: clip annealing, a linear lr schedule, no evaluation
during training (``eval.interval=0``) and a log interval longer than a batch.

A run stopped mid-way and resumed, or a finished run resumed, gives bitwise the same
parameters, the same logged points and the same final evaluation as the uninterrupted run;
``summary.json`` reports the frames and speed of the resumed session only.
"""

from __future__ import annotations

import json

import pytest

from rl_trainers.app.run import run
from rl_trainers.core.checkpoint import load_checkpoint

from .conftest import assert_same_state, compose_config, csv_curves, interrupted_run, tiny

#: The PPO recipe as shipped (anneal_clip_epsilon=true, lr_scheduler.kind=linear,
#: eval.interval=0), made small: 8 batches of 128 frames, log points at 512 and 1024 only;
#: enough epochs that the clip range is reached (clip_fraction > 0), so it matters.
PPO_DEFAULTS = [
    "trainer.total_frames=1024",
    "collector.frames_per_batch=128",
    "env.num_envs=4",
    "trainer.minibatch_size=64",
    "trainer.num_epochs=10",
    "eval.episodes=4",
    "trainer.progress_bar=false",
    "trainer.log_interval=512",
]
#: Stopped in the middle of the second log window, after the point at 512.
PPO_STOP = 640


def _summary(run_dir) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def ppo_runs(tmp_path_factory):
    """An uninterrupted default-config PPO run, the same run stopped at 640 frames and
    resumed, and the finished run resumed once more (nothing left to train)."""
    root = tmp_path_factory.mktemp("ppo_defaults")
    straight, resumed = root / "straight", root / "resumed"
    cfg = compose_config("ppo", PPO_DEFAULTS)
    assert cfg.trainer.anneal_clip_epsilon and cfg.lr_scheduler.kind == "linear"
    assert cfg.eval.interval == 0
    run(cfg, straight)
    out = {
        "straight_summary": _summary(straight),
        "straight_curves": csv_curves(straight),
    }
    assert interrupted_run(compose_config("ppo", PPO_DEFAULTS), resumed, PPO_STOP) == PPO_STOP
    run(compose_config("ppo", [*PPO_DEFAULTS, "trainer.resume=true"]), resumed)
    out["resumed_summary"] = _summary(resumed)
    out["resumed_curves"] = csv_curves(resumed)
    # the finished run resumed: it trains nothing and only evaluates again
    run(compose_config("ppo", [*PPO_DEFAULTS, "trainer.resume=true"]), straight)
    out["finished_summary"] = _summary(straight)
    out["dirs"] = (straight, resumed)
    return out


def test_clip_annealing_resumes_bitwise(ppo_runs):
    """The annealed clip range is set from the restored frame count on load, so the first
    batch after the resume is optimised like the uninterrupted run's (was: initial 0.2)."""
    straight, resumed = ppo_runs["dirs"]
    assert_same_state(
        straight / "checkpoints" / "trainer.pt", resumed / "checkpoints" / "trainer.pt"
    )


def test_clip_range_after_load_matches_the_uninterrupted_run(tmp_path):
    from rl_trainers.algorithms import build_trainer
    from rl_trainers.algorithms.build import close_trainer

    cfg = tiny("ppo", "trainer.anneal_clip_epsilon=true")
    assert interrupted_run(cfg, tmp_path, 128) == 128
    trainer = build_trainer(tiny("ppo", "trainer.anneal_clip_epsilon=true"), tmp_path)
    try:
        assert trainer.loss_module.clip_epsilon == pytest.approx(0.2)
        trainer.load_from_file(tmp_path / "checkpoints" / "trainer.pt")
        assert trainer.loss_module.clip_epsilon == pytest.approx(0.2 * (1 - 128 / 256))
    finally:
        close_trainer(trainer)


def test_resumed_run_logs_the_same_points(ppo_runs):
    """The log gate's windows are rebuilt from the restored logger: no extra point at 768
    (the first batch after the resume in the window the point at 512 already covers)."""
    straight, resumed = ppo_runs["straight_curves"], ppo_runs["resumed_curves"]
    episode_return = next(k for k in straight if k.endswith("train/episode_return.csv"))
    assert [row[0] for row in straight[episode_return]] == ["512", "1024"]
    steps = {name: [row[0] for row in rows] for name, rows in resumed.items()}
    assert steps == {name: [row[0] for row in rows] for name, rows in straight.items()}
    assert resumed == straight


def test_final_evaluation_does_not_depend_on_the_resume(ppo_runs):
    """With eval.interval=0 the eval env is never used before the checkpoint; the final
    evaluation is seeded from the run's seed, so it is the same after any resume."""
    expected = ppo_runs["straight_summary"]["eval_return_mean"]
    assert ppo_runs["resumed_summary"]["eval_return_mean"] == expected
    assert ppo_runs["finished_summary"]["eval_return_mean"] == expected
    assert (
        ppo_runs["finished_summary"]["eval_return_std"]
        == (ppo_runs["straight_summary"]["eval_return_std"])
    )


def test_summary_counts_this_sessions_frames(ppo_runs):
    straight = ppo_runs["straight_summary"]
    assert straight["frames"] == straight["session_frames"] == 1024
    assert straight["resumed_from_frame"] == 0
    assert straight["fps"] == pytest.approx(1024 / straight["wall_time_s"], rel=0.01)
    resumed = ppo_runs["resumed_summary"]
    assert resumed["frames"] == 1024 and resumed["resumed_from_frame"] == PPO_STOP
    assert resumed["session_frames"] == 1024 - PPO_STOP
    assert resumed["fps"] == pytest.approx((1024 - PPO_STOP) / resumed["wall_time_s"], rel=0.01)
    finished = ppo_runs["finished_summary"]
    assert finished["frames"] == 1024 and finished["session_frames"] == 0
    assert finished["fps"] == 0.0


def test_summary_counts_the_training_time_of_every_session(ppo_runs):
    straight = ppo_runs["straight_summary"]
    assert straight["total_train_time_s"] == straight["train_time_s"]  # one clock
    # the resumed run: the stopped session's time, carried in its checkpoint, plus this one's
    _, resumed_dir = ppo_runs["dirs"]
    stopped = load_checkpoint(resumed_dir / "checkpoints" / f"trainer_{PPO_STOP}.pt")
    first_session = stopped["timing"]["train_time_s"]
    assert first_session > 0
    resumed = ppo_runs["resumed_summary"]
    assert resumed["total_train_time_s"] == pytest.approx(
        first_session + resumed["train_time_s"], abs=0.05
    )
    # the finished run resumed trains nothing: its total stays the uninterrupted run's
    finished = ppo_runs["finished_summary"]
    assert finished["total_train_time_s"] == pytest.approx(straight["total_train_time_s"], abs=0.05)


def test_sac_final_evaluation_does_not_depend_on_the_resume(tmp_path):
    overrides = ["trainer.log_interval=100", "collector.frames_per_batch=10"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run(tiny("sac", *overrides), straight)
    assert interrupted_run(tiny("sac", *overrides), resumed, 100) == 100
    run(tiny("sac", *overrides, "trainer.resume=true"), resumed)
    assert_same_state(
        straight / "checkpoints" / "trainer.pt", resumed / "checkpoints" / "trainer.pt"
    )
    assert csv_curves(straight) == csv_curves(resumed)
    expected = _summary(straight)["eval_return_mean"]
    assert _summary(resumed)["eval_return_mean"] == expected


def test_periodic_evaluation_after_a_resume_before_the_first_one(tmp_path):
    """The checkpoint at 128 frames precedes the first evaluation (at 256): the resumed
    run's evaluation is seeded like the uninterrupted run's, and the same point is logged."""
    overrides = ["eval.interval=256", "eval.episodes=4"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run(tiny("ppo", *overrides), straight)
    assert interrupted_run(tiny("ppo", *overrides), resumed, 128) == 128
    run(tiny("ppo", *overrides, "trainer.resume=true"), resumed)
    assert_same_state(
        straight / "checkpoints" / "trainer.pt", resumed / "checkpoints" / "trainer.pt"
    )
    a, b = csv_curves(straight), csv_curves(resumed)
    assert any(name.endswith("eval/return_mean.csv") for name in a)
    assert a == b


def test_resuming_a_finished_run_says_nothing_is_left_to_train(tmp_path, capsys):
    run(tiny("ppo"), tmp_path)
    capsys.readouterr()
    run(tiny("ppo", "trainer.resume=true"), tmp_path)
    err = capsys.readouterr().err
    assert "Nothing left to train" in err
    assert "raise trainer.total_frames" in err
    assert _summary(tmp_path)["session_frames"] == 0


def test_resuming_an_unfinished_run_does_not_say_so(tmp_path, capsys):
    assert interrupted_run(tiny("ppo"), tmp_path, 128) == 128
    capsys.readouterr()
    run(tiny("ppo", "trainer.resume=true"), tmp_path)
    err = capsys.readouterr().err
    assert "Resumed from" in err and "Nothing left to train" not in err
