import pytest
import torch
from torch import nn

from rl_trainers.modules import MLP, ConvNet, DuelingCnnDQNet


def test_mlp_lazy_input_and_hidden_sizes():
    mlp = MLP(out_features=3, num_cells=[16, 8])
    out = mlp(torch.zeros(5, 7, 4))
    assert out.shape == (5, 7, 3)
    linears = [m for m in mlp if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(4, 16), (16, 8), (8, 3)]


def test_mlp_depth_int_cells_and_concatenated_inputs():
    mlp = MLP(in_features=5, out_features=1, depth=2, num_cells=32, activation_class=nn.ReLU)
    assert mlp.num_cells == [32, 32]
    assert mlp(torch.zeros(4, 3), torch.zeros(4, 2)).shape == (4, 1)
    assert sum(isinstance(m, nn.ReLU) for m in mlp) == 2


def test_mlp_activate_last_layer_and_errors():
    mlp = MLP(
        in_features=2,
        out_features=2,
        num_cells=[4],
        activation_class=nn.Sigmoid,
        activate_last_layer=True,
    )
    out = mlp(torch.randn(10, 2) * 100)
    assert ((out >= 0) & (out <= 1)).all()
    with pytest.raises(ValueError, match="depth"):
        MLP(out_features=2, num_cells=8)
    with pytest.raises(ValueError, match="out_features"):
        MLP(num_cells=[8])


def test_convnet_lazy_channels_and_leading_dims():
    net = ConvNet(num_cells=[4, 8], kernel_sizes=[3, 3], strides=[2, 1], activation_class=nn.ELU)
    out = net(torch.zeros(2, 3, 5, 16, 16))
    # 16 -> (16-3)//2+1 = 7 -> 7-3+1 = 5; flattened 8*5*5
    assert out.shape == (2, 3, 8 * 5 * 5)


def test_dueling_net_seed_signature():
    cnn_kwargs = {
        "num_cells": [4, 8],
        "kernel_sizes": [6, 4],
        "strides": [2, 2],
        "activation_class": nn.ELU,
    }
    mlp_kwargs = {"depth": 2, "num_cells": [16, 16], "activation_class": nn.ELU}
    net = DuelingCnnDQNet(2, 1, cnn_kwargs, mlp_kwargs)
    x = torch.randn(3, 4, 32, 32)
    q = net(x)
    assert q.shape == (3, 2)
    h = net.features(x)
    adv = net.advantage(h)
    expected = net.value(h) + adv - adv.mean(-1, keepdim=True)
    torch.testing.assert_close(q, expected)


def test_mlp_casts_bool_and_integer_inputs():
    """A Discrete observation arrives one-hot as bool (MultiBinary as int8): the MLP
    computes on its float value instead of failing on the dtype."""
    torch.manual_seed(0)
    mlp = MLP(in_features=4, out_features=2, num_cells=[8])
    one_hot = torch.eye(4, dtype=torch.bool)[[0, 2, 3]]
    expected = mlp(one_hot.float())
    torch.testing.assert_close(mlp(one_hot), expected)
    torch.testing.assert_close(mlp(one_hot.to(torch.int8)), expected)
