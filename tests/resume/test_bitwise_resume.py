"""Train 2N frames straight, or N frames, stop, resume to 2N: the results are bitwise equal."""

from __future__ import annotations

import pytest

from rl_trainers.app.run import run

from .conftest import assert_same_state, csv_curves, interrupted_run, tiny

CASES = {
    # algorithm, stop frame, overrides (2N = TINY total_frames)
    "ppo": ("ppo", 128, ["trainer.save_trainer_interval=64"]),
    "ppo_vecnorm_pendulum": (
        "ppo",
        128,
        ["env=pendulum", "env.normalize_observations=true", "env.reward_scale=0.1"],
    ),
    # the reward normaliser's statistics and each sub-env's running discounted return carry
    # over (the stop falls mid-episode: Pendulum's episodes last 200 steps)
    "ppo_reward_norm_pendulum": (
        "ppo",
        128,
        ["env=pendulum", "env.normalize_rewards=true", "loss.gamma=0.9"],
    ),
    "ppo_async_envs": ("ppo", 128, ["env.vectorization=async"]),
    # the adaptive KL penalty's beta (a buffer of the loss) carries over
    "ppo_kl_penalty": ("ppo", 128, ["loss.loss_type=kl", "loss.dtarg=1e-4"]),
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
    # epsilon mid-annealing and target copies on both sides of the stop
    "dqn": ("dqn", 128, ["trainer.exploration_fraction=1.0", "trainer.target_update_interval=3"]),
    # 5 updates per batch, actor every 3rd: the stop falls between two actor updates; the
    # Gaussian noise anneals across the stop
    "td3": (
        "td3",
        100,
        ["collector.frames_per_batch=5", "trainer.policy_delay=3", "trainer.noise_std_end=0.05"],
    ),
    # the Ornstein-Uhlenbeck state carried by the collector across the stop, mid-episode
    "ddpg_ou": ("ddpg", 100, ["collector.frames_per_batch=5", "trainer.exploration_noise=ou"]),
    # RMSprop's square averages carry over (one step per batch: 4 before the stop, 4 after)
    "a2c": ("a2c", 128, []),
    # the observation and reward normalisers' statistics, the linear lr schedule and gSDE's
    # noise (redrawn once per batch) carry over
    "a2c_pendulum": ("a2c", 128, ["experiment=a2c_pendulum"]),
    # gSDE: the noise matrices and their step count carry over (redrawn every 3 steps: the
    # stop falls after a batch of 16 steps, mid-period)
    "ppo_gsde": (
        "ppo",
        128,
        [
            "env=pendulum",
            "model/policy=tanh_normal",
            "model.policy.use_sde=true",
            "model.policy.state_dependent_scale=false",
            "model.policy.sde_sample_freq=3",
        ],
    ),
    "pg": ("pg", 128, []),
    "pg_no_baseline": ("pg", 128, ["loss.baseline=false"]),
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


def test_dqn_checkpoint_holds_epsilon_target_network_and_its_update_count(tmp_path):
    """What the bitwise DQN case compares: the annealed epsilon, the target network and the
    target updater's step counter are saved (a resume restarting any of them would differ)."""
    from rl_trainers.core.checkpoint import load_checkpoint

    run(tiny("dqn", *CASES["dqn"][2]), tmp_path)
    modules = load_checkpoint(tmp_path / "checkpoints" / "trainer.pt")["modules"]
    # annealed over all 256 frames: 0.52 at the stop of the bitwise case, eps_end at the end
    assert float(modules["exploration"]["eps"]) == pytest.approx(0.04)
    assert any(k.startswith("target_value_network_params") for k in modules["loss_module"])
    assert modules["target_net_updater"]["counter"] == 6 * 8  # updates from frame 64 on


def test_td3_checkpoint_holds_both_optimizers_the_delay_counter_and_the_noise(tmp_path):
    """What the bitwise TD3 case compares: the critic and actor optimizers' states, the
    update counter that decides the next actor step, the annealed noise scale and the
    target networks are saved."""
    from rl_trainers.core.checkpoint import load_checkpoint

    run(tiny("td3", *CASES["td3"][2]), tmp_path)
    modules = load_checkpoint(tmp_path / "checkpoints" / "trainer.pt")["modules"]
    assert modules["policy_delay"]["updates"] == 150  # from frame 50 on, 5 per 5 frames
    critic = modules["critic_optimizer"]["optimizer"]["state"]
    actor = modules["actor_optimizer"]["optimizer"]["state"]
    assert {int(s["step"]) for s in critic.values()} == {150}
    assert {int(s["step"]) for s in actor.values()} == {50}
    assert float(modules["exploration"]["sigma"]) == pytest.approx(0.05)
    assert any(k.startswith("target_actor_network_params") for k in modules["loss_module"])
    assert any(k.startswith("target_qvalue_network_params") for k in modules["loss_module"])
