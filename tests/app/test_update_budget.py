"""A run whose budget ends before its first gradient update (the random warm-up and
learning_starts included) is refused with one line naming the fields; a run with only a
few updates is warned about."""

from __future__ import annotations

import warnings

import pytest

from rl_trainers.configs.validation import gradient_updates, validate_config
from rl_trainers.errors import ConfigError, ConfigWarning

from .conftest import compose_config
from .test_cli import train
from .test_config_errors import assert_user_error

#: The TD3 recipe's own warm-up (the tests' tiny runs lower it).
RECIPE_WARM_UP = [
    "collector.init_random_frames=10000",
    "trainer.learning_starts=10000",
    "replay_buffer.size=1000000",
]


def test_following_the_learning_starts_hint_names_the_random_warm_up_too(tiny_config):
    """TD3 at 2000 frames: the recipe's warm-up (10000 random frames) outlasts the run."""
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("td3", [*RECIPE_WARM_UP, "trainer.total_frames=2000"]))
    assert "e.g. trainer.learning_starts=500 collector.init_random_frames=500" in str(err.value)
    # lowering learning_starts only: the warm-up is the field named
    overrides = [*RECIPE_WARM_UP, "trainer.total_frames=2000", "trainer.learning_starts=500"]
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config("td3", overrides))
    assert str(err.value).startswith("collector.init_random_frames=10000 is invalid")
    assert "e.g. collector.init_random_frames=500" in str(err.value)


def test_the_user_sees_one_error_line_and_no_run(tmp_path):
    proc = train(
        "ddpg",
        "trainer.total_frames=2000",
        "trainer.learning_starts=500",
        f"hydra.run.dir={tmp_path}/run",
        cwd=tmp_path,
    )
    assert_user_error(proc, "collector.init_random_frames=10000", "trainer.total_frames (2000)")


def test_updates_start_after_the_batch_that_passes_both_thresholds(tiny_config):
    """Updates follow each batch collected past the random warm-up with learning_starts
    transitions in the buffer."""
    cfg = tiny_config(
        "td3",
        [
            "trainer.total_frames=200",
            "collector.frames_per_batch=100",
            "collector.init_random_frames=100",
            "trainer.learning_starts=150",
        ],
    )
    assert gradient_updates(cfg) == 100  # the second batch (frames 101-200) trains
    cfg = tiny_config(
        "td3",
        [
            "trainer.total_frames=200",
            "collector.frames_per_batch=200",
            "collector.init_random_frames=100",
            "trainer.learning_starts=100",
            "trainer.log_interval=200",
        ],
    )
    assert gradient_updates(cfg) == 200  # one batch, past both thresholds once collected
    cfg = tiny_config("sac", ["trainer.total_frames=100", "collector.init_random_frames=99"])
    assert gradient_updates(cfg) == 1  # after frame 100 only


def test_a_handful_of_updates_is_a_one_line_warning(tiny_config):
    cfg = tiny_config(
        "sac",
        [
            "trainer.total_frames=103",
            "collector.init_random_frames=100",
            "trainer.learning_starts=100",
            "trainer.log_interval=100",
        ],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        validate_config(cfg)
    lines = [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]
    assert lines == [
        "the run makes only 3 gradient updates (trainer.total_frames=103, "
        "collector.frames_per_batch=1, collector.init_random_frames=100, "
        "trainer.learning_starts=100, trainer.utd_ratio=1.0): raise trainer.total_frames, "
        "or lower collector.init_random_frames and trainer.learning_starts"
    ]


@pytest.mark.parametrize("algorithm", ["sac", "dqn", "td3", "ddpg"])
def test_the_recipes_train(tiny_config, algorithm):
    """The shipped defaults and the tests' tiny runs make many updates, without a warning."""
    for cfg in (tiny_config(algorithm), compose_config(algorithm)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConfigWarning)
            validate_config(cfg)
        assert gradient_updates(cfg) >= 40


@pytest.mark.parametrize(
    ("utd_ratio", "frames_per_batch", "expected"),
    [
        (0.5, 1, [0, 1, 0, 1, 0, 1]),  # one update after every second frame
        (2.5, 1, [2, 3, 2, 3, 2, 3]),
        (1 / 3, 2, [1, 1, 0, 1, 1, 0]),  # 2/3 of an update a batch
        (2.0, 1, [2, 2, 2, 2, 2, 2]),
    ],
)
def test_a_fractional_utd_ratio_carries_its_fractions_from_batch_to_batch(
    tiny_config, tmp_path, utd_ratio, frames_per_batch, expected
):
    """utd_ratio 0.5 with one frame a batch (the MuJoCo presets') makes half as many updates
    as frames: it made one a frame, as any ratio below 1.5 did."""
    from rl_trainers.algorithms import build_trainer

    frames = 50 + 6 * frames_per_batch  # the warm-up, then six batches that train
    cfg = tiny_config("sac", [
        f"trainer.total_frames={frames}", f"collector.frames_per_batch={frames_per_batch}",
        f"trainer.utd_ratio={utd_ratio}", "eval.interval=0", "trainer.save_trainer_interval=0",
    ])  # fmt: skip
    trainer = build_trainer(cfg, tmp_path)
    per_batch = []
    trainer.register_op("post_steps", lambda: per_batch.append(trainer._optim_count))
    trainer.train()
    updates = [b - a for a, b in zip([0, *per_batch], per_batch, strict=False)][-6:]
    assert updates == expected
    assert trainer._optim_count == sum(expected) == gradient_updates(cfg)
