"""torchrl's keyword options of the losses and value estimators, as its examples pass them."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from rl_trainers.envs.specs import Bounded, Composite
from rl_trainers.modules import MLP, Actor, ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import (
    GAE,
    DDPGLoss,
    SACLoss,
    TD0Estimator,
    TD3Loss,
    TDLambdaEstimator,
)

SPEC = Bounded(-1.0, 1.0, torch.Size([2]))
E, T = 2, 5


def _trajectory():
    torch.manual_seed(0)
    return TensorDict(
        {
            "observation": torch.randn(E, T, 3),
            "next": {
                "observation": torch.randn(E, T, 3),
                "reward": torch.randn(E, T, 1),
                "done": torch.zeros(E, T, 1, dtype=torch.bool),
                "terminated": torch.zeros(E, T, 1, dtype=torch.bool),
            },
        },
        [E, T],
    )


def _critic():
    torch.manual_seed(1)
    return ValueOperator(MLP(in_features=3, out_features=1, num_cells=[8]), ["observation"])


def _qvalue():
    return ValueOperator(
        MLP(in_features=5, out_features=1, num_cells=[8]), ["observation", "action"]
    )


def _det_actor():
    return Actor(nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[8]), nn.Tanh()))


def test_gae_accepts_torchrl_implementation_options_with_the_same_result():
    critic = _critic()
    plain = GAE(gamma=0.99, lmbda=0.95, value_network=critic)(_trajectory())
    tuned = GAE(
        gamma=0.99,
        lmbda=0.95,
        value_network=critic,
        vectorized=True,
        shifted=True,
        deactivate_vmap=True,
        device="cpu",
        time_dim=-1,
        skip_existing=False,
    )(_trajectory(), params=None, target_params=None)
    torch.testing.assert_close(plain["advantage"], tuned["advantage"])
    with pytest.raises(NotImplementedError, match="params"):
        GAE(gamma=0.9, lmbda=0.9, value_network=critic)(_trajectory(), params=TensorDict())
    with pytest.raises(NotImplementedError, match="time_dim"):
        GAE(gamma=0.9, lmbda=0.9, value_network=critic, time_dim=0)


def test_skip_existing_uses_the_values_in_the_batch():
    td = _trajectory()
    td["state_value"] = torch.zeros(E, T, 1)
    td["next", "state_value"] = torch.zeros(E, T, 1)
    out = TD0Estimator(gamma=0.9, value_network=_critic(), skip_existing=True)(td)
    torch.testing.assert_close(out["value_target"], td["next", "reward"])


def test_average_rewards_standardises_the_rewards():
    td = _trajectory()
    td["next", "reward"] = td["next", "reward"] * 100 + 50
    td["state_value"] = torch.zeros(E, T, 1)
    td["next", "state_value"] = torch.zeros(E, T, 1)
    out = TDLambdaEstimator(gamma=0.0, lmbda=0.9, value_network=None, average_rewards=True)(td)
    target = out["value_target"]
    assert target.mean().abs() < 1e-4 and (target.std() - 1).abs() < 1e-4


def test_td3_and_ddpg_take_torchrl_keywords():
    loss = TD3Loss(
        actor_network=_det_actor(),
        qvalue_network=_qvalue(),
        action_spec=Composite(action=SPEC),
        separate_losses=True,
        reduction="mean",
        priority_key="priority",
        deactivate_vmap=False,
    )
    assert loss.loss_function == "smooth_l1"  # torchrl's default
    assert torch.equal(loss.high, SPEC.high)  # bounds read from the composite's action
    batch = TensorDict(
        {
            "observation": torch.randn(4, 3),
            "action": torch.zeros(4, 2),
            "next": {
                "observation": torch.randn(4, 3),
                "reward": torch.randn(4, 1),
                "done": torch.zeros(4, 1, dtype=torch.bool),
                "terminated": torch.zeros(4, 1, dtype=torch.bool),
            },
        },
        [4],
    )
    loss(batch)
    assert batch["priority"].shape == (4,)
    ddpg = DDPGLoss(_det_actor(), _qvalue(), separate_losses=False, reduction="mean")
    assert ddpg.loss_function == "l2"
    with pytest.raises(NotImplementedError, match="reduction"):
        TD3Loss(_det_actor(), _qvalue(), bounds=(-1, 1), reduction="sum")


def test_sac_defaults_and_composite_spec_follow_torchrl():
    net = nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[8]), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
    )
    loss = SACLoss(actor, _qvalue(), action_spec=Composite(action=SPEC), priority_key="p")
    assert loss.loss_function == "smooth_l1"
    assert loss.target_entropy == -2.0
    assert loss.priority_key == "p"


def _prob_actor():
    net = nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[8]), NormalParamExtractor())
    return ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )


def test_policy_gradient_losses_take_torchrl_keywords():
    from rl_trainers.objectives import ClipPPOLoss, KLPENPPOLoss, ReinforceLoss

    kl = KLPENPPOLoss(_prob_actor(), _critic(), samples_mc_kl=1, increment=2, decrement=0.5)
    assert kl.samples_mc_kl == 1
    reinforce = ReinforceLoss(_prob_actor(), _critic(), delay_value=False, gamma=0.99)
    assert reinforce.critic_network is not None
    with pytest.raises(NotImplementedError, match="delay_value"):
        ReinforceLoss(_prob_actor(), _critic(), delay_value=True)
    ppo = ClipPPOLoss(_prob_actor(), _critic(), entropy_coef={"action": 0.02})
    assert float(ppo.entropy_coef) == pytest.approx(0.02)
    with pytest.raises(NotImplementedError, match="composite"):
        ClipPPOLoss(_prob_actor(), _critic(), entropy_coef={"a": 0.1, "b": 0.2})


def test_ppo_and_sac_move_to_the_device_they_are_given():
    """torchrl's ``device=`` puts every parameter and buffer of the loss there (the meta
    device stands in for an accelerator: it moves without one)."""
    from rl_trainers.objectives import ClipPPOLoss, KLPENPPOLoss

    for loss in (
        ClipPPOLoss(_prob_actor(), _critic(), device="meta"),
        KLPENPPOLoss(_prob_actor(), _critic(), device="meta"),
        SACLoss(_prob_actor(), _qvalue(), device="meta"),
    ):
        tensors = [*loss.parameters(), *loss.buffers()]
        assert tensors and all(t.device.type == "meta" for t in tensors), type(loss).__name__
    assert all(p.device.type == "cpu" for p in SACLoss(_prob_actor(), _qvalue()).parameters())


def test_gae_runs_a_sequence_of_tensordict_modules_as_critic():
    from rl_trainers.modules import SafeSequential

    critic = _critic()
    single = SafeSequential(critic)
    plain = GAE(gamma=0.9, lmbda=0.9, value_network=critic)(_trajectory())
    seq = GAE(gamma=0.9, lmbda=0.9, value_network=single)(_trajectory())
    torch.testing.assert_close(plain["advantage"], seq["advantage"])


def test_losses_take_tensordict_sequences_as_actor_and_critic():
    from tensordict.nn import TensorDictSequential

    critic = TensorDictSequential(_qvalue())
    actor = TensorDictSequential(_det_actor())
    batch = TensorDict(
        {
            "observation": torch.randn(4, 3),
            "action": torch.zeros(4, 2),
            "next": {
                "observation": torch.randn(4, 3),
                "reward": torch.randn(4, 1),
                "done": torch.zeros(4, 1, dtype=torch.bool),
            },
        },
        [4],
    )
    td3 = TD3Loss(actor, critic, bounds=(-1.0, 1.0))
    out = td3(batch.clone())
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    sac = SACLoss(_prob_actor(), critic)
    out = sac(batch.clone())
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    grads = [p.grad for p in sac.qvalue_network_params.values(True, True)]
    assert grads and all(g is not None for g in grads)


def test_off_policy_losses_refuse_estimators_they_would_ignore():
    from rl_trainers.objectives import ValueEstimators

    loss = SACLoss(_prob_actor(), _qvalue())
    loss.make_value_estimator(ValueEstimators.TD0, gamma=0.9)
    loss.make_value_estimator("td0", gamma=0.8)
    assert loss.gamma == pytest.approx(0.8)
    with pytest.raises(NotImplementedError, match="TD0"):
        loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.9, lmbda=0.9)
    with pytest.raises(NotImplementedError, match="TD0"):
        TD3Loss(_det_actor(), _qvalue(), bounds=(-1, 1)).make_value_estimator(ValueEstimators.GAE)


def test_action_log_prob_key_round_trip_through_actor_and_ppo():
    from tensordict.nn import InteractionType, set_interaction_type

    from rl_trainers.objectives import ClipPPOLoss

    net = nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[8]), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
        log_prob_key="action_log_prob",
    )
    with set_interaction_type(InteractionType.RANDOM):
        batch = actor(TensorDict({"observation": torch.randn(6, 3)}, [6])).detach()
    assert "action_log_prob" in batch.keys() and "sample_log_prob" not in batch.keys()
    batch["advantage"] = torch.randn(6, 1)
    loss = ClipPPOLoss(actor, entropy_bonus=False).set_keys(sample_log_prob="action_log_prob")
    out = loss(batch)
    assert out["kl_approx"].abs() < 1e-5  # same policy: ratio 1
