"""``trainer.compile=true``: the loss runs through torch.compile, results stay checkpoint-compatible."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from rl_trainers.algorithms import build_trainer
from rl_trainers.app.run import run
from rl_trainers.errors import ConfigError


@pytest.mark.slow
@pytest.mark.skipif(
    not any(shutil.which(cc) for cc in ("g++", "c++", "clang++")),
    reason="torch.compile on CPU (inductor) needs a C++ compiler",
)
@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_compiled_loss_trains_and_matches_eager(tiny_config, algorithm, tmp_path):
    """A compiled run finishes; on one batch the compiled loss equals the eager one."""
    from torch._inductor import config as inductor_config

    cfg = tiny_config(algorithm, ["trainer.compile=true"])
    run(cfg, output_dir=tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["frames"] >= 200

    eager = build_trainer(tiny_config(algorithm), tmp_path / "eager")
    compiled = build_trainer(cfg, tmp_path / "compiled")
    assert compiled.loss_module._compiled_call_impl is not None
    assert eager.loss_module._compiled_call_impl is None
    # same seed, same build: identical parameters and state-dict keys
    assert eager.loss_module.state_dict().keys() == compiled.loss_module.state_dict().keys()
    batch = next(iter(eager.collector))
    if algorithm == "ppo":
        eager._advantage(batch)
        sample = eager.minibatches.sample()
    else:
        sample = batch.reshape(-1)
    torch.manual_seed(0)
    out_eager = eager.loss_module(sample.clone())
    torch.manual_seed(0)
    # SAC samples actions inside its loss: compile it to draw them with eager's generator
    with inductor_config.patch(fallback_random=True):
        out_compiled = compiled.loss_module(sample.clone())
    for key in out_eager.keys():
        if key.startswith("loss_"):
            torch.testing.assert_close(out_compiled[key], out_eager[key], rtol=1e-4, atol=1e-5)


def test_cuda_graphs_on_cpu_is_a_config_error(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["trainer.compile=true", "trainer.compile_mode=reduce-overhead"])
    with pytest.raises(ConfigError) as info:
        build_trainer(cfg, tmp_path)
    assert "trainer.compile_mode='reduce-overhead'" in str(info.value)
    assert "device=cuda" in str(info.value)


def test_unknown_compile_mode_lists_the_modes(tiny_config, tmp_path):
    cfg = tiny_config("ppo", ["trainer.compile=true", "trainer.compile_mode=fastest"])
    with pytest.raises(ConfigError) as info:
        build_trainer(cfg, tmp_path)
    assert "fastest" in str(info.value) and "max-autotune" in str(info.value)
