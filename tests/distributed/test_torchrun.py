"""Data-parallel training under torchrun (2 processes, gloo on CPU), through the real app.

What each rank holds is read from its own checkpoint (rank 0: ``checkpoints/``, rank 1:
``checkpoints/rank1/``), which each process writes from its own modules. Each launch takes
~10-20 s on a busy 2-core machine, mostly process start-up and imports.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import torch
from resume.conftest import assert_same_state, tiny  # tests/ is on sys.path

from rl_trainers.algorithms import build_trainer
from rl_trainers.algorithms.build import close_trainer
from rl_trainers.app.run import run
from rl_trainers.core.checkpoint import CheckpointError, load_checkpoint

from .conftest import PPO, SAC, checked, launch, start


def _assert_tree_equal(a, b, where=""):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs between the ranks"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_tree_equal(a[key], b[key], f"{where}.{key}")
    else:
        assert a == b, where


def _ranks(run_dir, name="trainer.pt"):
    return (
        load_checkpoint(run_dir / "checkpoints" / name),
        load_checkpoint(run_dir / "checkpoints" / "rank1" / name),
    )


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """A 2-rank PPO run of 512 frames: (run dir, finished process)."""
    out = tmp_path_factory.mktemp("ppo_ddp")
    done = checked(launch("ppo", [*PPO, "trainer.total_frames=512", f"hydra.run.dir={out}"]))
    return out, done


def test_ranks_end_with_identical_parameters_and_optimizer_state(ppo_run):
    out, done = ppo_run
    rank0, rank1 = _ranks(out)
    assert rank0["distributed"] == {"world_size": 2, "rank": 0}
    assert rank1["distributed"] == {"world_size": 2, "rank": 1}
    _assert_tree_equal(rank0["modules"]["loss_module"], rank1["modules"]["loss_module"], "loss")
    _assert_tree_equal(rank0["modules"]["optimizer"], rank1["modules"]["optimizer"], "optim")
    # ... while each rank collected its own data with its own seeds
    assert not torch.equal(rank0["rng"]["torch"], rank1["rng"]["torch"])
    obs0 = rank0["collector"]["td"]["observation"]
    obs1 = rank1["collector"]["td"]["observation"]
    assert not torch.equal(obs0, obs1)
    # the app's own end-of-run check compared every rank's parameters
    assert done.stderr.count("parameters sha256") == 1
    assert "on all 2 ranks" in done.stderr


def test_total_frames_counts_the_frames_of_all_ranks(ppo_run):
    out, _ = ppo_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 512 and summary["world_size"] == 2
    rank0, rank1 = _ranks(out)
    for state in (rank0, rank1):
        # 512 frames = 4 batches of 64 frames on each of the 2 ranks
        assert state["counters"]["collected_frames"] == 512
        assert state["counters"]["iteration"] == 4
        assert state["collector"]["frames_collected"] == 256
        assert state["counters"]["optim_count"] == 4 * 2 * 2  # batches x epochs x minibatches


def test_only_rank_zero_logs_and_writes_the_summary(ppo_run):
    out, done = ppo_run
    assert done.stdout.count('"world_size": 2') == 1  # the summary is printed once
    assert sorted(p.name for p in out.iterdir()) == [
        ".hydra",
        ".lock",  # rank 0's, held while the run trains
        "checkpoints",
        "logs",
        "summary.json",
        "train.log",
    ]
    # rank 1 wrote its checkpoints and nothing else
    rank1_files = {p.name for p in (out / "checkpoints" / "rank1").iterdir()}
    assert rank1_files == {"trainer.pt", "trainer_512.pt"}
    rows = (out / "logs" / "ppo_CartPole-v1" / "scalars" / "loss_objective.csv").read_text()
    steps = [line.split(",")[0] for line in rows.splitlines()]
    assert steps == ["128", "256", "384", "512"]  # one row per batch of both ranks, once
    rank0, rank1 = _ranks(out)
    assert "logger" in rank0["modules"] and "logger" not in rank1["modules"]
    assert "eval_env" in rank0["modules"] and "eval_env" not in rank1["modules"]


def test_stop_and_resume_with_two_ranks_is_bitwise_identical(ppo_run, tmp_path):
    full, _ = ppo_run
    checked(launch("ppo", [*PPO, "trainer.total_frames=256", f"hydra.run.dir={tmp_path}"]))
    done = checked(
        launch(
            "ppo",
            [*PPO, "trainer.total_frames=512", "trainer.resume=true", f"hydra.run.dir={tmp_path}"],
        )
    )
    assert done.stderr.count("Resumed from") == 1
    assert f"{tmp_path}/checkpoints/trainer_256.pt at frame 256" in done.stderr
    for name in ("trainer_512.pt", "rank1/trainer_512.pt"):
        assert_same_state(full / "checkpoints" / name, tmp_path / "checkpoints" / name)
    scalars = "logs/ppo_CartPole-v1/scalars"
    for csv in sorted((full / scalars).rglob("*.csv")):
        resumed = tmp_path / scalars / csv.relative_to(full / scalars)
        assert resumed.read_text() == csv.read_text(), csv.name


def test_a_two_rank_checkpoint_refuses_a_single_process_in_one_line(ppo_run, tmp_path):
    out, _ = ppo_run
    done = launch(
        "ppo",
        [*PPO, "trainer.total_frames=1024", f"trainer.resume_from={out}/checkpoints/trainer.pt"]
        + [f"hydra.run.dir={tmp_path}"],
        nproc=0,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1
    assert "saved by a run of 2 process(es) and this run has 1" in errors[0]
    assert "--nproc_per_node=2" in errors[0]


def test_a_single_process_checkpoint_refuses_two_ranks(tmp_path):
    cfg = tiny("ppo", "trainer.total_frames=128")
    run(cfg, tmp_path)
    done = launch(
        "ppo",
        [*PPO, "trainer.total_frames=256", "trainer.resume=true"] + [f"hydra.run.dir={tmp_path}"],
    )
    assert done.returncode != 0
    errors = {line for line in done.stderr.splitlines() if line.startswith("Error:")}
    assert len(errors) == 1, done.stderr[-3000:]  # the same line from both ranks
    assert "no save that all 2 ranks of this run have" in errors.pop()


def test_sac_ranks_keep_their_own_buffers_and_identical_networks(tmp_path):
    overrides = [*SAC, "env.normalize_observations=true", f"hydra.run.dir={tmp_path}"]
    checked(launch("sac", overrides))
    rank0, rank1 = _ranks(tmp_path)
    for name in ("loss_module", "optimizer", "target_net_updater"):
        _assert_tree_equal(rank0["modules"][name], rank1["modules"][name], name)
    # VecNorm statistics: averaged over the ranks after every batch
    stats = rank0["collector"]["env"]
    assert any(key.endswith("sum_0") for key in stats)
    _assert_tree_equal(stats, rank1["collector"]["env"], "VecNorm")
    buffers = [s["modules"]["replay_buffer"]["replay_buffer"] for s in (rank0, rank1)]
    # 240 frames: 120 transitions in each rank's own buffer, not the same ones
    assert [b["storage"]["len"] for b in buffers] == [120, 120]
    obs = [b["storage"]["storage"]["__tensordict__"]["observation"] for b in buffers]
    assert not torch.equal(obs[0], obs[1])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["frames"] == 240 and summary["world_size"] == 2
    # updates once each rank's buffer holds learning_starts=40 transitions (iteration 40)
    # and after every later batch: iterations 40..120, one update each (utd_ratio 1 x 1 frame)
    assert rank0["counters"]["optim_count"] == rank1["counters"]["optim_count"] == 81


def test_reward_normaliser_statistics_merge_every_ranks_returns(tmp_path):
    """``RewardNorm``: after every batch each rank's statistics become those of both ranks'
    discounted returns (counts add up; not a mean of the ranks' statistics), while each rank
    keeps its own sub-envs' running returns."""
    overrides = [
        *PPO,
        "env=pendulum",
        "env.normalize_rewards=true",
        "trainer.total_frames=256",
        f"hydra.run.dir={tmp_path}",
    ]
    checked(launch("ppo", overrides))
    rank0, rank1 = (r["collector"]["env"] for r in _ranks(tmp_path))
    (prefix,) = {k[: -len("merged_count")] for k in rank0 if k.endswith("merged_count")}
    for name in ("count", "mean", "var", "merged_count", "merged_mean", "merged_var"):
        _assert_tree_equal(rank0[prefix + name], rank1[prefix + name], name)
    # one return per frame, of both ranks: 2 ranks x 2 batches x 64 frames
    assert rank0[prefix + "count"].item() == 256
    assert rank0[prefix + "var"].item() > 0
    assert not torch.equal(rank0[prefix + "returns"], rank1[prefix + "returns"])


def test_td3_ranks_average_both_optimizers_gradients(tmp_path):
    """TD3 steps its critic and actor optimizers itself (``DelayedPolicyUpdate``): both
    average their gradients over the ranks, so the networks, both Adam states and the
    targets stay identical."""
    overrides = [*SAC, "collector.frames_per_batch=10", f"hydra.run.dir={tmp_path}"]
    checked(launch("td3", overrides))
    rank0, rank1 = _ranks(tmp_path)
    assert rank0["modules"]["actor_optimizer"]  # the actor really stepped
    for name in ("loss_module", "critic_optimizer", "actor_optimizer"):
        _assert_tree_equal(rank0["modules"][name], rank1["modules"][name], name)


def test_ppo_target_kl_stops_every_rank_at_the_same_step(tmp_path):
    """Each rank measures the KL on its own minibatch; the ranks compare their mean, so they
    take the same steps (a rank stepping alone would wait forever for the others' gradients)."""
    overrides = [*PPO, "trainer.total_frames=512", "trainer.target_kl=1e-5"]
    checked(launch("ppo", [*overrides, f"hydra.run.dir={tmp_path}"]))
    rank0, rank1 = _ranks(tmp_path)
    assert rank0["counters"]["optim_count"] == rank1["counters"]["optim_count"]
    assert rank0["counters"]["optim_count"] < 4 * 4  # 4 batches of 4 steps, some cut short
    _assert_tree_equal(rank0["modules"]["loss_module"], rank1["modules"]["loss_module"], "loss")


def test_single_process_runs_stay_as_they_were(tmp_path):
    cfg = tiny("ppo", "trainer.total_frames=128")
    trainer = build_trainer(cfg, tmp_path)
    close_trainer(trainer)
    assert trainer.world_size == 1 and trainer.rank == 0 and trainer.data_parallel is None
    run(cfg, tmp_path / "app")
    summary = json.loads((tmp_path / "app" / "summary.json").read_text())
    assert "world_size" not in summary
    state = load_checkpoint(tmp_path / "app" / "checkpoints" / "trainer.pt")
    assert "distributed" not in state
    assert not (tmp_path / "app" / "checkpoints" / "rank1").exists()
    with pytest.raises(CheckpointError, match="2 process"):
        bad = dict(state, distributed={"world_size": 2, "rank": 0})
        trainer.load_state_dict(bad)


def test_a_config_warning_is_printed_once_not_by_every_rank(tmp_path):
    overrides = [*PPO, "trainer.total_frames=256", "trainer.log_interval=100000"]
    done = checked(launch("ppo", [*overrides, f"hydra.run.dir={tmp_path}"]))
    assert done.stderr.count("trainer.log_interval=100000 is more than the") == 1, done.stderr


def test_dqn_stop_at_return_on_rank_zero_stops_every_rank(tmp_path):
    overrides = [
        "trainer.total_frames=2048",
        "collector.frames_per_batch=32",
        "collector.init_random_frames=64",
        "trainer.learning_starts=64",
        "trainer.utd_ratio=0.25",
        "replay_buffer.batch_size=16",
        "replay_buffer.size=1000",
        "network.value.num_cells=[32,32]",
        "eval.episodes=2",
        "eval.interval=128",  # every 2 batches of 2 x 32 frames
        "eval.stop_at_return=0",  # any CartPole episode reaches it
        "trainer.progress_bar=false",
        "trainer.num_threads=1",
        f"hydra.run.dir={tmp_path}",
    ]
    done = checked(launch("dqn", overrides))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["frames"] == 128 and "eval.stop_at_return=0" in summary["finished_early"]
    assert done.stderr.count("Training ended at frame 128") == 1
    rank0, rank1 = _ranks(tmp_path)
    assert rank0["counters"]["collected_frames"] == rank1["counters"]["collected_frames"] == 128
    _assert_tree_equal(rank0["modules"]["loss_module"], rank1["modules"]["loss_module"], "loss")
    # epsilon anneals over the frames of both ranks, so it is the same on each
    _assert_tree_equal(rank0["modules"]["exploration"], rank1["modules"]["exploration"], "eps")


def test_sigterm_to_torchrun_stops_every_rank_after_the_same_batch(tmp_path):
    overrides = [
        *PPO,
        "trainer.total_frames=10000000",
        "trainer.save_trainer_interval=256",
        f"hydra.run.dir={tmp_path}",
    ]
    proc = start("ppo", overrides)
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "checkpoints" / "rank1").glob("trainer_*.pt")):
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # to torchrun, which forwards it to the ranks
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    stopped = [line for line in stderr.splitlines() if line.startswith("Stopped by SIGTERM")]
    assert len(stopped) == 1, stderr[-3000:]  # rank 0's line
    assert "Continue with: torchrun --nproc_per_node=2 " in stopped[0]
    rank0, rank1 = _ranks(tmp_path)
    frames = rank0["counters"]["collected_frames"]
    assert f"at frame {frames};" in stopped[0]
    assert rank1["counters"]["collected_frames"] == frames
    assert frames % 128 == 0 and frames < 10000000
    _assert_tree_equal(rank0["modules"]["loss_module"], rank1["modules"]["loss_module"], "loss")


def test_gsde_ranks_share_the_policy_but_explore_with_their_own_noise(tmp_path):
    """gSDE: the parameters (``log_std`` among them) stay equal across the ranks while each
    rank redraws its noise matrices from its own RNG."""
    overrides = [
        *PPO,
        "env=pendulum",
        "model/policy=tanh_normal",
        "model.policy.use_sde=true",
        "model.policy.state_dependent_scale=false",
        "trainer.total_frames=256",
        f"hydra.run.dir={tmp_path}",
    ]
    done = checked(launch("ppo", overrides))
    assert "on all 2 ranks" in done.stderr
    rank0, rank1 = (r["modules"]["loss_module"] for r in _ranks(tmp_path))
    noise = [k for k in rank0 if k.endswith("sde_noise")]
    assert noise and not torch.equal(rank0[noise[0]], rank1[noise[0]])
    log_std = [k for k in rank0 if k.endswith("log_std")]
    assert log_std and torch.equal(rank0[log_std[0]], rank1[log_std[0]])
