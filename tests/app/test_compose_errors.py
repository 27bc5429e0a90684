"""Mistakes Hydra finds while composing (unknown fields, wrong types, missing options, the
other algorithm's presets) stop with one ``Error:`` line that says what to type instead."""

from __future__ import annotations

import pytest

from rl_trainers.configs.field_names import field_paths, suggest_field

from .test_cli import train
from .test_config_errors import assert_user_error


@pytest.mark.parametrize(
    ("algorithm", "args", "expected"),
    [
        (
            "sac",
            ["experiment=ppo_pendulum"],
            [
                "experiment='ppo_pendulum'",
                "a preset of PPO",
                "ppo_trainer/train.py",
                "sac_halfcheetah",
            ],
        ),
        (
            "ppo",
            ["experiment=sac_halfcheetah"],
            [
                "experiment='sac_halfcheetah'",
                "a preset of SAC",
                "sac_trainer/train.py",
                "ppo_pendulum",
            ],
        ),
        ("ppo", ["optimizer.lrr=1e-3"], ["optimizer.lrr is not a field", "optimizer.lr?"]),
        ("ppo", ["trainer.num_epoch=3"], ["trainer.num_epoch", "trainer.num_epochs?"]),
        ("ppo", ["collector.total_frames=512"], ["did you mean trainer.total_frames?"]),
        ("ppo", ["lr=3e-4"], ["did you mean optimizer.lr?"]),
        ("sac", ["trainer.num_epochs=3"], ["trainer.num_epochs", "not a field of SAC", "PPO"]),
        ("ppo", ["optimizer.lr=abc"], ["optimizer.lr='abc' is invalid", "expected float"]),
        ("ppo", ["seed=abc"], ["seed='abc' is invalid", "expected int"]),
        ("ppo", ["trainer.total_frames=1e6"], ["expected int: write 1000000"]),
        ("ppo", ["env=pendlum"], ["env='pendlum'", "did you mean env=pendulum?", "cartpole"]),
        (
            "ppo",
            ["env=LunarLander-v3"],
            ["env='LunarLander-v3'", "any gymnasium id runs with env.env_name=LunarLander-v3"],
        ),
        (  # rl-zoo's --env spelling: the option that sets the id, never a look-alike
            "sac",
            ["env=Hopper-v5"],
            ["env='Hopper-v5'", "did you mean env=hopper?"],
        ),
        ("sac", ["env=halfcheetah-v5"], ["did you mean env=halfcheetah?"]),  # any case
        (
            "sac",
            ["env=LunarLanderContinuous-v3"],
            ["any gymnasium id runs with env.env_name=LunarLanderContinuous-v3"],
        ),
        (  # the recipe's own env has no preset: the default recipe is it
            "ppo",
            ["experiment=ppo_cartpole"],
            ["experiment='ppo_cartpole'", "default recipe is tuned for CartPole-v1"],
        ),
        (
            "sac",
            ["experiment=sac_pendulum"],
            ["default recipe is tuned for Pendulum-v1", "leave experiment out"],
        ),
        ("ppo", ["optimizer=adagrad"], ["optimizer='adagrad'", "adamw", "rmsprop"]),
        # argparse-style options (SB3 and rl-zoo scripts): the override to write instead
        ("td3", ["--episodes", "3"], ["--episodes is not an option", "(eval.episodes=3)"]),
        ("ppo", ["--learning-rate=1e-3"], ["Hydra overrides, field=value (optimizer.lr=1e-3)"]),
        # rl-zoo's --env takes a gymnasium id and picks its tuned settings: the MuJoCo preset,
        # else the env option that sets it, else env.env_name
        (
            "sac",
            ["--env", "HalfCheetah-v5"],
            ["--env is not an option", "(experiment=sac_halfcheetah)"],
        ),
        ("td3", ["--env", "Hopper-v5"], ["(experiment=td3_halfcheetah env=hopper)"]),
        ("dqn", ["--env", "CartPole-v1"], ["(env=cartpole)"]),
        ("ppo", ["--env=LunarLander-v3"], ["(env.env_name=LunarLander-v3)"]),
        ("ppo", ["-n", "100000"], ["-n is not an option", "(trainer.total_frames=100000)"]),
        # bare words (SB3 scripts take the env id alone) and what Hydra's grammar refuses
        ("ppo", ["CartPole-v1"], ["CartPole-v1 is not an override", "(env=cartpole)"]),
        ("ppo", ["trainer.total_frames", "1000"], ["(trainer.total_frames=1000)"]),
        (
            "ppo",
            ["optimizer.lr=3e-4,"],
            ["comma separates a sweep's values", "(optimizer.lr=3e-4)"],
        ),
        ("ppo", ["optimizer.lr==3e-4"], ["one '=' between the field and its value"]),
        ("ppo", ["-m", "seed=0,1"], ["-m and --cfg do not go together"]),
        (
            "ppo",
            ["env.make_kwargs.g=2.0"],
            ["env.make_kwargs has no key 'g': add it with +env.make_kwargs.g=<value>"],
        ),
        (  # env=ant sets a key: a dict given whole is merged into it, so the '+' form only
            "ppo",
            ["env=ant", "env.make_kwargs={ctrl_cost_weight:0.1}"],
            [
                "env.make_kwargs has no key 'ctrl_cost_weight': add it with "
                "+env.make_kwargs.ctrl_cost_weight=<value>"
            ],
        ),  # fmt: skip
        (
            "ppo",
            ["experiment=ppo_pendlum"],
            ["experiment=ppo_pendulum?", "ppo_acrobot"],
        ),
        (  # the preset sets a field of the option it chooses, which another option lacks
            "sac",
            ["experiment=sac_halfcheetah", "model/policy=auto"],
            [
                "experiment=sac_halfcheetah sets model.policy.scale_mapping",
                "model/policy=tanh_normal",
                "drop that model/policy option, or run without experiment=sac_halfcheetah",
            ],
        ),  # fmt: skip
        (
            "ppo",
            ["experiment=ppo_halfcheetah", "optimizer=sgd"],
            ["experiment=ppo_halfcheetah sets optimizer.eps", "optimizer=adam"],
        ),
        ("td3", ["model/policy=tanh_normal"], ["TD3's model has no policy to choose"]),
        ("td3", ["+model/policy=tanh_normal"], ["TD3's model has no policy to choose"]),
    ],
)
def test_composition_mistake_is_one_line_with_exit_status_2(algorithm, args, expected, tmp_path):
    proc = train(algorithm, "--cfg", "job", *args, cwd=tmp_path)
    assert_user_error(proc, *expected)
    assert "To append to your config" not in proc.stderr


def test_a_run_directory_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "notes").write_text("a file where the run directory should go")
    proc = train("ppo", "hydra.run.dir=notes", cwd=tmp_path)
    assert_user_error(proc, "hydra.run.dir=notes: notes is a file")


def test_other_algorithms_preset_in_a_sweep_stops_before_any_job(tmp_path):
    proc = train(
        "ppo",
        "-m",
        "experiment=ppo_pendulum,sac_halfcheetah",
        f"hydra.sweep.dir={tmp_path}/sweep",
        cwd=tmp_path,
    )
    assert_user_error(proc, "experiment='sac_halfcheetah'", "a preset of SAC")
    assert not (tmp_path / "sweep").exists()


def test_hydra_full_error_keeps_hydras_own_message(tmp_path):
    import os

    env = dict(os.environ, HYDRA_FULL_ERROR="1")
    proc = train("sac", "--cfg", "job", "experiment=ppo_pendulum", cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "Traceback" in proc.stderr
    assert "lmbda" in proc.stderr


def test_suggestions_prefer_a_field_of_the_same_name_then_a_close_one():
    assert suggest_field("ppo", "collector.total_frames") == "trainer.total_frames"
    assert suggest_field("sac", "warmup") is None  # nothing near: no guess
    assert "trainer.num_epochs" in field_paths("ppo")
    assert "trainer.num_epochs" not in field_paths("sac")
    assert "optimizer.betas" in field_paths("sac")  # a field of the adam option


def test_an_own_model_option_setting_its_builders_argument_says_where_it_goes(tmp_path):
    """A model/policy option file of the user's own (on hydra.searchpath) naming their
    builder cannot declare the builder's arguments; the line says to add them with +."""
    option = tmp_path / "myconfigs" / "model" / "policy" / "mine.yaml"
    option.parent.mkdir(parents=True)
    option.write_text("_target_: my_nets.make_policy\nhidden: 48\n")
    proc = train(
        "ppo",
        "--cfg",
        "job",
        f"hydra.searchpath=[file://{tmp_path / 'myconfigs'}]",
        "model/policy=mine",
        cwd=tmp_path,
    )
    assert_user_error(
        proc,
        "model/policy=mine sets model.policy.hidden, which is not a field of ppo's config; "
        "the arguments of a builder of your own (the option's _target_) go on the command "
        "line with +: +model.policy.hidden=...",
    )
