"""``LogTiming`` and ``Trainer(log_timings=True)``: time spent in phases and hooks."""

from __future__ import annotations

import pytest
from trainer_fakes import MemLogger, make_trainer

from rl_trainers.core import HookTimings
from rl_trainers.hooks import LogTiming, UpdateWeights


def test_log_timings_logs_phases_and_each_hook():
    logger = MemLogger()
    trainer = make_trainer([0.0] * 3, logger=logger, log_interval=8, log_timings=True)
    UpdateWeights(trainer.collector, 1).register(trainer)
    trainer.train()
    names = logger.names()
    for name in (
        "time/collect",
        "time/optim_steps",
        "time/hook/OptimizerHook",
        "time/hook/UpdateWeights",
        "time/hook/LogTiming",
    ):
        assert name in names, sorted(names)
    steps = [s for s, _ in logger.values("time/hook/UpdateWeights")]
    assert steps == [8, 16, 24]
    assert all(v >= 0 for _, v in logger.values("time/optim_steps"))


def test_register_op_form_turns_timing_on_for_hooks_registered_before():
    trainer = make_trainer([0.0] * 2)
    calls = []
    trainer.register_op("post_steps", lambda: calls.append(1), every=2)
    hook = LogTiming(prefix="t", percall=False)
    trainer.register_op("post_steps_log", hook)
    trainer.train()
    out = hook()
    assert calls == [1]  # the every=2 filter still applies
    assert set(out) >= {"t/collect", "t/optim_steps", "t/hook/<lambda>", "t/hook/OptimizerHook"}


def test_percall_total_and_erase():
    timings = HookTimings()
    timings.add("hook/A", 1.0)
    timings.add("hook/A", 3.0)
    timings.add("collect", 0.5)
    assert timings.todict(percall=True, prefix="time") == {
        "time/hook/A": 2.0,
        "time/collect": 0.5,
    }
    assert timings.todict(percall=False) == {"hook/A": 4.0, "collect": 0.5}
    trainer = make_trainer([0.0])
    hook = LogTiming(prefix="", percall=False, erase=True)
    hook.register(trainer)
    trainer.timings.erase()
    trainer.timings.add("hook/A", 2.0)
    assert hook() == {"hook/A": 2.0}
    assert trainer.timings.todict() == {} and hook() is None


def test_timing_is_off_by_default():
    trainer = make_trainer([0.0, 0.0])
    trainer.train()
    assert trainer.timings.todict() == {}


def test_unbound_log_timing_says_how_to_place_it():
    with pytest.raises(RuntimeError, match=r"LogTiming\(\).register\(trainer\)"):
        LogTiming()()
    with pytest.raises(TypeError, match="prefix must be a str"):
        LogTiming(prefix=None)
