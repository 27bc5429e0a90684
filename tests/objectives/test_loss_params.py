"""torchrl's loss attributes a ported script reads: ``loss.out_keys`` and the
``loss.<name>_network_params`` TensorDicts it builds optimisers from."""

import copy
import pickle

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from rl_trainers.envs.specs import Bounded, OneHot
from rl_trainers.modules import (
    MLP,
    Actor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import (
    A2CLoss,
    ClipPPOLoss,
    DDPGLoss,
    DQNLoss,
    HardUpdate,
    KLPENPPOLoss,
    PPOLoss,
    ReinforceLoss,
    SACLoss,
    SoftUpdate,
    TD3Loss,
)

B = 8
SPEC = Bounded(-1.0, 1.0, torch.Size([2]))


def _batch(action=None):
    return TensorDict(
        {
            "observation": torch.randn(B, 3),
            "action": torch.rand(B, 2) * 2 - 1 if action is None else action,
            "sample_log_prob": torch.randn(B),
            "next": {
                "observation": torch.randn(B, 3),
                "reward": torch.randn(B, 1),
                "done": torch.zeros(B, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        [B],
    )


def _actor():
    net = nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[8]), NormalParamExtractor())
    return ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=SPEC,
        distribution_class=TanhNormal,
        return_log_prob=True,
    )


def _qvalue():
    return ValueOperator(
        MLP(in_features=5, out_features=1, num_cells=[8]), in_keys=["observation", "action"]
    )


def _value():
    return ValueOperator(MLP(in_features=3, out_features=1, num_cells=[8]), ["observation"])


def _det_actor():
    return Actor(nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[8]), nn.Tanh()))


def _leaves(params):
    return list(params.flatten_keys().values())


def test_sac_optimisers_from_params_tensordicts_train_the_networks():
    actor = _actor()
    loss = SACLoss(actor, _qvalue(), num_qvalue_nets=2)
    critic_params = _leaves(loss.qvalue_network_params)
    actor_params = _leaves(loss.actor_network_params)
    assert all(isinstance(p, nn.Parameter) for p in critic_params + actor_params)
    assert {id(p) for p in actor_params} == {id(p) for p in actor.parameters()}
    assert critic_params[0].shape[0] == 2  # stacked over the critics, as in torchrl
    opt_actor = torch.optim.Adam(actor_params, lr=1e-2)
    opt_critic = torch.optim.Adam(critic_params, lr=1e-2)
    weight = actor.module.module[0][0].weight
    before_actor, before_critic = weight.detach().clone(), critic_params[0].detach().clone()
    out = loss(_batch())
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    opt_actor.step()
    opt_critic.step()
    assert not torch.equal(before_actor, weight.detach())
    assert not torch.equal(before_critic, loss.qvalue_network_params.weight0.detach())


def test_target_params_read_as_tensordicts_and_follow_the_updaters():
    loss = SACLoss(_actor(), _qvalue())
    target = loss.target_qvalue_network_params
    online = loss.qvalue_network_params
    assert list(target.flatten_keys().keys()) == list(online.flatten_keys().keys())
    with torch.no_grad():
        for p in online.values(True, True):
            p.add_(1.0)
    before = target.clone()
    SoftUpdate(loss, tau=0.5).step()
    for key, old in before.items(True, True):
        new, src = target.params_td()[key], online.params_td()[key]
        assert torch.allclose(new, 0.5 * old + 0.5 * src)


def test_td3_ddpg_and_dqn_params_attributes():
    td3 = TD3Loss(_det_actor(), _qvalue(), action_spec=SPEC)
    assert len(_leaves(td3.actor_network_params)) == 4
    assert len(_leaves(td3.qvalue_network_params)) == 4
    assert len(_leaves(td3.target_actor_network_params)) == 4
    ddpg = DDPGLoss(_det_actor(), _qvalue(), delay_actor=True)
    assert _leaves(ddpg.value_network_params) == _leaves(ddpg.qvalue_network_params)
    assert len(_leaves(ddpg.target_value_network_params)) == 4
    qnet = QValueActor(MLP(in_features=3, out_features=4, num_cells=[8]), spec=OneHot(4))
    dqn = DQNLoss(qnet, action_space="one_hot")
    assert {id(p) for p in _leaves(dqn.value_network_params)} == {id(p) for p in qnet.parameters()}
    target = dqn.target_value_network_params
    with torch.no_grad():
        for p in qnet.parameters():
            p.add_(1.0)
    HardUpdate(dqn, value_network_update_interval=1).step()
    for key, value in target.flatten_keys().items():
        assert torch.equal(value, dqn.value_network_params.flatten_keys()[key])


def test_losses_with_target_views_still_copy_and_pickle():
    for loss in (
        TD3Loss(_det_actor(), _qvalue(), action_spec=SPEC),
        DQNLoss(QValueActor(nn.Linear(3, 4), spec=OneHot(4)), action_space="one_hot"),
    ):
        for clone in (copy.deepcopy(loss), pickle.loads(pickle.dumps(loss))):
            assert clone.state_dict().keys() == loss.state_dict().keys()
            name = next(
                n
                for n in ("target_actor_network_params", "target_value_network_params")
                if hasattr(clone, n)
            )
            assert len(_leaves(getattr(clone, name))) > 0


def _categorical_actor():
    return ProbabilisticActor(
        TensorDictModule(
            MLP(in_features=3, out_features=2, num_cells=[8]), ["observation"], ["logits"]
        ),
        in_keys=["logits"],
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: ClipPPOLoss(_actor(), _value()),
        lambda: ClipPPOLoss(_actor(), _value(), entropy_bonus=False, log_explained_variance=False),
        lambda: ClipPPOLoss(_categorical_actor(), _value(), log_explained_variance=False),
        lambda: PPOLoss(_actor(), _value()),
        lambda: KLPENPPOLoss(_actor(), _value()),
        lambda: A2CLoss(_actor(), _value()),
        lambda: ReinforceLoss(_actor(), _value()),
        lambda: SACLoss(_actor(), _qvalue()),
        lambda: TD3Loss(_det_actor(), _qvalue(), action_spec=SPEC),
        lambda: DDPGLoss(_det_actor(), _qvalue()),
    ],
)
def test_out_keys_are_the_entries_forward_writes(make):
    loss = make()
    action = None
    if isinstance(loss, ClipPPOLoss) and loss.actor_network.distribution_class is OneHotCategorical:
        action = torch.nn.functional.one_hot(torch.randint(2, (B,)), 2).float()
    batch = _batch(action)
    batch["advantage"] = torch.randn(B, 1)
    batch["value_target"] = torch.randn(B, 1)
    assert sorted(loss(batch).keys()) == sorted(loss.out_keys)


def test_dqn_out_keys_and_ppo_critic_params():
    qnet = QValueActor(nn.Linear(3, 4), spec=OneHot(4))
    dqn = DQNLoss(qnet, action_space="one_hot")
    action = torch.nn.functional.one_hot(torch.randint(4, (B,)), 4)
    assert sorted(dqn(_batch(action)).keys()) == sorted(dqn.out_keys)
    value = _value()
    ppo = ClipPPOLoss(_actor(), value)
    assert {id(p) for p in _leaves(ppo.critic_network_params)} == {
        id(p) for p in value.parameters()
    }
    assert ClipPPOLoss(_actor()).critic_network_params is None


def test_group_optimizers_steps_every_group_with_its_own_lr():
    from rl_trainers.objectives import group_optimizers

    loss = SACLoss(_actor(), _qvalue())
    actor_opt = torch.optim.Adam(_leaves(loss.actor_network_params), lr=1e-3)
    critic_opt = torch.optim.Adam(_leaves(loss.qvalue_network_params), lr=1e-2)
    alpha_opt = torch.optim.Adam([loss.log_alpha], lr=0.5)
    optim = group_optimizers(actor_opt, critic_opt, alpha_opt)
    assert [g["lr"] for g in optim.param_groups] == [1e-3, 1e-2, 0.5]
    before = loss.log_alpha.detach().clone()
    out = loss(_batch())
    (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
    optim.step()
    assert not torch.equal(before, loss.log_alpha.detach())
    with pytest.raises(ValueError, match="different type"):
        group_optimizers(actor_opt, torch.optim.SGD([loss.log_alpha], lr=0.1))


def test_select_out_keys_restricts_the_output():
    loss = SACLoss(_actor(), _qvalue())
    assert loss.select_out_keys("loss_actor", "loss_qvalue") is loss
    assert loss.out_keys == ["loss_actor", "loss_qvalue"]
    assert sorted(loss(_batch()).keys()) == ["loss_actor", "loss_qvalue"]
    with pytest.raises(ValueError, match="does not write"):
        loss.select_out_keys("pred_value")


def test_hold_out_net_freezes_a_network_inside_the_block():
    from rl_trainers.objectives import hold_out_net

    critic = nn.Linear(3, 1)
    critic.bias.requires_grad_(False)
    x = torch.randn(4, 3, requires_grad=True)
    with hold_out_net(critic):
        critic(x).sum().backward()
    assert critic.weight.grad is None and x.grad is not None
    assert critic.weight.requires_grad and not critic.bias.requires_grad


@pytest.mark.parametrize(
    "make",
    [
        lambda: SACLoss(_actor(), _qvalue()),
        lambda: TD3Loss(_det_actor(), _qvalue(), action_spec=SPEC),
        lambda: DQNLoss(QValueActor(nn.Linear(3, 4), spec=OneHot(4)), action_space="one_hot"),
    ],
)
def test_off_policy_losses_run_on_their_in_keys(make):
    loss = make()
    action = None
    if isinstance(loss, DQNLoss):
        action = torch.nn.functional.one_hot(torch.randint(4, (B,)), 4)
    batch = _batch(action).set("extra", torch.zeros(B))
    assert "extra" not in loss.in_keys
    out = loss(batch.select(*loss.in_keys))
    assert sorted(out.keys()) == sorted(loss.out_keys)
