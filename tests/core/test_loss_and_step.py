"""Gradients without autograd (``LossModule.loss_and_grads``), the flat parameter buffer
(``FlatParameters``) and the optimizer hook's one-call step (``OptimizerHook.loss_and_step``).

The fast path must give what ``forward()`` + ``backward()`` + clip + Adam give: the loss
entries and gradients bitwise, the clipped step to float rounding (one norm over the flat
buffer instead of per-tensor norms).
"""

from __future__ import annotations

import copy

import pytest
import torch
from app.conftest import TINY, compose_config  # tests/ is on sys.path (rootdir packages)
from tensordict import TensorDict
from torch import nn

from rl_trainers.algorithms import build_trainer
from rl_trainers.core.flat_params import FlatParameters
from rl_trainers.core.loop import NonFiniteLossError, OptimizerHook, clip_grad_norm_
from rl_trainers.core.optimizer_step import optimizer_step
from rl_trainers.envs.specs import Composite, Unbounded

OBS = Composite(observation=Unbounded(shape=(4,)))


def _params(n_layers: int = 3) -> list[nn.Parameter]:
    torch.manual_seed(1)
    net = nn.Sequential(*[nn.Linear(5 if i == 0 else 7, 7) for i in range(n_layers)])
    return list(net.parameters())


def test_flat_parameters_keep_values_identities_and_state_dicts():
    net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    params = list(net.parameters())
    net[0].weight.grad = torch.randn(3, 4)
    grad = net[0].weight.grad.clone()
    flat = FlatParameters(params)
    assert list(net.parameters()) == params  # the same Parameter objects
    assert all(p.is_leaf and p.requires_grad for p in params)
    for key, value in net.state_dict().items():
        assert torch.equal(value, before[key])
    assert torch.equal(net[0].weight.grad, grad)
    assert net[2].bias.grad is not None and not net[2].bias.grad.any()
    assert flat.grads_attached() and flat.matches(params)
    with torch.no_grad():
        flat.data.mul_(2)  # the parameters are views of the buffer
    assert torch.equal(net[2].weight, 2 * before["2.weight"])
    # each parameter starts on a 64-byte boundary, as a tensor of its own would
    assert all(p.data_ptr() % 64 == 0 and p.grad.data_ptr() % 64 == 0 for p in params)
    net.double()  # replaces the storages: the buffer no longer holds them
    assert not flat.matches(list(net.parameters()))


def test_flat_parameters_survive_load_state_dict_and_reattach_grads():
    net = nn.Linear(4, 3)
    flat = FlatParameters(list(net.parameters()))
    net.load_state_dict({"weight": torch.ones(3, 4), "bias": torch.zeros(3)})
    assert flat.matches(list(net.parameters()))  # copied in place
    assert torch.equal(flat.data[:12], torch.ones(12))
    net.weight.grad = None
    assert not flat.grads_attached()
    flat.attach_grads()
    assert flat.grads_attached()


def test_flat_parameters_refuse_what_cannot_share_a_buffer():
    a, b = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2, dtype=torch.float64))
    assert not FlatParameters.supports([a, b])
    assert not FlatParameters.supports([a, a])
    assert not FlatParameters.supports([a, nn.Parameter(torch.zeros(2), requires_grad=False)])
    assert not FlatParameters.supports([])
    with pytest.raises(ValueError, match="one device and dtype"):
        FlatParameters([a, b])


def test_flat_clip_matches_torch_to_rounding():
    params = _params()
    for p in params:
        p.grad = torch.randn_like(p)
    copies = [nn.Parameter(torch.zeros_like(p)) for p in params]
    for c, p in zip(copies, params):
        c.grad = p.grad.clone()
    expected = torch.nn.utils.clip_grad_norm_(copies, 0.5)
    flat = FlatParameters(params)
    norm = flat.clip_grad_norm_(0.5)
    torch.testing.assert_close(norm, expected)
    assert norm > 0.5  # clipping happened
    for p, c in zip(params, copies):
        torch.testing.assert_close(p.grad, c.grad)
    assert torch.linalg.vector_norm(flat.grad).item() == pytest.approx(0.5, rel=1e-5)


@pytest.mark.parametrize("optimizer_class", [torch.optim.Adam, torch.optim.AdamW])
def test_flat_adam_steps_like_the_per_tensor_kernel(optimizer_class):
    """Same values as torch's own fused step to float rounding, the moments stored in one
    buffer, the state dict unchanged in form and loadable into a plain optimizer."""
    params = _params()
    twins = [nn.Parameter(p.detach().clone()) for p in params]
    opt = optimizer_class(params, lr=1e-2, fused=True, weight_decay=0.01)
    reference = optimizer_class(twins, lr=1e-2, fused=True, weight_decay=0.01)
    flat = None
    for step in range(5):
        gen = torch.Generator().manual_seed(step)
        grads = [torch.randn(p.shape, generator=gen) for p in params]
        for p, t, g in zip(params, twins, grads):
            p.grad, t.grad = g.clone(), g.clone()
        flat = FlatParameters(params) if flat is None else flat
        flat.attach_grads() if step else None
        for view, g in zip(flat.grad_views, grads):
            view.copy_(g)
        optimizer_step(opt, flat)
        reference.step()
    for p, t in zip(params, twins):
        torch.testing.assert_close(p, t, rtol=1e-6, atol=1e-7)
    state = opt.state_dict()
    ref_state = reference.state_dict()
    assert state["param_groups"] == ref_state["param_groups"]
    exp_avgs = [opt.state[p]["exp_avg"] for p in params]
    assert len({t.untyped_storage().data_ptr() for t in exp_avgs}) == 1
    for i in range(len(params)):
        for name in ("step", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(state["state"][i][name], ref_state["state"][i][name])
    fresh = optimizer_class(_params(), lr=1e-2, fused=True)
    fresh.load_state_dict(copy.deepcopy(state))  # a checkpoint of the flat step loads anywhere


def test_flat_step_falls_back_when_step_counts_disagree():
    params = _params(1)
    opt = torch.optim.Adam(params, lr=1e-2, fused=True)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    params[0].grad = torch.ones_like(params[0])
    params[1].grad = None
    opt.step()  # torch skips the bias: its step count stays behind
    flat = FlatParameters(params)
    optimizer_step(opt, flat)
    assert [float(opt.state[p]["step"]) for p in params] == [3.0, 2.0]


def _tiny_ppo_trainer(path, force_autograd: bool, *overrides: str):
    config = compose_config("ppo", [*TINY["ppo"], "trainer.num_epochs=3", *overrides])
    trainer = build_trainer(config, path)
    if force_autograd:  # a post_loss op needs the loss before the step: the autograd path
        trainer.register_op("post_loss", lambda batch: None)
    return trainer


def test_trainer_fast_path_trains_like_the_autograd_path(tmp_path):
    """The same tiny PPO run through ``loss_and_step`` and through forward + backward: the
    same parameters and logged losses up to the rounding of the clipping norm."""
    fast = _tiny_ppo_trainer(tmp_path / "fast", False)
    fast.train()  # built then trained each: building seeds the global RNG
    slow = _tiny_ppo_trainer(tmp_path / "slow", True)
    slow.train()
    hook = fast._modules["optimizer"]
    assert isinstance(hook, OptimizerHook) and hook._flat is not None
    assert slow._modules["optimizer"]._flat is None
    assert fast._optim_count == slow._optim_count > 0
    for a, b in zip(fast.loss_module.parameters(), slow.loss_module.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_trainer_fast_path_logs_what_the_autograd_path_logs(tmp_path):
    """Losses logged every other batch (``log_interval`` two batches): the one-call step logs
    the same entries as forward + backward, ``grad_norm`` among them, at the same frames."""
    every_other_batch = "trainer.log_interval=128"
    fast = _tiny_ppo_trainer(tmp_path / "fast", False, every_other_batch)
    fast.train()
    slow = _tiny_ppo_trainer(tmp_path / "slow", True, every_other_batch)
    slow.train()
    assert "grad_norm" in fast.logged_values
    assert fast.logged_values.keys() == slow.logged_values.keys()
    for key, (_, frame, value) in fast.logged_values.items():
        _, slow_frame, slow_value = slow.logged_values[key]
        assert frame == slow_frame, key
        torch.testing.assert_close(
            torch.as_tensor(value, dtype=torch.float64),
            torch.as_tensor(slow_value, dtype=torch.float64),
            rtol=1e-4,
            atol=1e-5,
        )


def test_non_finite_loss_on_the_fast_path_stops_before_the_step(tmp_path):
    trainer = _tiny_ppo_trainer(tmp_path, False)
    loss, hook = trainer.loss_module, trainer._modules["optimizer"]
    batch = next(iter(trainer.collector))
    with torch.no_grad():
        loss.value_estimator(batch)
    batch = batch.reshape(-1)
    assert hook.loss_and_step(loss, batch.clone()) is not None
    before = [p.detach().clone() for p in loss.parameters()]
    batch["value_target"][3] = float("nan")
    with pytest.raises(NonFiniteLossError, match="loss_critic"):
        hook.loss_and_step(loss, batch)
    for p, b in zip(loss.parameters(), before, strict=True):
        assert torch.equal(p, b)


def test_loss_and_step_returns_none_for_losses_without_it():
    net = nn.Linear(3, 1)
    hook = OptimizerHook(torch.optim.SGD(net.parameters(), lr=0.1))
    assert hook.loss_and_step(net, TensorDict({}, [])) is None
    assert clip_grad_norm_(list(net.parameters()), 1.0) == 0  # no gradients were written
