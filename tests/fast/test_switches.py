"""The fast paths' switches (:mod:`rl_trainers.fast`): ``plain()`` turns them off and
restores them, ``RL_TRAINERS_FAST_PATHS=0`` starts them off."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rl_trainers import fast


def test_plain_turns_every_switch_off_and_restores_them(monkeypatch):
    for name in fast.SWITCHES:  # as they start without RL_TRAINERS_FAST_PATHS=0
        monkeypatch.setattr(fast, name, True)
    with fast.plain():
        assert not any(fast.state().values())
    assert all(fast.state().values())
    with fast.plain("FUSE_MLP"):
        assert {k for k, v in fast.state().items() if not v} == {"FUSE_MLP"}
    assert all(fast.state().values())
    with pytest.raises(ValueError, match="unknown fast paths \\['FUSED'\\]"):
        with fast.plain("FUSED"):
            pass


def test_the_environment_variable_starts_every_switch_off():
    code = "from rl_trainers import fast; print(sorted(fast.state().values()))"
    env = dict(os.environ, RL_TRAINERS_FAST_PATHS="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str([False] * len(fast.SWITCHES))
