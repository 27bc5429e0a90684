"""``NoisyLazyLinear``: a NoisyLinear whose input size is read from its first call."""

from __future__ import annotations

import torch
from torch import nn

from rl_trainers.modules import MLP, NoisyLazyLinear, NoisyLinear, reset_noise


def test_first_call_sets_in_features_and_draws_parameters():
    torch.manual_seed(0)
    layer = NoisyLazyLinear(4, std_init=0.5)
    assert layer.weight is None and layer.bias is None
    layer.reset_noise()  # nothing to draw yet: no error
    out = layer(torch.randn(8, 3))
    assert out.shape == (8, 4)
    assert isinstance(layer, NoisyLinear) and isinstance(layer, NoisyLazyLinear)
    assert layer.in_features == 3
    assert layer.weight_mu.shape == layer.weight_sigma.shape == layer.weight_epsilon.shape == (4, 3)
    # NoisyLinear's initialisation: sigma = std_init / sqrt(fan), |mu| <= 1 / sqrt(in)
    assert torch.allclose(layer.weight_sigma, torch.full((4, 3), 0.5 / 3**0.5))
    assert torch.allclose(layer.bias_sigma, torch.full((4,), 0.5 / 4**0.5))
    assert layer.weight_mu.abs().max() <= 1 / 3**0.5
    assert layer.weight_epsilon.abs().sum() > 0  # noise drawn at materialisation


def test_forward_matches_the_noisy_formula_and_eval_uses_the_mean():
    torch.manual_seed(1)
    layer = NoisyLazyLinear(2)
    x = torch.randn(5, 6)
    out = layer(x)
    w = layer.weight_mu + layer.weight_sigma * layer.weight_epsilon
    b = layer.bias_mu + layer.bias_sigma * layer.bias_epsilon
    assert torch.allclose(out, x @ w.T + b)
    layer.eval()
    assert torch.allclose(layer(x), x @ layer.weight_mu.T + layer.bias_mu)


def test_reset_noise_through_apply_and_the_helper():
    torch.manual_seed(2)
    net = nn.Sequential(NoisyLazyLinear(8), nn.ReLU(), NoisyLinear(8, 2))
    net(torch.randn(1, 3))
    before = net[0].weight_epsilon.clone(), net[2].weight_epsilon.clone()
    net.apply(reset_noise)
    assert not torch.equal(before[0], net[0].weight_epsilon)
    assert not torch.equal(before[1], net[2].weight_epsilon)
    # factorised noise: eps_W = f(eps_out) f(eps_in)^T has rank one, eps_b = f(eps_out)
    eps = net[0].weight_epsilon
    assert torch.linalg.matrix_rank(eps) == 1
    ratio = eps[:, 0] / net[0].bias_epsilon
    assert torch.allclose(ratio, ratio[0].expand_as(ratio))


def test_no_bias_and_state_dict_round_trip():
    layer = NoisyLazyLinear(3, bias=False)
    layer(torch.randn(2, 5))
    assert layer.bias is None and layer.bias_mu is None
    ref = NoisyLinear(4, 3)
    lazy = NoisyLazyLinear(3)
    lazy.load_state_dict(ref.state_dict())
    assert lazy.in_features == 4
    x = torch.randn(2, 4)
    assert torch.allclose(lazy(x), ref(x))


def test_mlp_without_in_features_builds_noisy_lazy_layers():
    mlp = MLP(out_features=2, num_cells=[16, 16], layer_class=NoisyLinear)
    assert isinstance(mlp[0], NoisyLazyLinear)
    assert mlp(torch.randn(7, 5)).shape == (7, 2)
    assert mlp[0].in_features == 5
    eps = mlp[0].weight_epsilon.clone()
    mlp.apply(reset_noise)
    assert not torch.equal(eps, mlp[0].weight_epsilon)


def test_an_uninitialised_layer_can_be_deep_copied():
    # losses deep-copy value networks into target networks, possibly before any call
    import copy

    layer = NoisyLazyLinear(3)
    target = copy.deepcopy(layer)
    assert target(torch.randn(2, 4)).shape == (2, 3)
    assert target.weight_epsilon.shape == (3, 4) and target.bias_epsilon.shape == (3,)
    assert layer.weight is None  # the original is still uninitialised
