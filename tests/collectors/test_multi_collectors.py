"""Multi-process collectors: batches, weights, and clean shutdown on errors and Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from collector_fake_env import CountingEnv

from rl_trainers.collectors import MultiaSyncDataCollector, MultiSyncDataCollector

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(pid, 0): read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _wait_gone(pids, timeout=10.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def make_env():
    return CountingEnv((3, 5))


def test_multisync_concatenates_workers_and_unique_ids():
    collector = MultiSyncDataCollector([make_env] * 2, frames_per_batch=16, total_frames=32)
    pids = collector.worker_pids
    batches = list(collector)
    assert len(batches) == 2
    assert batches[0].batch_size == torch.Size([4, 4])
    ids = batches[0]["collector", "traj_ids"]
    # each row (env) starts its own trajectory: four different ids
    assert ids[:, 0].unique().numel() == 4
    collector.shutdown()
    assert _wait_gone(pids)


def test_multisync_frames_per_batch_rounded_up_as_torchrl():
    with pytest.warns(UserWarning, match="not exactly divisible by the number of collector"):
        collector = MultiSyncDataCollector([make_env] * 2, frames_per_batch=9, total_frames=20)
    try:
        batches = list(collector)
    finally:
        collector.shutdown()
    # each worker rounds 5 frames up to its 2 envs: 3 steps of 2 envs, 12 frames per batch
    assert [b.numel() for b in batches] == [12, 12]
    assert collector.frames_collected == 24


def test_multiasync_yields_full_batches_and_updates_weights():
    policy = torch.nn.Linear(1, 1)
    torch.nn.init.zeros_(policy.weight)
    torch.nn.init.zeros_(policy.bias)

    from tensordict.nn import TensorDictModule

    module = TensorDictModule(policy, in_keys=["observation"], out_keys=["action"])
    collector = MultiaSyncDataCollector([make_env] * 2, module, frames_per_batch=8, total_frames=-1)
    try:
        it = iter(collector)
        first = next(it)
        assert first.batch_size == torch.Size([2, 4])
        assert (first["action"] == 0).all()
        with torch.no_grad():
            policy.bias.fill_(3.0)
        collector.update_policy_weights_()
        # each worker may have one batch in flight with the old weights; later ones use the new
        fresh = [bool((next(it)["action"] == 3.0).all()) for _ in range(6)]
        assert sum(not f for f in fresh) <= 2
        assert fresh[-1] or fresh[-2]
    finally:
        collector.shutdown()
    assert _wait_gone(collector.worker_pids)


def test_worker_exception_is_raised_and_workers_end():
    collector = MultiSyncDataCollector(
        [lambda: CountingEnv((3, 5), fail_after=5)] * 2, frames_per_batch=8, total_frames=-1
    )
    pids = collector.worker_pids
    with pytest.raises(RuntimeError, match="CountingEnv exploded on purpose"):
        for _ in collector:
            pass
    assert _wait_gone(pids)


def test_multiasync_worker_exception():
    collector = MultiaSyncDataCollector(
        [make_env, lambda: CountingEnv((3, 5), fail_after=3)], frames_per_batch=8, total_frames=-1
    )
    pids = collector.worker_pids
    with pytest.raises(RuntimeError, match=r"worker 1 failed:[\s\S]*Traceback"):
        for _ in collector:
            pass
    assert _wait_gone(pids)


def test_worker_killed_is_reported_not_hung():
    collector = MultiSyncDataCollector([make_env] * 2, frames_per_batch=8, total_frames=-1)
    os.kill(collector.worker_pids[1], signal.SIGKILL)
    start = time.time()
    with pytest.raises(RuntimeError, match="worker 1"):
        for _ in collector:
            pass
    assert time.time() - start < 10
    assert _wait_gone(collector.worker_pids)


SCRIPT = textwrap.dedent(
    """
    import signal, sys
    # Ctrl-C as in a terminal, even when the tests run with SIGINT ignored (a background
    # job of a non-interactive shell: nohup pytest &), which a child inherits
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {here!r})
    from collector_fake_env import CountingEnv
    from rl_trainers.collectors import MultiSyncDataCollector

    collector = MultiSyncDataCollector(
        [lambda: CountingEnv((3, 5))] * 2, frames_per_batch=8, total_frames=-1
    )
    print("PIDS", *collector.worker_pids, flush=True)
    for i, _ in enumerate(collector):
        if i == 0:
            print("COLLECTING", flush=True)
    """
)


def test_keyboard_interrupt_ends_workers(tmp_path):
    script = tmp_path / "run_collector.py"
    script.write_text(SCRIPT.format(here=str(HERE)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("PIDS"), line + proc.stderr.read().decode()
        pids = [int(p) for p in line.split()[1:]]
        assert proc.stdout.readline().decode().startswith("COLLECTING")
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        # shutdown is bounded (join, then terminate, then kill: at most ~9 s a worker), but a
        # loaded CI machine stretches it; 60 s still catches a real hang
        _, err = proc.communicate(timeout=60)
        assert b"KeyboardInterrupt" in err
        assert _wait_gone(pids)
    finally:
        if proc.poll() is None:
            proc.kill()


def _unbatched_env():
    return CountingEnv((3,), batched=False)


def test_multisync_cat_results():
    # torchrl's default "stack" gives [num_workers, T] for unbatched envs; an int concatenates
    collector = MultiSyncDataCollector(
        [_unbatched_env] * 2, frames_per_batch=8, total_frames=8, cat_results=-1
    )
    (batch,) = list(collector)
    assert batch.batch_size == torch.Size([8])
    collector.shutdown()
    collector = MultiSyncDataCollector(
        [_unbatched_env] * 2, frames_per_batch=8, total_frames=8, cat_results="stack"
    )
    assert [b.batch_size for b in collector] == [torch.Size([2, 4])]
    collector.shutdown()
    with pytest.raises(ValueError, match="cat_results"):
        MultiaSyncDataCollector([_unbatched_env] * 2, frames_per_batch=8, cat_results=0)


def test_async_data_collector_runs_one_worker():
    from rl_trainers.collectors import aSyncDataCollector

    collector = aSyncDataCollector(make_env, None, frames_per_batch=8, total_frames=24)
    pids = collector.worker_pids
    try:
        batches = list(collector)
    finally:
        collector.shutdown()
    assert len(pids) == 1
    assert [b.batch_size for b in batches] == [torch.Size([2, 4])] * 3
    assert collector.frames_collected == 24
    assert _wait_gone(pids)
    with pytest.raises(TypeError, match="one worker"):
        aSyncDataCollector(make_env, None, frames_per_batch=8, num_workers=2)


def test_update_policy_weights_from_a_tensordict_of_parameters():
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule

    def module(bias: float) -> TensorDictModule:
        layer = torch.nn.Linear(1, 1)
        torch.nn.init.zeros_(layer.weight)
        torch.nn.init.constant_(layer.bias, bias)
        return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])

    policy, trained = module(0.0), module(5.0)
    collector = MultiSyncDataCollector([make_env] * 2, policy, frames_per_batch=8, total_frames=-1)
    try:
        it = iter(collector)
        assert (next(it)["action"] == 0).all()
        collector.update_policy_weights_(TensorDict.from_module(trained))
        assert (next(it)["action"] == 5).all()
        with pytest.raises(KeyError, match="none of the given weights"):
            collector.update_policy_weights_({"other.weight": torch.zeros(1, 1)})
    finally:
        collector.shutdown()


def test_multisync_reset_restarts_the_flagged_workers_envs():
    collector = MultiSyncDataCollector(
        [lambda: CountingEnv((7, 9))] * 2, frames_per_batch=8, total_frames=-1
    )
    try:
        batches = iter(collector)
        first = next(batches)
        assert first["observation"][:, -1, 0].tolist() == [1001] * 4
        collector.reset([False, True])
        second = next(batches)
        # worker 0's envs (rows 0, 1) carry on; worker 1's start new episodes
        assert second["observation"][:, 0, 0].tolist() == [1002, 1002, 2000, 2000]
        ids1, ids2 = first["collector", "traj_ids"], second["collector", "traj_ids"]
        assert torch.equal(ids2[:2, 0], ids1[:2, -1])
        assert set(ids2[2:, 0].tolist()).isdisjoint(ids1.flatten().tolist())
        with pytest.raises(ValueError, match="reset_idx has 3 flags for 2 collector workers"):
            collector.reset([True, True, False])
    finally:
        collector.shutdown()


def test_multiasync_reset_drops_pending_batches_and_restarts_every_env():
    collector = MultiaSyncDataCollector(
        [lambda: CountingEnv((7, 9))] * 2, frames_per_batch=4, total_frames=-1
    )
    try:
        batches = iter(collector)
        next(batches)
        collector.reset()
        after = next(batches)
        assert after["observation"][:, 0, 0].tolist() == [2000, 2000]
    finally:
        collector.shutdown()
