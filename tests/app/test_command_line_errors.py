"""Mistakes on the command line (misspelt fields and options, other libraries' names,
unknown keys, modules off the path): one ``Error:`` line naming the field and what was meant."""

from __future__ import annotations

import pytest

from rl_trainers.configs.field_names import suggest_field
from rl_trainers.envs.libs.gym import resolve_env_id

from .test_cli import train
from .test_config_errors import assert_user_error, run_bad


def test_misspelt_group_option_lists_only_the_options_a_user_can_pick(tmp_path):
    proc = train("ppo", "logger=csv2", cwd=tmp_path)
    assert_user_error(
        proc, "did you mean logger=csv?", "options of logger: csv, mlflow, tensorboard, wandb"
    )
    assert "_schema" not in proc.stderr


def test_field_of_an_unchosen_group_option_names_the_option(tmp_path):
    """A field of a group option that is not chosen names that option."""
    proc = train("ppo", "model.policy.state_dependent_scale=false", cwd=tmp_path)
    assert_user_error(
        proc,
        "model.policy.state_dependent_scale is a field of model/policy=tanh_normal, not of "
        "the chosen model/policy option: choose one with model/policy=tanh_normal",
    )
    assert "PPO/SAC" not in proc.stderr


def test_a_module_outside_the_path_says_to_put_it_on_pythonpath():
    with pytest.raises(ValueError) as err:
        resolve_env_id("my_local_envs_off_the_path:MyEnv")
    message = str(err.value)
    assert "No module named 'my_local_envs_off_the_path'" in message
    assert "PYTHONPATH" in message


def test_an_unknown_added_key_does_not_suggest_its_own_node(tmp_path):
    """``+trainer.foo=1`` does not suggest ``trainer`` (the node it is added to)."""
    proc = run_bad("ppo", tmp_path, "+trainer.foo=1")
    assert_user_error(proc, "trainer.foo=1 is invalid: not a field")
    assert "did you mean" not in proc.stderr


def test_an_unknown_make_kwarg_names_env_make_kwargs(tmp_path):
    proc = run_bad("ppo", tmp_path, "env.make_kwargs={foo: 1}")
    assert_user_error(
        proc, "env.make_kwargs={'foo': 1} is invalid", "unexpected keyword argument 'foo'"
    )


def test_an_id_of_an_unimported_namespace_names_the_package_and_the_module_form():
    """An id of an unimported namespace (ALE's exist once ale_py is imported) names the package
    to install and the ``module:id`` form."""
    with pytest.raises(ValueError) as err:
        resolve_env_id("ALE/Pong-v5")
    assert "install ale-py" in str(err.value)
    assert "'ale_py:ALE/Pong-v5'" in str(err.value)


def test_another_algorithms_preset_names_it_in_good_english(tmp_path):
    """Another algorithm's preset is named with the right article ("an A2C preset")."""
    proc = run_bad("pg", tmp_path, "experiment=a2c_pendulum")
    assert_user_error(
        proc,
        "experiment='a2c_pendulum' is invalid: a preset of A2C: run it with",
        "a2c_trainer/train.py experiment=a2c_pendulum",
    )


@pytest.mark.parametrize(
    "algorithm, key, meant",
    [
        ("ppo", "optimizer.learning_rate", "optimizer.lr"),
        ("sac", "learning_rate", "optimizer.lr"),
        ("ppo", "optimizer.learningRate", "optimizer.lr"),
        ("ppo", "batch_size", "trainer.minibatch_size"),
        ("sac", "batch_size", "replay_buffer.batch_size"),  # a field of that name comes first
        ("ppo", "loss.gae_lambda", "loss.lmbda"),
        ("ppo", "ent_coef", "loss.entropy_coef"),
        ("sac", "buffer_size", "replay_buffer.size"),
        ("ppo", "trainer.lr", "optimizer.lr"),
        ("ppo", "trainer.gamma", "loss.gamma"),
        ("ppo", "env.name", "env.env_name"),
        ("sac", "n_timesteps", "trainer.total_frames"),  # rl-zoo's hyperparameter files
        ("ppo", "n_steps", "collector.frames_per_batch"),
        ("td3", "learning_starts", "trainer.learning_starts"),
    ],
)
def test_another_librarys_name_of_a_field_suggests_the_field(algorithm, key, meant):
    assert suggest_field(algorithm, key) == meant


def test_an_alias_of_a_field_the_algorithm_lacks_suggests_nothing():
    assert suggest_field("a2c", "batch_size") is None  # A2C has no minibatches


def test_a_misspelled_learning_rate_says_did_you_mean_optimizer_lr(tmp_path):
    proc = train("ppo", "--cfg", "job", "optimizer.learning_rate=1e-3", cwd=tmp_path)
    assert_user_error(proc, "optimizer.learning_rate is not a field: did you mean optimizer.lr?")
