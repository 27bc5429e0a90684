"""The fused MLP, numpy's tanh and the fused critic ensemble (rl_trainers.fast.mlp, .tanh,
.ensemble) compute exactly what the plain paths compute."""

import copy

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers import fast
from rl_trainers.envs.specs import OneHot, Unbounded
from rl_trainers.fast import gemm
from rl_trainers.fast import mlp as fused
from rl_trainers.modules import (
    MLP,
    FastTanh,
    OneHotCategorical,
    ProbabilisticActor,
    make_actor,
)


def test_fast_tanh_matches_torch_values_and_gradients():
    x = torch.randn(300, 64, dtype=torch.float64, requires_grad=True)
    y = FastTanh()(x)
    y.pow(2).sum().backward()
    ref = torch.tanh(x.detach())
    torch.testing.assert_close(y.detach(), ref)
    torch.testing.assert_close(x.grad, 2 * ref * (1 - ref**2))


def test_fast_tanh_float32_within_one_ulp_and_no_grad_path():
    x = torch.randn(256, 64) * 4
    with torch.no_grad():
        y = FastTanh()(x)
    assert not y.requires_grad
    torch.testing.assert_close(y, torch.tanh(x), rtol=2e-7, atol=2e-7)


def test_fast_tanh_falls_back_for_other_inputs():
    half = torch.randn(5, dtype=torch.float16)
    assert FastTanh()(half).dtype == torch.float16
    scalar = torch.tensor(0.5)
    torch.testing.assert_close(FastTanh()(scalar), torch.tanh(scalar))
    assert torch.autograd.gradcheck(
        FastTanh(), (torch.randn(4, 3, dtype=torch.float64, requires_grad=True),)
    )


def test_mlp_swaps_tanh_for_fast_tanh_only():
    tanh_mlp = MLP(4, 2, num_cells=[8], activation_class=nn.Tanh)
    relu_mlp = MLP(4, 2, num_cells=[8], activation_class=nn.ReLU)
    assert isinstance(tanh_mlp[1], FastTanh) and isinstance(tanh_mlp[1], nn.Tanh)
    assert type(relu_mlp[1]) is nn.ReLU


def test_get_dist_fast_path_matches_module_call():
    obs_spec = {"observation": Unbounded(shape=(5, 4))}
    actor = make_actor(obs_spec, OneHot(3, shape=(5, 3)))
    td = TensorDict({"observation": torch.randn(5, 4)}, batch_size=[5])
    dist = actor.get_dist(td)
    assert isinstance(dist, OneHotCategorical)
    expected = actor.module.module(td["observation"])
    torch.testing.assert_close(td["logits"], expected)
    torch.testing.assert_close(dist.logits, expected)


def test_get_dist_generic_module_still_works():
    class Wrapped(TensorDictModule):  # a subclass takes the generic path
        pass

    net = Wrapped(nn.Linear(4, 3), in_keys=["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(net, in_keys=["logits"], distribution_class=OneHotCategorical)
    td = TensorDict({"observation": torch.randn(2, 4)}, batch_size=[2])
    dist = actor.get_dist(td)
    torch.testing.assert_close(dist.logits, net.module(td["observation"]))


# --- fused MLP (one autograd node per MLP call) ---------------------------------------------


def _plain(mlp: MLP, *inputs: torch.Tensor) -> torch.Tensor:
    """The layer-by-layer reference: nn.Sequential's own forward."""
    x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
    out = nn.Sequential.forward(mlp, x)
    return out if mlp.out_shape is None else out.reshape(*out.shape[:-1], *mlp.out_shape)


def _grads(mlp: MLP, out: torch.Tensor, weight: torch.Tensor, *inputs: torch.Tensor):
    for p in mlp.parameters():
        p.grad = None
    for x in inputs:
        x.grad = None
    (out * weight).sum().backward()
    return [None if p.grad is None else p.grad.clone() for p in mlp.parameters()] + [
        None if x.grad is None else x.grad.clone() for x in inputs
    ]


def _assert_same_grads(a, b):
    assert len(a) == len(b)
    for ga, gb in zip(a, b):
        if ga is None or gb is None:
            assert ga is None and gb is None
        else:
            torch.testing.assert_close(ga, gb)


def _check_matches_plain(mlp: MLP, *inputs: torch.Tensor) -> None:
    fused = mlp(*inputs)
    assert fused.grad_fn is not None and "Fused" in type(_root_node(fused)).__name__
    plain = _plain(mlp, *inputs)
    torch.testing.assert_close(fused, plain)
    weight = torch.randn_like(plain)  # a non-uniform output gradient
    _assert_same_grads(_grads(mlp, fused, weight, *inputs), _grads(mlp, plain, weight, *inputs))


def _root_node(out: torch.Tensor):
    """The first non-view node under ``out`` (3-D outputs are a reshape of the fused node)."""
    node = out.grad_fn
    while type(node).__name__ in ("ViewBackward0", "ReshapeAliasBackward0", "UnsafeViewBackward0"):
        node = node.next_functions[0][0]
    return node


@pytest.mark.parametrize("activation", [nn.Tanh, nn.ReLU])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_mlp_matches_plain_path_2d_and_3d(activation, dtype):
    torch.manual_seed(0)
    mlp = MLP(4, 3, num_cells=[32, 16], activation_class=activation).to(dtype)
    _check_matches_plain(mlp, torch.randn(64, 4, dtype=dtype))
    _check_matches_plain(mlp, torch.randn(8, 32, 4, dtype=dtype))
    _check_matches_plain(mlp, torch.randn(4, dtype=dtype))  # unbatched


def test_fused_mlp_hand_computed_gradients():
    # one hidden tanh unit: y = w2 * tanh(w1 * x + b1) + b2 on a single float64 sample
    mlp = MLP(1, 1, num_cells=[1], activation_class=nn.Tanh).double()
    with torch.no_grad():
        for p, v in zip(mlp.parameters(), [0.5, -0.2, 2.0, 0.1]):
            p.fill_(v)
    x = torch.tensor([[1.5]], dtype=torch.float64, requires_grad=True)
    y = mlp(x)
    y.sum().backward()
    h = torch.tanh(torch.tensor(0.5 * 1.5 - 0.2, dtype=torch.float64))
    dh = 2.0 * (1 - h**2)
    torch.testing.assert_close(y.detach(), (2.0 * h + 0.1).reshape(1, 1))
    w1, b1, w2, b2 = (p.grad.item() for p in mlp.parameters())
    torch.testing.assert_close(
        torch.tensor([w1, b1, w2, b2], dtype=torch.float64),
        torch.stack([dh * 1.5, dh, h, torch.tensor(1.0, dtype=torch.float64)]),
    )
    torch.testing.assert_close(x.grad, (dh * 0.5).reshape(1, 1))


@pytest.mark.parametrize("activation", [nn.Tanh, nn.ReLU])
def test_fused_mlp_concatenated_inputs_requiring_grad(activation):
    torch.manual_seed(1)
    mlp = MLP(5, 1, num_cells=[16, 16], activation_class=activation).double()
    obs = torch.randn(10, 3, dtype=torch.float64, requires_grad=True)
    act = torch.randn(10, 2, dtype=torch.float64, requires_grad=True)
    _check_matches_plain(mlp, obs, act)
    _check_matches_plain(mlp, obs.detach().requires_grad_(), act.detach())


def test_fused_mlp_layer_variants_match():
    torch.manual_seed(2)
    variants = [
        MLP(6, 2, num_cells=[8], activation_class=nn.ReLU, bias_last_layer=False),
        MLP(6, 2, num_cells=[8, 8], activation_class=nn.Tanh, activate_last_layer=True),
        MLP(6, (2, 3), num_cells=[8], activation_class=nn.ReLU),  # shaped output
        MLP(6, 2, num_cells=[], activation_class=nn.Tanh),  # a single Linear
        MLP(6, 2, num_cells=[256, 3], activation_class=nn.ReLU),  # narrow/wide layers
    ]
    for mlp in variants:
        _check_matches_plain(mlp.double(), torch.randn(7, 6, dtype=torch.float64))


def test_fused_mlp_frozen_parameters_get_no_gradient():
    torch.manual_seed(3)
    mlp = MLP(4, 2, num_cells=[16, 16], activation_class=nn.Tanh).double()
    mlp[0].weight.requires_grad_(False)
    mlp[0].bias.requires_grad_(False)
    mlp[2].bias.requires_grad_(False)
    x = torch.randn(12, 4, dtype=torch.float64)
    _check_matches_plain(mlp, x)
    mlp(x).sum().backward()
    assert mlp[0].weight.grad is None and mlp[2].bias.grad is None
    assert mlp[2].weight.grad is not None
    # everything frozen, only the input needs a gradient
    for p in mlp.parameters():
        p.requires_grad_(False)
    _check_matches_plain(mlp, x.clone().requires_grad_())


def test_fused_mlp_no_grad_and_inference_mode():
    mlp = MLP(4, 2, num_cells=[16, 16], activation_class=nn.Tanh)
    x = torch.randn(9, 4)
    with torch.no_grad():
        out = mlp(x)
        ref = _plain(mlp, x)
    assert out.grad_fn is None and not out.requires_grad
    torch.testing.assert_close(out, ref)
    with torch.inference_mode():
        torch.testing.assert_close(mlp(x), ref)
    frozen = MLP(4, 2, num_cells=[16], activation_class=nn.ReLU).requires_grad_(False)
    assert frozen(x).grad_fn is None  # nothing requires grad: the cheap forward, no node


@pytest.mark.parametrize("activation", [nn.Tanh, nn.ReLU])
def test_a_target_copy_with_buffer_weights_runs_fused_with_the_layer_by_layer_values(
    activation, monkeypatch
):
    """A loss's target network (``buffer_copy``: its weights and biases held as buffers)
    takes the fused path too, with nn.Linear's values; a weight swapped for a plain
    attribute still runs layer by layer."""
    from rl_trainers.objectives.common import buffer_copy

    torch.manual_seed(0)
    target = buffer_copy(MLP(4, 2, num_cells=[16, 16], activation_class=activation))
    assert not list(target.parameters())
    x = torch.randn(9, 4)
    assert fused.fused_mlp_parts(target, x) is not None
    with torch.no_grad():
        torch.testing.assert_close(target(x), _plain(target, x), rtol=0, atol=1e-6)
    calls = []
    original = fused.mlp_forward
    monkeypatch.setattr(fused, "mlp_forward", lambda *a: calls.append(1) or original(*a))
    with torch.no_grad():
        target(x)
    assert calls, "the target copy did not run fused"
    weight = target[0]._buffers.pop("weight")
    target[0].__dict__["weight"] = weight  # a plain attribute: nn.Linear's own forward
    assert fused.fused_mlp_parts(target, x) is None


def test_fused_mlp_gradcheck_and_accumulation():
    torch.manual_seed(4)
    mlp = MLP(3, 2, num_cells=[5, 4], activation_class=nn.Tanh).double()
    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda inp: mlp(inp), (x,))
    mlp(x).sum().backward()
    first = mlp[0].weight.grad.clone()
    mlp(x).sum().backward()  # gradients accumulate like the plain path
    torch.testing.assert_close(mlp[0].weight.grad, 2 * first)


def _uses_fused_node(mlp: nn.Module, *inputs) -> bool:
    out = mlp(*inputs)
    return out.grad_fn is not None and "Fused" in type(_root_node(out)).__name__


def test_fused_mlp_falls_back_for_other_networks_and_inputs():
    x = torch.randn(5, 4)
    assert _uses_fused_node(MLP(4, 2, num_cells=[8]), x)
    dropout = MLP(4, 2, num_cells=[8], dropout=0.5).eval()
    assert not _uses_fused_node(dropout, x)
    torch.testing.assert_close(dropout(x), _plain(dropout, x))
    assert not _uses_fused_node(MLP(4, 2, num_cells=[8], activation_class=nn.ELU), x)
    assert not _uses_fused_node(
        MLP(4, 2, num_cells=[8], norm_class=nn.LayerNorm, norm_kwargs={"normalized_shape": 8}), x
    )
    half = MLP(4, 2, num_cells=[8]).to(torch.bfloat16)
    out = half(x.to(torch.bfloat16))
    assert out.dtype == torch.bfloat16 and "Fused" not in type(out.grad_fn).__name__
    # integer/bool inputs (one-hot Discrete observations) are cast to float first
    mlp = MLP(4, 2, num_cells=[8])
    ints = torch.ones(5, 4, dtype=torch.long)
    torch.testing.assert_close(mlp(ints), mlp(ints.float()))


def test_fused_mlp_lazy_layer_and_hooks():
    lazy = MLP(out_features=2, num_cells=[8])
    x = torch.randn(3, 5)
    assert not _uses_fused_node(lazy, x)  # first call initialises the lazy layer
    assert _uses_fused_node(lazy, x)
    calls = []
    handle = lazy[2].register_forward_hook(lambda m, i, o: calls.append(o.shape))
    assert not _uses_fused_node(lazy, x) and calls == [(3, 2)]
    handle.remove()
    assert _uses_fused_node(lazy, x)
    lazy[1] = nn.ELU()  # replacing a layer rebuilds the plan
    assert not _uses_fused_node(lazy, x)


def test_fused_mlp_under_functional_call_and_vmap():
    from torch.func import functional_call, stack_module_state, vmap

    torch.manual_seed(5)
    mlp = MLP(4, 1, num_cells=[16, 16], activation_class=nn.ReLU).double()
    x = torch.randn(7, 4, dtype=torch.float64)
    # functional_call alone: the swapped-in tensors are read at call time and get the grads
    params = {k: v.detach().clone().requires_grad_() for k, v in mlp.named_parameters()}
    out = functional_call(mlp, params, (x,))
    assert "Fused" in type(out.grad_fn).__name__
    out.sum().backward()
    ref = _plain(mlp, x)
    ref.sum().backward()
    for name, p in mlp.named_parameters():
        torch.testing.assert_close(params[name].grad, p.grad)
    # vmap over stacked copies (CriticEnsemble's generic path) falls back to the layer loop
    copies = [mlp, MLP(4, 1, num_cells=[16, 16], activation_class=nn.ReLU).double()]
    stacked, _ = stack_module_state(copies)
    base = copies[0]
    outs = vmap(lambda p: functional_call(base, p, (x,)))(stacked)
    for i, c in enumerate(copies):
        torch.testing.assert_close(outs[i], _plain(c, x))
    # vmap over the inputs only (parameters shared) also falls back and agrees
    xs = torch.randn(3, 7, 4, dtype=torch.float64)
    torch.testing.assert_close(vmap(mlp)(xs), _plain(mlp, xs))
    seen = []
    vmap(lambda x_: seen.append(fused.fusable_input(x_)) or x_)(xs)
    assert seen == [False]


def test_fused_mlp_keeps_modules_and_state_dict():
    mlp = MLP(4, 2, num_cells=[8, 8])
    keys = list(mlp.state_dict())
    mlp(torch.randn(2, 4))
    assert (
        list(mlp.state_dict())
        == keys
        == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    )
    assert all(type(m) is nn.Linear for m in list(mlp)[::2])
    clone = copy.deepcopy(mlp)
    with torch.no_grad():
        clone[0].weight.add_(1.0)
    x = torch.randn(3, 4)
    torch.testing.assert_close(clone(x), _plain(clone, x))  # the copy uses its own layers
    assert not torch.allclose(clone(x), mlp(x))


def test_fused_mlp_falls_back_under_torch_compile():
    mlp = MLP(4, 2, num_cells=[16, 16], activation_class=nn.Tanh)
    x = torch.randn(5, 4)
    compiled = torch.compile(mlp, backend="eager", fullgraph=True)  # numpy would break the graph
    out = compiled(x)
    assert "Fused" not in type(out.grad_fn).__name__
    torch.testing.assert_close(out, _plain(mlp, x))


def test_fuse_flag_turns_the_fused_path_off(monkeypatch):
    mlp = MLP(4, 2, num_cells=[8])
    x = torch.randn(3, 4)
    assert _uses_fused_node(mlp, x)
    monkeypatch.setattr(fast, "FUSE_MLP", False)
    assert not _uses_fused_node(mlp, x)


# ------------------------------------------------------------------------------------------
# CriticEnsemble's fused node (_EnsembleMLP): the fused MLP maths per copy, same results
# ------------------------------------------------------------------------------------------


def _ensemble_roles(ens, obs, act, fuse, monkeypatch):
    """Outputs and gradients of the three ways SAC/TD3 call critics: with gradients for the
    parameters, with detached parameters (gradient for the action only), without grad."""
    monkeypatch.setattr(fast, "FUSE_MLP", fuse)
    act = act.detach().clone().requires_grad_()
    for p in ens.parameters():
        p.grad = None
    q_data = ens(obs, act)
    q_actor = ens(obs, act, detach=True)
    node = q_data.grad_fn
    while type(node).__name__ in ("ViewBackward0", "UnsafeViewBackward0", "TransposeBackward0"):
        node = node.next_functions[0][0]
    node = type(node).__name__
    weight = torch.linspace(-1.0, 2.0, q_data.numel(), dtype=q_data.dtype).view_as(q_data)
    ((q_data * weight).sum() + (q_actor.min(0).values ** 2).sum()).backward()
    with torch.no_grad():
        q_target = ens(obs, act)
    grads = {name: p.grad for name, p in ens.named_parameters()}
    return node, (q_data.detach(), q_actor.detach(), q_target, act.grad), grads


@pytest.mark.parametrize("activation", [nn.ReLU, nn.Tanh])
@pytest.mark.parametrize("num", [1, 2, 3])
@pytest.mark.parametrize("bias_last", [True, False])
def test_ensemble_fused_node_matches_layer_by_layer(activation, num, bias_last, monkeypatch):
    from rl_trainers.objectives import CriticEnsemble

    torch.manual_seed(num)
    template = MLP(4, 1, num_cells=[16, 8], activation_class=activation, bias_last_layer=bias_last)
    ens = CriticEnsemble(template, num).double()
    obs, act = torch.randn(5, 6, 3, dtype=torch.float64), torch.randn(5, 6, 1, dtype=torch.float64)
    node, outs, grads = _ensemble_roles(ens, obs, act, True, monkeypatch)
    assert node == "_EnsembleMLPBackward"
    plain_node, plain_outs, plain_grads = _ensemble_roles(ens, obs, act, False, monkeypatch)
    assert plain_node != node
    assert outs[0].shape == (num, 5, 6, 1)
    for a, b in zip(outs, plain_outs, strict=True):
        torch.testing.assert_close(a, b)
    assert grads.keys() == plain_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], plain_grads[name], msg=name)


def _count_onednn(monkeypatch) -> list:
    calls: list = []
    real = gemm._onednn_linear()
    monkeypatch.setattr(gemm, "USE_ONEDNN", True)  # whatever this CPU's default
    monkeypatch.setattr(gemm, "_LINEAR", lambda *args: calls.append(1) or real(*args))
    return calls


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN")
@pytest.mark.parametrize("activation", [nn.ReLU, nn.Tanh])
def test_sac_sized_networks_on_onednn_match_the_layer_by_layer_path(activation, monkeypatch):
    """256-wide float32 layers on a batch of 256 take oneDNN's products in the fused nodes
    (the plain path stays on torch's MKL): the same values and gradients."""
    from rl_trainers.objectives import CriticEnsemble

    torch.manual_seed(3)
    calls = _count_onednn(monkeypatch)
    actor = MLP(3, 2, num_cells=[256, 256], activation_class=activation)
    _check_matches_plain(actor, torch.randn(256, 3))
    assert len(calls) == 3  # the 256x256 layer: forward, weight and input gradients
    ens = CriticEnsemble(MLP(4, 1, num_cells=[256, 256], activation_class=activation), 2)
    obs, act = torch.randn(256, 3), torch.randn(256, 1)
    node, outs, grads = _ensemble_roles(ens, obs, act, True, monkeypatch)
    assert node == "_EnsembleMLPBackward" and len(calls) > 3
    _, plain_outs, plain_grads = _ensemble_roles(ens, obs, act, False, monkeypatch)
    for a, b in zip(outs, plain_outs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    for name in grads:
        torch.testing.assert_close(grads[name], plain_grads[name], rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN")
def test_wide_mlp_on_onednn_without_grad_and_on_strided_inputs(monkeypatch):
    """Acting and evaluation paths (no_grad, inference_mode) and a non-contiguous input take
    oneDNN's products too and give the layer-by-layer values."""
    torch.manual_seed(4)
    calls = _count_onednn(monkeypatch)
    mlp = MLP(6, 3, num_cells=[256, 256], activation_class=nn.ReLU)
    wide = torch.randn(64, 12)
    x = wide[:, ::2]  # a strided [64, 6] view
    expected = _plain(mlp, x).detach()
    with torch.no_grad():
        torch.testing.assert_close(mlp(x), expected, rtol=1e-5, atol=1e-5)
    with torch.inference_mode():
        torch.testing.assert_close(mlp(x), expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            mlp(x.reshape(4, 16, 6)), expected.reshape(4, 16, 3), rtol=1e-5, atol=1e-5
        )
    assert len(calls) == 3


def test_ensemble_fused_node_gradcheck_and_wide_output():
    from rl_trainers.fast.ensemble import _EnsembleMLP

    torch.manual_seed(0)
    acts, biases = (fused.ACT_TANH, fused.ACT_RELU, fused.ACT_NONE), (True, False, True)
    shapes = [(2, 6, 5), (2, 6), (2, 4, 6), (2, 3, 4), (2, 3)]  # last layer: 3 outputs
    params = [torch.randn(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    x = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, *p: _EnsembleMLP.apply(acts, biases, x, *p), (x, *params)
    )


def test_ensemble_falls_back_for_other_activations_and_hooks(monkeypatch):
    from rl_trainers.objectives import CriticEnsemble

    torch.manual_seed(1)
    obs, act = torch.randn(4, 3), torch.randn(4, 1)
    elu = CriticEnsemble(MLP(4, 1, num_cells=[8], activation_class=nn.ELU), 2)
    node, outs, _ = _ensemble_roles(elu, obs, act, True, monkeypatch)
    assert node != "_EnsembleMLPBackward"
    torch.testing.assert_close(outs[0], _ensemble_roles(elu, obs, act, False, monkeypatch)[1][0])
    relu = CriticEnsemble(MLP(4, 1, num_cells=[8], activation_class=nn.ReLU), 2)
    seen = []
    relu.acts[0].register_forward_hook(lambda m, i, o: seen.append(o.shape))
    node, _, _ = _ensemble_roles(relu, obs, act, True, monkeypatch)
    assert node != "_EnsembleMLPBackward" and seen[0] == (2, 4, 8)
