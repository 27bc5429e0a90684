"""The network and model groups: every option composes and builds, sizes follow the env, and
a network or policy that does not fit the env is a short ConfigError."""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from rl_trainers.algorithms.base import build_actor_critic, check_network_fits_env
from rl_trainers.errors import ConfigError
from rl_trainers.modules import IndependentNormal, TanhNormal
from rl_trainers.modules.distributions import Categorical, OneHotCategorical

from .conftest import compose_config

PIXELS = ["env.from_pixels=true", "network=convnet", "env.num_envs=2"]


def _build(algorithm: str, overrides: list[str]):
    cfg = compose_config(algorithm, overrides)
    check_network_fits_env(cfg)
    env = instantiate(cfg.env)
    actor, critic = build_actor_critic(cfg, env)
    return env, actor, critic


def _first(module: torch.nn.Module, kind: type) -> torch.nn.Module:
    return next(m for m in module.modules() if isinstance(m, kind))


@pytest.mark.parametrize(
    ("algorithm", "overrides", "dist_class"),
    [
        ("ppo", ["env=cartpole"], (OneHotCategorical, Categorical)),
        ("ppo", ["env=cartpole", "model/policy=categorical"], (OneHotCategorical, Categorical)),
        ("ppo", ["env=pendulum"], TanhNormal),
        ("ppo", ["env=pendulum", "model/policy=tanh_normal"], TanhNormal),
        ("sac", [], TanhNormal),
        (
            "sac",
            ["model/policy=tanh_normal", "model.policy.state_dependent_scale=false"],
            TanhNormal,
        ),
        ("ppo", ["env=cartpole", *PIXELS], (OneHotCategorical, Categorical)),
        ("sac", PIXELS, TanhNormal),
    ],
)
def test_every_model_option_composes_builds_and_acts(algorithm, overrides, dist_class):
    env, actor, critic = _build(algorithm, ["env.num_envs=2", *overrides])
    try:
        td = actor(env.reset())
        assert td["action"].shape == env.action_spec.shape
        assert isinstance(actor.get_dist(td), dist_class)
        out = critic(td)
        key = "state_value" if algorithm == "ppo" else "state_action_value"
        assert out[key].shape == (2, 1)
    finally:
        env.close()


def test_unbounded_actions_under_auto_get_a_gaussian_and_tanh_normal_squashes():
    from rl_trainers.envs.specs import Composite, Unbounded
    from rl_trainers.modules import make_policy_model, make_tanh_normal_model

    obs = Composite(observation=Unbounded(shape=(3,)))
    network = compose_config("ppo").network
    td = obs.zero()
    auto = make_policy_model(obs, Unbounded(shape=(2,)), network)
    assert isinstance(auto.get_dist(td), IndependentNormal)
    forced = make_tanh_normal_model(obs, Unbounded(shape=(2,)), network)
    assert isinstance(forced.get_dist(td), TanhNormal)


def test_default_networks_are_unchanged_by_the_network_group():
    ppo, sac = compose_config("ppo").network, compose_config("sac").network
    assert list(ppo.policy.num_cells) == [64, 64] and ppo.policy.activation == "tanh"
    assert ppo.orthogonal_init and ppo.encoder is None
    for mlp in (sac.policy, sac.value):
        assert list(mlp.num_cells) == [256, 256] and mlp.activation == "relu"
    assert not sac.orthogonal_init and sac.encoder is None
    conv = compose_config("sac", ["network=convnet"]).network
    assert list(conv.policy.num_cells) == [256, 256] and not conv.orthogonal_init
    assert list(conv.encoder.num_cells) == [32, 64, 64]
    assert list(conv.encoder.kernel_sizes) == [8, 4, 3] and list(conv.encoder.strides) == [4, 2, 1]


@pytest.mark.parametrize(("env", "size"), [("cartpole", 4), ("acrobot", 6)])
def test_network_input_size_follows_the_env(env, size):
    built, actor, critic = _build("ppo", [f"env={env}", "env.num_envs=2"])
    built.close()
    assert _first(actor, torch.nn.Linear).in_features == size
    assert _first(critic, torch.nn.Linear).in_features == size


@pytest.mark.parametrize(
    ("overrides", "channels"),
    [([], 4), (["env.grayscale=false", "env.frame_stack=2"], 6)],
)
def test_encoder_input_channels_follow_the_pixel_settings(overrides, channels):
    env, actor, critic = _build("sac", [*PIXELS, "env.image_size=64", *overrides])
    try:
        assert env.observation_spec["pixels"].shape == (2, channels, 64, 64)
        for model in (actor, critic):
            assert _first(model, torch.nn.Conv2d).in_channels == channels
        # Nature torso on 64x64: 15x15 -> 6x6 -> 4x4, 64 channels; Q's head adds the action
        assert _first(actor, torch.nn.Linear).in_features == 64 * 4 * 4
        assert _first(critic, torch.nn.Linear).in_features == 64 * 4 * 4 + 1
    finally:
        env.close()


@pytest.mark.parametrize(
    ("algorithm", "overrides", "expected"),
    [
        (
            "ppo",
            ["env=pendulum", "model/policy=categorical"],
            "model.policy='categorical' is invalid: Pendulum-v1 has continuous actions; "
            "use model/policy=tanh_normal or auto",
        ),
        (
            "sac",
            ["model/policy=categorical"],
            "model.policy='categorical' is invalid: Pendulum-v1 has continuous actions; "
            "use model/policy=tanh_normal or auto",
        ),
        (
            "ppo",
            ["env=cartpole", "model/policy=tanh_normal"],
            "model.policy='tanh_normal' is invalid: CartPole-v1 has discrete actions; "
            "use model/policy=categorical or auto",
        ),
    ],
)
def test_a_policy_kind_that_does_not_fit_is_a_short_error(algorithm, overrides, expected):
    with pytest.raises(ConfigError) as info:
        _build(algorithm, ["env.num_envs=2", *overrides])
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["env.from_pixels=true"], ["env.from_pixels=True", "add network=convnet"]),
        (["network=convnet"], ["network='convnet'", "add env.from_pixels=true"]),
    ],
)
def test_pixels_and_the_convnet_encoder_go_together(overrides, words):
    with pytest.raises(ConfigError) as info:
        check_network_fits_env(compose_config("ppo", overrides))
    for word in words:
        assert word in str(info.value)


def test_a_pixel_replay_buffer_that_cannot_fit_in_ram_is_refused():
    from rl_trainers.algorithms.sac import check_buffer_fits_memory

    cfg = compose_config("sac", PIXELS)
    env = instantiate(cfg.env)
    try:
        with pytest.raises(ConfigError) as info:
            check_buffer_fits_memory(cfg, env)  # 1M transitions of ~220 KiB
        assert "replay_buffer.size=1000000 is invalid" in str(info.value)
        assert "KiB per transition" in str(info.value)
        cfg.replay_buffer.size = 1000
        check_buffer_fits_memory(cfg, env)
    finally:
        env.close()


@pytest.mark.parametrize("log_std_init", [-2.0, 0.5])
def test_log_std_init_sets_the_initial_state_independent_scale(log_std_init):
    overrides = [
        "env=pendulum",
        "env.num_envs=2",
        "model/policy=tanh_normal",
        "model.policy.state_dependent_scale=false",
        f"model.policy.log_std_init={log_std_init}",
    ]
    env, actor, _ = _build("ppo", overrides)
    try:
        scale = actor(env.reset())["scale"]
        expected = torch.full_like(scale, torch.tensor(log_std_init).exp().item())
        torch.testing.assert_close(scale, expected)
    finally:
        env.close()


@pytest.mark.parametrize(
    "overrides",
    [
        ["env.num_envs=2", "model/policy=tanh_normal", "model.policy.scale_mapping=clamped_exp"],
        ["experiment=sac_halfcheetah", "env=hopper", "env.num_envs=2"],  # the MuJoCo preset's
    ],
)
def test_sb3s_clamped_log_std_scale_mapping_builds_sb3s_sac_actor(overrides):
    from rl_trainers.modules import ClampedLogStdExtractor

    env, actor, _ = _build("sac", overrides)
    try:
        extractor = _first(actor, ClampedLogStdExtractor)
        assert (extractor.log_std_min, extractor.log_std_max) == (-20.0, 2.0)
        td = actor(env.reset())
        assert td["action"].shape == env.action_spec.shape
        log_std = actor.module.module[0](td["observation"]).chunk(2, -1)[1]
        torch.testing.assert_close(td["scale"], log_std.clamp(-20, 2).exp())
    finally:
        env.close()


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (
            ["model.policy.scale_mapping=tanh"],
            ["model.policy.scale_mapping='tanh' is invalid", "clamped_exp", "biased_softplus"],
        ),
        (
            ["model.policy.scale_mapping=clamped_exp", "model.policy.state_dependent_scale=false"],
            ["model.policy.scale_mapping='clamped_exp' is invalid", "state-dependent scale"],
        ),
    ],
)
def test_a_scale_mapping_that_cannot_apply_is_a_short_error(overrides, words):
    with pytest.raises(ConfigError) as info:
        _build("sac", ["env.num_envs=2", "model/policy=tanh_normal", *overrides])
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (
            "rl_trainers.modules.make_no_such_model",
            "Are you sure that 'make_no_such_model' is importable from module "
            "'rl_trainers.modules'?",
        ),
        ("no_such_package.make_policy", "Are you sure that module 'no_such_package' is installed?"),
        ("rl_trainers.modules", "Expected a callable target, got '<module 'rl_trainers.modules'"),
    ],
)
def test_a_model_target_that_cannot_be_imported_or_called_is_one_line(target, words):
    """A user's own builder named by ``model.policy._target_`` that Hydra cannot import (or
    that names a module) is one line saying what to give."""
    with pytest.raises(ConfigError) as err:
        _build("ppo", ["env=pendulum", f"model.policy._target_={target}"])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"could not build 'model.policy': _target_='{target}' is not a function or class "
        "that can be imported ("
    )
    assert words in message
    assert message.endswith(
        "; name one as package.module.name, its module importable where the run starts "
        "(on PYTHONPATH or in the working directory)"
    )


def make_critic_without_biases(observation_spec, action_spec, network):
    """A user's own V(s) builder whose hidden layer has no bias."""
    from torch import nn

    from rl_trainers.modules import ValueOperator

    n_obs = observation_spec["observation"].shape[-1]
    net = nn.Sequential(nn.Linear(n_obs, 16, bias=False), nn.Tanh(), nn.Linear(16, 1))
    return ValueOperator(net, in_keys=["observation"])


def test_orthogonal_init_of_a_users_own_network_without_biases():
    """``network.orthogonal_init`` (PPO's default) initialises a user's own critic named by
    ``model.critic._target_``, a layer without a bias included, and it builds."""
    target = f"{__name__}.make_critic_without_biases"
    env, _, critic = _build("ppo", ["env=pendulum", f"model.critic._target_={target}"])
    try:
        first, last = [m for m in critic.modules() if isinstance(m, torch.nn.Linear)]
        assert first.bias is None
        torch.testing.assert_close(first.weight.T @ first.weight, 2.0 * torch.eye(3))  # gain √2
        assert (last.bias == 0).all()
        assert critic(env.reset())["state_value"].shape == (env.batch_size[0], 1)
    finally:
        env.close()
