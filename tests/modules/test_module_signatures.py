"""torchrl's call forms of the networks and modules (ported scripts use them verbatim)."""

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_trainers.envs.specs import Bounded
from rl_trainers.modules import MLP, AdditiveGaussianModule, ConvNet, TanhModule, TanhNormal


def test_mlp_positional_order_and_layer_order_match_torchrl():
    # torchrl: (in, out, depth, num_cells, activation_class, activation_kwargs, norm_class,
    # norm_kwargs, dropout, ...); hidden blocks are Linear, Dropout, norm, activation
    mlp = MLP(4, 2, 1, 16, nn.ReLU, None, nn.LayerNorm, {"normalized_shape": 16}, 0.1)
    assert [type(m) for m in mlp] == [nn.Linear, nn.Dropout, nn.LayerNorm, nn.ReLU, nn.Linear]
    assert mlp.depth == 1 and mlp.out_features == 2
    assert mlp(torch.randn(3, 4)).shape == (3, 2)


def test_mlp_per_layer_kwargs_and_bias_in_layer_kwargs():
    mlp = MLP(
        in_features=4,
        out_features=(2, 3),
        num_cells=[8, 8],
        activation_class=nn.LeakyReLU,
        activation_kwargs=[{"negative_slope": 0.1}, {"negative_slope": 0.2}],
        layer_kwargs={"bias": False},
    )
    assert [m.negative_slope for m in mlp if isinstance(m, nn.LeakyReLU)] == [0.1, 0.2]
    assert all(m.bias is None for m in mlp if isinstance(m, nn.Linear))
    assert mlp.out_features == (2, 3)
    assert mlp(torch.randn(5, 4)).shape == (5, 2, 3)


def test_mlp_activate_last_layer_also_normalises():
    mlp = MLP(
        in_features=4,
        out_features=8,
        num_cells=[8],
        norm_class=nn.LayerNorm,
        norm_kwargs={"normalized_shape": 8},
        activate_last_layer=True,
    )
    assert sum(isinstance(m, nn.LayerNorm) for m in mlp) == 2


def test_convnet_takes_depth_from_kernel_list():
    net = ConvNet(num_cells=4, kernel_sizes=[8, 4], strides=[4, 2])
    assert sum(isinstance(m, nn.LazyConv2d | nn.Conv2d) for m in net) == 2
    assert net(torch.zeros(2, 3, 36, 36)).shape == (2, 4 * 3 * 3)


def test_tanh_module_torchrl_form_in_a_sequence():
    spec = Bounded(low=-2 * torch.ones(3), high=2 * torch.ones(3), shape=(3,))
    net = TensorDictModule(nn.Linear(4, 3), in_keys=["observation"], out_keys=["param"])
    actor = TensorDictSequential(net, TanhModule(in_keys=["param"], out_keys=["action"], spec=spec))
    td = actor(TensorDict({"observation": torch.randn(5, 4) * 100}, [5]))
    assert torch.allclose(td["action"], 2 * torch.tanh(td["param"]))
    assert actor.out_keys[-1] == "action"
    # the tensor form keeps working
    assert torch.equal(TanhModule(-3.0, 3.0)(torch.tensor([100.0])), torch.tensor([3.0]))


def test_additive_gaussian_safe_false_does_not_clamp():
    spec = Bounded(low=-torch.ones(2), high=torch.ones(2), shape=(2,))
    td = TensorDict({"action": torch.zeros(1000, 2)}, [1000])
    explore = AdditiveGaussianModule(spec=spec, sigma_init=1.0, sigma_end=1.0, safe=False)
    assert explore(td.clone())["action"].abs().max() > 1
    clamped = AdditiveGaussianModule(spec=spec, sigma_init=1.0, sigma_end=1.0, device="cpu")
    assert clamped(td.clone())["action"].abs().max() <= 1


def test_tanh_normal_min_max_names():
    dist = TanhNormal(torch.zeros(3), torch.ones(3), min=-2.0, max=2.0)
    assert torch.equal(dist.high, torch.tensor(2.0))
    assert dist.sample().abs().max() <= 2
