"""torchrl._utils' ``logger``, ``timeit`` and ``compile_with_warmup``, as sota scripts use them
(``from torchrl._utils import timeit, logger as torchrl_logger``)."""

from __future__ import annotations

import logging
import time

import pytest
import torch

from rl_trainers._utils import compile_with_warmup, logger, timeit


@pytest.fixture(autouse=True)
def _clean_timers():
    saved = dict(timeit._REG)
    timeit._REG.clear()
    timeit._printevery_count = 0
    yield
    timeit._REG.clear()
    timeit._REG.update(saved)


def test_logger_writes_info_lines_to_stderr(capsys):
    assert isinstance(logger, logging.Logger) and logger.name == "rl_trainers"
    assert logger.getEffectiveLevel() == logging.INFO
    logger.info("collected %d frames", 128)
    logger.debug("not shown")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.rstrip().endswith("[rl_trainers][INFO] collected 128 frames")
    assert "not shown" not in err


def test_timeit_context_manager_and_decorator_accumulate_per_name():
    with timeit("collect"):
        time.sleep(0.02)

    @timeit("update")
    def update(x):
        return x + 1

    assert update(1) == 2 and update(2) == 3
    assert update.__name__ == "update"
    with timeit("collect"):
        time.sleep(0.02)
    per_call = timeit.todict()
    total = timeit.todict(percall=False, prefix="time")
    assert set(per_call) == {"collect", "update"}
    assert set(total) == {"time/collect", "time/update"}
    assert 0.015 < per_call["collect"] < total["time/collect"]
    assert total["time/collect"] == pytest.approx(2 * per_call["collect"])
    assert timeit._REG["update"][2] == 2


def test_timeit_print_erase_and_printevery(capsys):
    with timeit("b"):
        pass
    with timeit("a"):
        pass
    text = timeit.print(prefix="iter 3")
    lines = text.splitlines()
    assert [line.split(" took")[0] for line in lines] == ["iter 3 -- a", "iter 3 -- b"]
    assert "msec" in lines[0] and "since last reset" in lines[0]
    assert "iter 3 -- a took" in capsys.readouterr().err
    timeit.erase()
    assert timeit.todict() == {"a": 0.0, "b": 0.0}

    for _ in range(10):  # 2 prints over 10 calls: calls 0 and 5
        timeit.printevery(num_prints=2, total_count=10)
    assert capsys.readouterr().err.count(" a took") == 2


def test_timeit_start_and_elapsed():
    timer = timeit("long").start()
    time.sleep(0.01)
    assert timer.elapsed() >= 0.009


def test_compile_with_warmup_runs_eagerly_then_compiled(monkeypatch):
    compiled_calls = []

    def fake_compile(model, **kwargs):
        assert kwargs == {"mode": "reduce-overhead"}

        def compiled(*args):
            compiled_calls.append(args)
            return model(*args)

        return compiled

    monkeypatch.setattr(torch, "compile", fake_compile)
    net = torch.nn.Linear(3, 2)
    run = compile_with_warmup(net, warmup=2, mode="reduce-overhead")
    x = torch.randn(4, 3)
    for _ in range(2):
        assert torch.equal(run(x), net(x))
    assert compiled_calls == []
    run(x)
    run(x)
    assert len(compiled_calls) == 2
    assert compile_with_warmup(warmup=0)(net)  # decorator form


def test_compile_with_warmup_really_compiles():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    net = torch.nn.Linear(3, 2)
    run = compile_with_warmup(net, warmup=1, backend=backend)
    x = torch.randn(4, 3)
    run(x)
    assert graphs == []
    assert torch.allclose(run(x), net(x)) and len(graphs) == 1


def test_importing_utils_keeps_dynamo_unloaded(fresh_python):
    code = (
        "import sys, torch\n"
        "from rl_trainers._utils import compile_with_warmup, timeit, logger\n"
        "f = compile_with_warmup(torch.nn.Linear(2, 2), warmup=1, backend='eager')\n"
        "f(torch.zeros(1, 2))\n"
        "a = 'torch._dynamo' in sys.modules\n"
        "f(torch.zeros(1, 2))\n"
        "print(a, 'torch._dynamo' in sys.modules)"
    )
    assert fresh_python(code) == "False True"


def test_timing_utilities_at_the_package_top_level():
    """``from torchrl import timeit`` ports as ``from rl_trainers import timeit``."""
    import rl_trainers
    from rl_trainers import _utils

    assert rl_trainers.timeit is _utils.timeit
    assert rl_trainers.logger is _utils.logger
    assert rl_trainers.compile_with_warmup is _utils.compile_with_warmup


def test_append_last_suffixes_the_last_name_of_a_key():
    """torchrl's discrete SAC script imports ``_append_last`` to name flattened entries."""
    from rl_trainers._utils import _append_last

    assert _append_last("obs", "_flat") == "obs_flat"
    assert _append_last(("agent", "obs"), "_unsq") == ("agent", "obs_unsq")
    assert _append_last(("agent", ("arm", "pos")), "_flat") == ("agent", "arm", "pos_flat")
    assert _append_last(("obs",), "_flat") == "obs_flat"
