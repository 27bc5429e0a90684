"""The default thread count (``trainer.num_threads=0``) takes the cores the machine leaves
idle, and a default run's OpenMP threads wait passively."""

from __future__ import annotations

import os
import subprocess
import sys

from rl_trainers.algorithms import build as build_steps
from rl_trainers.app.run import passive_openmp_threads


def test_two_threads_only_when_two_cores_are_idle(monkeypatch):
    monkeypatch.setattr(build_steps, "cpu_budget", lambda: 2)
    picked = {}
    monkeypatch.setattr(build_steps.torch, "set_num_threads", lambda n: picked.setdefault("n", n))
    for idle, widest, expected in ((2, 256, 2), (1, 256, 1), (2, 64, 1)):
        picked.clear()
        monkeypatch.setattr(build_steps, "idle_cores", lambda idle=idle: idle)
        assert build_steps.set_num_threads(0, widest) == expected
    assert build_steps.set_num_threads(3, 256) == 3  # asked for: as asked


def test_idle_cores_sees_a_busy_process():
    budget = build_steps.cpu_budget()
    if budget < 2:
        return  # one core: nothing to tell apart
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert build_steps.idle_cores(0.3) <= budget - 1
    finally:
        spin.kill()
        spin.wait()


def test_a_default_run_sets_a_passive_wait_policy_before_torch_loads(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delitem(sys.modules, "torch")  # as in train.py, before the trainer is built
    passive_openmp_threads(1)
    assert "OMP_WAIT_POLICY" not in os.environ
    passive_openmp_threads(0)
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's own choice stays
    passive_openmp_threads(0)
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
