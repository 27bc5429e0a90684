"""A2C and the vanilla policy gradient (REINFORCE): one gradient step per collected batch,
on the whole batch; their advantages; their configs and errors."""

from __future__ import annotations

import pytest
import torch

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.app.overrides import translate_torchrl_overrides
from rl_trainers.errors import ConfigError

from .test_config_errors import assert_user_error, run_bad


def _train_recording(trainer):
    """Train, recording the size of every optimisation step's batch, the collected batch
    sizes, and the parameters after each batch."""
    steps, batches, params = [], [], []
    trainer.register_op("process_optim_batch", lambda td: steps.append(td.numel()))
    trainer.register_op("batch_process", lambda td: batches.append(td.numel()))

    def snapshot() -> None:
        params.append([p.detach().clone() for p in trainer.loss_module.parameters()])

    trainer.register_op("post_steps", snapshot)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    return steps, batches, params


@pytest.mark.parametrize(
    ("algorithm", "overrides"),
    [("a2c", []), ("a2c", ["env=pendulum"]), ("pg", []), ("pg", ["loss.baseline=false"])],
)
def test_one_gradient_step_per_batch_on_the_whole_batch(
    tiny_config, algorithm, overrides, tmp_path
):
    trainer = build_trainer(tiny_config(algorithm, overrides), tmp_path)
    frames_per_batch = trainer.frames_per_batch
    steps, batches, params = _train_recording(trainer)
    n = 256 // frames_per_batch
    assert batches == [frames_per_batch] * n
    assert steps == [frames_per_batch] * n  # one step per batch, on every transition of it
    assert trainer._optim_count == n
    for p in trainer.optimizer.param_groups[0]["params"]:
        assert int(trainer.optimizer.state[p]["step"]) == n
    # the weights move once per batch
    for before, after in zip(params, params[1:]):
        assert any(not torch.equal(a, b) for a, b in zip(before, after))


def test_pg_without_a_baseline_weights_actions_by_their_returns_to_go(tiny_config, tmp_path):
    """No critic is built; each step's advantage is its discounted return to the end of
    its trajectory or of the batch: with CartPole's reward 1 per step, 1 + gamma + ... ."""
    trainer = build_trainer(tiny_config("pg", ["loss.baseline=false", "loss.gamma=0.9"]), tmp_path)
    assert trainer.loss_module.critic_network is None
    assert all(not name.startswith("critic") for name, _ in trainer.loss_module.named_parameters())
    seen = []
    trainer.register_op("batch_process", lambda td: seen.append(td.clone()))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    for batch in seen:
        done = batch["next", "done"].squeeze(-1)
        adv = batch["advantage"].squeeze(-1)
        for env in range(done.shape[0]):
            expected, running = [], 0.0
            for t in reversed(range(done.shape[1])):
                running = 1.0 + (0.0 if done[env, t] else 0.9 * running)
                expected.append(running)
            assert adv[env].tolist() == pytest.approx(expected[::-1], rel=1e-5)


def test_pg_with_a_baseline_subtracts_its_value_from_the_return(tiny_config, tmp_path):
    """With a baseline the advantage is the return minus V(s) (GAE, lambda 1): the value
    target minus the advantage is the critic's value of each step."""
    trainer = build_trainer(tiny_config("pg"), tmp_path)
    seen = []
    trainer.register_op("batch_process", lambda td: seen.append(td.clone()))
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    batch = seen[-1]
    baseline = batch["value_target"] - batch["advantage"]
    assert torch.allclose(baseline, batch["state_value"], atol=1e-5)
    assert trainer.loss_module.critic_network is not None


def test_a2c_recipe_is_sb3s_a2c_on_rl_zoos_cartpole(tmp_path):
    """The default recipe's optimizer and batch are SB3's A2C (RMSprop alpha 0.99, eps 1e-5,
    lr 7e-4; n_envs 8 * n_steps 5)."""
    from app.conftest import compose_config

    trainer = build_trainer(compose_config("a2c", ["trainer.progress_bar=false"]), tmp_path)
    try:
        opt = trainer.optimizer
        assert type(opt) is torch.optim.RMSprop
        group = opt.param_groups[0]
        assert (group["lr"], group["alpha"], group["eps"]) == (7e-4, 0.99, 1e-5)
        assert trainer.frames_per_batch == 40 and trainer.optim_steps_per_batch == 1
        assert trainer.clip_norm == 0.5
    finally:
        close_trainer(trainer)


@pytest.mark.parametrize("algorithm", ["a2c", "pg"])
def test_random_warm_up_frames_are_one_error_line(algorithm, tmp_path):
    proc = run_bad(algorithm, tmp_path, "collector.init_random_frames=64")
    assert_user_error(proc, "collector.init_random_frames=64", "current policy's own actions")


@pytest.mark.parametrize(
    ("algorithm", "overrides", "expected"),
    [
        ("a2c", ["loss.lmbda=1.5"], ["loss.lmbda=1.5", "[0, 1]"]),
        ("a2c", ["loss.critic_coef=-1"], ["loss.critic_coef=-1", "non-negative"]),
        ("pg", ["loss.loss_critic_type=huber"], ["loss.loss_critic_type='huber'", "'l2'"]),
        ("pg", ["loss.entropy_coef=-0.1"], ["loss.entropy_coef=-0.1", "non-negative"]),
        ("pg", ["loss.gamma=2"], ["loss.gamma=2", "[0, 1]"]),
    ],
)
def test_bad_loss_value_names_the_field(tiny_config, algorithm, overrides, expected, tmp_path):
    with pytest.raises(ConfigError) as err:
        build_trainer(tiny_config(algorithm, overrides), tmp_path)
    for word in expected:
        assert word in str(err.value)


def test_bad_loss_value_is_one_line_from_train_py(tmp_path):
    assert_user_error(run_bad("pg", tmp_path, "loss.lmbda=-1"), "loss.lmbda=-1", "[0, 1]")


def test_torchrls_loss_and_trainer_names_set_our_fields(tiny_config, tmp_path):
    argv = translate_torchrl_overrides(
        [
            "train.py",
            "loss.entropy_coeff=0.01",
            "loss.critic_coeff=0.25",
            "trainer.gamma=0.9",
            "trainer.lmbda=0.95",
            "loss.loss_critic_type=smooth_l1",
        ]
    )
    assert argv[1:] == [
        "loss.entropy_coef=0.01",
        "loss.critic_coef=0.25",
        "loss.gamma=0.9",
        "loss.lmbda=0.95",
        "loss.loss_critic_type=smooth_l1",
    ]
    trainer = build_trainer(tiny_config("a2c", argv[1:]), tmp_path)
    try:
        loss = trainer.loss_module
        assert float(loss.entropy_coef) == pytest.approx(0.01) and float(loss.critic_coef) == 0.25
        assert loss.loss_critic_type == "smooth_l1" and loss.entropy_bonus
        assert (loss.value_estimator.gamma, loss.value_estimator.lmbda) == (0.9, 0.95)
    finally:
        close_trainer(trainer)
