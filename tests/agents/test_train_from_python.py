"""``rl_trainers.train(...)``: the app's run from Python, returning the finished run."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import torch
import yaml

import rl_trainers
from rl_trainers.agents.training import _override_words
from rl_trainers.core.checkpoint import list_checkpoints
from rl_trainers.errors import TrainingError

from .conftest import env_with_package

TINY_PPO = [
    "trainer.total_frames=256",
    "collector.frames_per_batch=64",
    "trainer.minibatch_size=32",
    "trainer.num_epochs=2",
    "eval.episodes=2",
]


def test_train_returns_the_finished_run_ready_to_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", env_with_package()["PYTHONPATH"])
    threads, handler = torch.get_num_threads(), signal.getsignal(signal.SIGINT)
    run = rl_trainers.train(
        "ppo",
        *TINY_PPO,
        {"env.num_envs": 2, "network.policy.num_cells": [16, 16], "trainer.progress_bar": False},
        {"logger.exp_name": "my run, v1 (it's small)"},  # a literal, quoted for Hydra
        run_dir=tmp_path / "run",
    )
    assert run.run_dir == tmp_path / "run"
    assert run.summary == json.loads((run.run_dir / "summary.json").read_text())
    assert run.summary["frames"] == 256 and run.eval_return_mean > 0
    saved = yaml.safe_load((run.run_dir / ".hydra" / "config.yaml").read_text())
    assert saved["env"]["num_envs"] == 2
    assert saved["network"]["policy"]["num_cells"] == [16, 16]
    assert saved["trainer"]["progress_bar"] is False
    assert saved["logger"]["exp_name"] == "my run, v1 (it's small)"
    policy = run.load_policy()
    assert policy.act([0.0, 0.0, 0.0, 0.0]) in (0, 1)
    # the run's own process: the caller's torch threads and signal handlers are untouched
    assert (torch.get_num_threads(), signal.getsignal(signal.SIGINT)) == (threads, handler)
    # its console output is relayed (a notebook shows it)
    assert '"eval_return_mean"' in capsys.readouterr().out


def test_a_mistake_raises_the_runs_error_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        TrainingError, match=r"optimizer.lrr is not a field: did you mean optimizer.lr\?"
    ) as err:
        rl_trainers.train("ppo", "optimizer.lrr=1", echo=False)
    assert err.value.returncode == 2
    with pytest.raises(TrainingError, match="-m: train.. takes overrides"):
        rl_trainers.train("ppo", "-m", "seed=0,1")
    assert capsys.readouterr() == ("", "")  # echo=False: nothing relayed
    assert not (tmp_path / "outputs").exists()


def test_overrides_given_as_lists_or_tuples_reach_the_run_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        TrainingError, match=r"optimizer.lrr is not a field: did you mean optimizer.lr\?"
    ):
        rl_trainers.train("ppo", ["trainer.total_frames=256", "optimizer.lrr=1"], echo=False)
    words = _override_words(["env=hopper", ("seed=1", {"eval.episodes": 1}), "seed=2"])
    assert words == ["env=hopper", "seed=1", "eval.episodes=1", "seed=2"]


@pytest.mark.parametrize("override", [256, None, {"seed"}])
def test_an_override_of_another_type_is_refused_naming_what_is_accepted(override):
    with pytest.raises(TypeError, match="give strings .* or lists or tuples of those"):
        rl_trainers.train("ppo", "seed=1", override)


INTERRUPTED = textwrap.dedent(
    """
    import sys
    import rl_trainers

    try:
        rl_trainers.train("ppo", *sys.argv[2:], run_dir=sys.argv[1], echo=False)
    except KeyboardInterrupt:
        print("KeyboardInterrupt raised", flush=True)
    """
)


INTERRUPTED_IN_A_RELAY_THREAD = textwrap.dedent(
    """
    import os
    import signal
    import sys
    import threading
    import time

    import rl_trainers

    def interrupt_a_relay_thread():
        while not os.path.exists(os.path.join(sys.argv[1], "logs")):  # training started
            time.sleep(0.05)
        time.sleep(0.5)
        me, main = threading.current_thread(), threading.main_thread()
        relay = next(t for t in threading.enumerate() if t not in (me, main))
        # where the kernel may deliver a Ctrl-C: to a thread other than the main one
        signal.pthread_kill(relay.ident, signal.SIGINT)

    threading.Thread(target=interrupt_a_relay_thread, daemon=True).start()
    try:
        rl_trainers.train("ppo", *sys.argv[2:], run_dir=sys.argv[1], echo=False)
    except KeyboardInterrupt:
        print("KeyboardInterrupt raised", flush=True)
    """
)


def _start_caller(code: str, out: Path) -> subprocess.Popen:
    """A program running ``code`` that trains a long PPO run into ``out`` with ``train()``."""
    script = out.parent / "caller.py"
    script.write_text(code)
    long_run = [*TINY_PPO, "trainer.total_frames=10000000", "trainer.progress_bar=false"]
    return subprocess.Popen(
        [sys.executable, str(script), str(out), *long_run],
        env=env_with_package(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_interrupt_delivered_to_another_thread_of_the_caller_stops_the_run(tmp_path):
    """The kernel gives a process's SIGINT to any of its threads: one that lands in a thread
    relaying the run's output stops the run too (the caller waited for the run's end)."""
    out = tmp_path / "run"
    caller = _start_caller(INTERRUPTED_IN_A_RELAY_THREAD, out)
    try:
        stdout, stderr = caller.communicate(timeout=120)
    finally:
        caller.kill()
        run_processes = [
            p
            for p in psutil.process_iter(["cmdline"])
            if str(out) in " ".join(p.info["cmdline"] or [])
        ]
        for process in run_processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
    assert caller.returncode == 0, stderr
    assert "KeyboardInterrupt raised" in stdout
    frames = list_checkpoints(out / "checkpoints" / "trainer.pt")[-1][0]
    assert 0 < frames < 10_000_000


def test_an_interrupt_stops_the_run_with_a_checkpoint_and_raises(tmp_path):
    """Ctrl-C in the calling program (SIGINT to it alone: the run has a session of its own)
    reaches the run, which checkpoints and ends; train() then raises KeyboardInterrupt."""
    out = tmp_path / "run"
    caller = _start_caller(INTERRUPTED, out)
    run_processes = []
    try:
        deadline = time.monotonic() + 120
        while not (out / "logs").exists():  # training started
            assert caller.poll() is None, caller.communicate()
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
        run_processes = psutil.Process(caller.pid).children(recursive=True)
        time.sleep(1.0)
        start = time.monotonic()
        caller.send_signal(signal.SIGINT)
        stdout, stderr = caller.communicate(timeout=60)
    finally:  # the run has a session of its own: no orphan left training if this fails
        caller.kill()
        for process in run_processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
    assert time.monotonic() - start < 30
    assert caller.returncode == 0, stderr
    assert "KeyboardInterrupt raised" in stdout
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in run_processes)
    frames = list_checkpoints(out / "checkpoints" / "trainer.pt")[-1][0]
    assert 0 < frames < 10_000_000  # the interrupted run's checkpoint, at a batch boundary
    assert frames % 64 == 0


def test_a_caller_without_a_console_still_gets_its_run(tmp_path, monkeypatch):
    """``sys.stdout`` gone (pythonw, a closed stream): the output is still drained, so the
    run cannot block on a full pipe."""
    monkeypatch.setattr(sys, "stdout", None)
    run = rl_trainers.train("ppo", *TINY_PPO, run_dir=tmp_path / "run")
    assert run.summary["frames"] == 256


def test_the_run_imports_an_env_module_the_caller_put_on_sys_path(tmp_path, monkeypatch):
    """A module the caller made importable through ``sys.path`` alone (a notebook's
    ``sys.path.append(...)``), not ``PYTHONPATH``, is importable in the run too."""
    folder = tmp_path / "my_code"
    folder.mkdir()
    (folder / "caller_envs.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            import numpy as np


            class Short(gym.Env):
                observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
                action_space = gym.spaces.Discrete(2)

                def reset(self, seed=None, options=None):
                    super().reset(seed=seed)
                    self.t = 0
                    return np.zeros(2, np.float32), {}

                def step(self, action):
                    self.t += 1
                    return np.zeros(2, np.float32), 1.0, False, self.t >= 5, {}
            """
        )
    )
    monkeypatch.setenv("PYTHONPATH", env_with_package()["PYTHONPATH"])
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(tmp_path)
    run = rl_trainers.train(
        "ppo",
        *TINY_PPO,
        "env.env_name=caller_envs:Short",
        {"trainer.progress_bar": False},
        run_dir=tmp_path / "run",
        echo=False,
    )
    assert run.eval_return_mean == 5.0  # the env's own episodes: 5 steps of reward 1
