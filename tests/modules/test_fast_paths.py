"""The hot-path shortcuts (issue 5) compute exactly what the plain paths compute."""

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.envs.specs import OneHot, Unbounded
from rl_trainers.modules import MLP, FastTanh, OneHotCategorical, ProbabilisticActor, make_actor


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
