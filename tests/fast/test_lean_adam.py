"""The lean fused-Adam step gives exactly what ``optimizer.step()`` gives."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

from rl_trainers.core.optimizer_step import optimizer_step
from rl_trainers.fast.adam import lean_fused_adam_step


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))


def _train(net: nn.Module, optimizer: torch.optim.Optimizer, step, steps: int = 5) -> None:
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: 1.0 - 0.1 * i)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(32, 4, generator=gen)
        for p in net.parameters():
            p.grad = None
        net(x).pow(2).mean().backward()
        step(optimizer)
        scheduler.step()


@pytest.mark.parametrize(
    "make",
    [
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True),
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True, weight_decay=0.1),
        lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True, weight_decay=0.1),
        lambda p: torch.optim.Adam(
            [{"params": p[:2]}, {"params": p[2:], "lr": 3e-3}], lr=1e-2, fused=True
        ),
    ],
    ids=["adam", "adam_weight_decay", "adamw", "two_groups"],
)
def test_bitwise_equal_to_torch_step(make) -> None:
    reference, lean = _net(), _net()
    ref_opt, lean_opt = make(list(reference.parameters())), make(list(lean.parameters()))
    _train(reference, ref_opt, lambda o: o.step())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no lr-scheduler warning about the step order
        _train(lean, lean_opt, optimizer_step)
    for a, b in zip(reference.parameters(), lean.parameters(), strict=True):
        assert torch.equal(a, b)
    ref_state, lean_state = ref_opt.state_dict(), lean_opt.state_dict()
    assert ref_state["param_groups"] == lean_state["param_groups"]
    for key, value in ref_state["state"].items():
        for name, tensor in value.items():
            assert torch.equal(tensor, lean_state["state"][key][name]), (key, name)


def test_state_saved_and_loaded_mid_run_continues_like_torch(tmp_path) -> None:
    """Step counters stay per parameter through a checkpoint, a load into a fresh optimizer
    and steps taken by ``optimizer.step()`` in between."""
    reference, lean = _net(), _net()
    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-2, fused=True)
    lean_opt = torch.optim.Adam(lean.parameters(), lr=1e-2, fused=True)
    for steps in (3, 2, 2):
        _train(reference, ref_opt, lambda o: o.step(), steps=steps)
    _train(lean, lean_opt, optimizer_step, steps=3)
    torch.save(lean_opt.state_dict(), tmp_path / "opt.pt")
    lean_opt = torch.optim.Adam(lean.parameters(), lr=1e-2, fused=True)
    lean_opt.load_state_dict(torch.load(tmp_path / "opt.pt"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the scheduler sees the resumed optimizer's steps
        _train(lean, lean_opt, optimizer_step, steps=2)
    _train(lean, lean_opt, lambda o: o.step(), steps=2)
    for a, b in zip(reference.parameters(), lean.parameters(), strict=True):
        assert torch.equal(a, b)
    ref_steps = [s["step"].item() for s in ref_opt.state.values()]
    lean_steps = [s["step"].item() for s in lean_opt.state.values()]
    assert ref_steps == lean_steps == [7.0] * 4


def test_first_step_creates_torchs_state_and_unsupported_cases_fall_back() -> None:
    net, ref_net = _net(), _net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, fused=True)
    ref_opt = torch.optim.Adam(ref_net.parameters(), lr=1e-2, fused=True)
    x = torch.randn(3, 4)
    net(x).sum().backward()
    ref_net(x).sum().backward()
    assert lean_fused_adam_step(opt)  # no state yet: Adam's own initialisation, then a step
    ref_opt.step()
    for a, b in zip(ref_net.parameters(), net.parameters(), strict=True):
        assert torch.equal(a, b)
        ref_state, state = ref_opt.state[a], opt.state[b]
        assert ref_state.keys() == state.keys()
        for name, value in ref_state.items():
            assert value.dtype == state[name].dtype and torch.equal(value, state[name]), name
    assert lean_fused_adam_step(opt)
    net[0].weight.grad = None  # torch skips gradient-less parameters: the lean path declines
    assert not lean_fused_adam_step(opt)

    unfused = torch.optim.Adam(copy.deepcopy(net).parameters(), lr=1e-2, foreach=False)
    assert not lean_fused_adam_step(unfused)
    sgd = torch.optim.SGD(net.parameters(), lr=1e-2)
    assert not lean_fused_adam_step(sgd)


def test_step_hooks_are_honoured() -> None:
    net = _net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, fused=True)
    calls = []
    opt.register_step_post_hook(lambda *args: calls.append(1))
    for _ in range(3):
        net(torch.randn(3, 4)).sum().backward()
        optimizer_step(opt)
    assert calls == [1, 1, 1]
