"""Model builders: env specs + a network description -> policy or critic, encoder in front."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.envs.specs import Bounded, Composite, OneHot, Unbounded
from rl_trainers.modules import (
    ConvNet,
    EncodedQValueNet,
    PolicyKindError,
    TanhNormal,
    activation_from_name,
    encoded_size,
    make_categorical_model,
    make_convnet,
    make_deterministic_model,
    make_policy_model,
    make_qvalue_model,
    make_tanh_normal_model,
    make_value_model,
)

STATE_OBS = Composite(observation=Unbounded(shape=(5, 3)), shape=(5,))
PIXEL_OBS = Composite(
    observation=Unbounded(shape=(5, 3)),
    pixels=Bounded(0.0, 1.0, shape=(5, 4, 84, 84)),
    shape=(5,),
)
BOX = Bounded(low=-2.0, high=2.0, shape=(5, 1))
DISCRETE = OneHot(3, shape=(5, 3))
MLP_NET = {
    "policy": {"num_cells": [16], "activation": "tanh"},
    "value": {"num_cells": [8, 8], "activation": "relu"},
    "encoder": None,
}
CONV_NET = {**MLP_NET, "encoder": {"num_cells": [8, 8], "kernel_sizes": [8, 4], "strides": [4, 2]}}


def _linears(module):
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def test_make_convnet_defaults_are_the_nature_torso():
    net = make_convnet(in_features=4)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 64, 64]
    assert [c.kernel_size for c in convs] == [(8, 8), (4, 4), (3, 3)]
    assert [c.stride for c in convs] == [(4, 4), (2, 2), (1, 1)]
    assert convs[0].in_channels == 4
    assert any(isinstance(m, torch.nn.ReLU) for m in net)
    assert net(torch.zeros(2, 4, 84, 84)).shape == (2, 64 * 7 * 7)


def test_encoded_size_reads_the_spec_shape():
    assert encoded_size(make_convnet(in_features=4), PIXEL_OBS) == 64 * 7 * 7
    with pytest.raises(KeyError, match="from_pixels"):
        encoded_size(make_convnet(), STATE_OBS)


def test_mlp_models_read_observation_with_the_networks_widths():
    actor = make_policy_model(STATE_OBS, BOX, MLP_NET)
    assert actor.in_keys == ["observation"]
    assert [(m.in_features, m.out_features) for m in _linears(actor)] == [(3, 16), (16, 2)]
    critic = make_value_model(STATE_OBS, BOX, MLP_NET)
    assert [m.out_features for m in _linears(critic)] == [8, 8, 1]
    q = make_qvalue_model(STATE_OBS, BOX, MLP_NET)
    assert _linears(q)[0].in_features == 3 + 1


def test_encoder_models_read_pixels_and_q_concatenates_the_action():
    td = TensorDict(pixels=torch.rand(5, 4, 84, 84), action=torch.zeros(5, 1), batch_size=[5])
    features = 8 * 9 * 9  # 84 -> 20 -> 9 with kernels 8/4 and strides 4/2
    actor = make_tanh_normal_model(PIXEL_OBS, BOX, CONV_NET)
    assert actor.in_keys == ["pixels"]
    assert isinstance(actor.get_dist(td.clone()), TanhNormal)
    assert _linears(actor)[0].in_features == features
    assert any(isinstance(m, ConvNet) for m in actor.modules())
    value = make_value_model(PIXEL_OBS, BOX, CONV_NET)
    assert value(td.clone())["state_value"].shape == (5, 1)
    q = make_qvalue_model(PIXEL_OBS, BOX, CONV_NET)
    assert q.in_keys == ["pixels", "action"]
    assert isinstance(q.module, EncodedQValueNet)
    assert _linears(q)[0].in_features == features + 1
    assert q(td.clone())["state_action_value"].shape == (5, 1)
    # the policy and the critic have encoders of their own
    assert actor.module is not value.module


def test_dataclass_network_nodes_are_accepted():
    from rl_trainers.configs import ConvActorCriticNetworkConfig

    actor = make_categorical_model(PIXEL_OBS, DISCRETE, ConvActorCriticNetworkConfig())
    assert _linears(actor)[0].in_features == 64 * 7 * 7


def test_forced_policy_kinds_name_what_fits():
    with pytest.raises(PolicyKindError, match="continuous actions") as info:
        make_categorical_model(STATE_OBS, BOX, MLP_NET)
    assert (info.value.kind, info.value.fits) == ("categorical", "tanh_normal or auto")
    with pytest.raises(PolicyKindError, match="discrete actions") as info:
        make_tanh_normal_model(STATE_OBS, DISCRETE, MLP_NET)
    assert (info.value.kind, info.value.fits) == ("tanh_normal", "categorical or auto")


def test_encoder_without_pixels_and_unknown_activation_are_clear_errors():
    with pytest.raises(ValueError, match="from_pixels=True"):
        make_policy_model(STATE_OBS, BOX, CONV_NET)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        activation_from_name("swish")


def test_deterministic_model_acts_within_the_bounds_with_the_policy_layers():
    actor = make_deterministic_model(STATE_OBS, BOX, MLP_NET)
    linears = [m for m in actor.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(3, 16), (16, 1)]
    td = TensorDict(observation=torch.randn(5, 3) * 100, batch_size=[5])
    action = actor(td)["action"]
    assert action.shape == (5, 1) and action.abs().max() <= 2.0
    assert torch.equal(actor(td.clone())["action"], action)  # deterministic
    with pytest.raises(PolicyKindError, match="discrete actions"):
        make_deterministic_model(STATE_OBS, DISCRETE, MLP_NET)


def test_clamped_log_std_extractor_is_sb3s_sac_scale():
    """exp(clamp(log_std, -20, 2)) with no gradient past the bounds; the location is the
    first half, untouched."""
    from rl_trainers.modules import ClampedLogStdExtractor

    x = torch.tensor([[0.3, -1.0, 0.5, -30.0, 5.0, -1.0]], requires_grad=True)
    loc, scale = ClampedLogStdExtractor()(x)
    torch.testing.assert_close(loc, x[:, :3])
    torch.testing.assert_close(
        scale, torch.tensor([[math.exp(-20.0), math.exp(2.0), math.exp(-1.0)]])
    )
    scale.sum().backward()
    torch.testing.assert_close(x.grad[0, 3:], torch.tensor([0.0, 0.0, math.exp(-1.0)]))
    with pytest.raises(ValueError, match="log_std_min"):
        ClampedLogStdExtractor(2.0, -20.0)


def test_an_unknown_scale_mapping_names_the_ones_there_are():
    from rl_trainers.modules.builders import scale_extractor

    with pytest.raises(ValueError, match="unknown scale mapping 'tanh': use clamped_exp"):
        scale_extractor("tanh")
