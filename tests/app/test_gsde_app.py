"""gSDE (``model.policy.use_sde``) through the app: tiny runs, a new noise per collected
batch, actions clipped by the env, and the errors a user sees."""

from __future__ import annotations

import json

import pytest
import torch

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.configs.validation import validate_config
from rl_trainers.envs import GymEnv
from rl_trainers.errors import ConfigError

from .test_config_errors import assert_user_error, run_bad

GSDE = [
    "env=pendulum",
    "model/policy=tanh_normal",
    "model.policy.use_sde=true",
    "model.policy.state_dependent_scale=false",
    "model.policy.log_std_init=-2",
]


@pytest.mark.parametrize(
    ("algorithm", "extra"),
    [("ppo", ["model.policy.sde_sample_freq=4"]), ("a2c", []), ("pg", [])],
)
def test_tiny_gsde_run_through_train_py(algorithm, extra, tmp_path):
    proc = run_bad(algorithm, tmp_path, *GSDE, *extra, "trainer.num_threads=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["frames"] == 256
    assert -2000 < summary["eval_return_mean"] < 0


def test_every_collected_batch_explores_with_a_new_noise(tiny_config, tmp_path):
    # a large initial scale: the unsquashed actions leave the env's bounds [-2, 2]
    trainer = build_trainer(tiny_config("a2c", [*GSDE, "model.policy.log_std_init=1"]), tmp_path)
    actor = trainer.loss_module.actor_network
    seen, actions = [], []

    def record(batch):
        seen.append(actor.sde_noise.clone())
        actions.append(batch["action"])

    trainer.register_op("batch_process", record)
    try:
        trainer.train()
    finally:
        close_trainer(trainer)
    assert len(seen) == 8  # 256 frames, 32 per batch
    for a, b in zip(seen, seen[1:]):
        assert not torch.equal(a, b)
    assert max(a.abs().max() for a in actions) > 2


def test_pendulum_clips_actions_to_its_bounds_when_stepping():
    def next_obs(torque: float) -> torch.Tensor:
        env = GymEnv("Pendulum-v1")
        env.set_seed(0)
        td = env.reset()
        td["action"] = torch.tensor([torque])
        out = env.step(td)
        assert out["action"].item() == torque  # the batch keeps the unclipped action
        obs = out["next", "observation"].clone()
        env.close()
        return obs

    torch.testing.assert_close(next_obs(7.5), next_obs(2.0))
    torch.testing.assert_close(next_obs(-30.0), next_obs(-2.0))


@pytest.mark.parametrize(
    ("algorithm", "overrides", "expected"),
    [
        ("sac", GSDE, ["model.policy.use_sde=True", "on-policy", "sac_trainer"]),
        (
            "ppo",
            [*GSDE, "collector=multi_sync", "collector.num_workers=2"],
            ["model.policy.use_sde=True", "single-process collector"],
        ),
        ("ppo", [*GSDE, "model.policy.sde_sample_freq=0"], ["sde_sample_freq=0", "-1"]),
        ("a2c", [*GSDE, "model.policy.sde_sample_freq=-3"], ["sde_sample_freq=-3", "-1"]),
    ],
)
def test_gsde_combinations_that_make_no_sense_are_refused(
    tiny_config, algorithm, overrides, expected
):
    with pytest.raises(ConfigError) as err:
        validate_config(tiny_config(algorithm, overrides))
    for word in expected:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("algorithm", "args", "expected"),
    [
        ("sac", GSDE, ["model.policy.use_sde=True", "sac_trainer"]),
        # the default policy (auto) has no gSDE option
        (
            "ppo",
            ["env=pendulum", "model.policy.use_sde=true"],
            ["model.policy.use_sde", "model/policy=tanh_normal"],
        ),
        ("ppo", [*GSDE, "env=cartpole"], ["model.policy='tanh_normal'", "discrete actions"]),
        (
            "a2c",
            [*GSDE, "model.policy.state_dependent_scale=true"],
            ["model.policy.use_sde=True", "state_dependent_scale=false"],
        ),
        (
            "ppo",
            ["env=pendulum", "model/policy=tanh_normal", "model.policy.sde_sample_freq=4"],
            ["model.policy.sde_sample_freq=4", "use_sde=true"],
        ),
    ],
)
def test_gsde_errors_are_one_line(algorithm, args, expected, tmp_path):
    assert_user_error(run_bad(algorithm, tmp_path, *args), *expected)


def test_sampled_evaluations_leave_the_training_run_unchanged(tiny_config, tmp_path):
    """``eval.deterministic=false`` with as many evaluation sub-envs as training ones: the
    evaluations draw their own noise, so the run trains as without them."""
    overrides = [*GSDE, "model.policy.sde_sample_freq=3", "eval.deterministic=false"]
    overrides += ["eval.episodes=4", "env.num_envs=4"]
    params = []
    for interval in (0, 64):
        trainer = build_trainer(
            tiny_config("ppo", [*overrides, f"eval.interval={interval}"]), tmp_path / str(interval)
        )
        try:
            trainer.train()
            params.append([p.detach().clone() for p in trainer.loss_module.parameters()])
        finally:
            close_trainer(trainer)
    for a, b in zip(*params, strict=True):
        assert torch.equal(a, b)
