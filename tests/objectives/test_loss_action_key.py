"""``loss.set_keys(action=...)`` on the off-policy losses: the batch's action is read at the
renamed key, and an actor's action reaches the critics at that key (torchrl's behaviour)."""

import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_trainers import fast
from rl_trainers.envs.specs import Bounded, Composite, OneHot, Unbounded
from rl_trainers.modules import (
    MLP,
    Actor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    ValueOperator,
    make_actor,
)
from rl_trainers.objectives import (
    DDPGLoss,
    DiscreteCQLLoss,
    DiscreteIQLLoss,
    DiscreteSACLoss,
    DQNLoss,
    IQLLoss,
    SACLoss,
    TD3BCLoss,
    TD3Loss,
)

OBS = Composite(observation=Unbounded(shape=(3,)))
ACT = Bounded(low=-2.0, high=2.0, shape=(1,))
B = 16
NEW = "agent_action"


def _batch(action: torch.Tensor, key: str = "action") -> TensorDict:
    torch.manual_seed(123)
    return TensorDict(
        {
            "observation": torch.randn(B, 3),
            key: action,
            "next": {
                "observation": torch.randn(B, 3),
                "reward": torch.randn(B, 1),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
                "done": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        batch_size=[B],
    )


def _renamed(batch: TensorDict) -> TensorDict:
    out = batch.clone()
    out[NEW] = out.pop("action")
    return out


def _critic(action_key: str) -> ValueOperator:
    torch.manual_seed(1)
    return ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[8]), in_keys=["observation", action_key]
    )


def _run(loss, batch, seed=7):
    torch.manual_seed(seed)
    return loss(batch)


def _continuous_pair(make):
    """(loss with the default keys, same loss renamed to NEW), built from equal weights."""
    torch.manual_seed(0)
    plain = make(_critic("action"))
    torch.manual_seed(0)
    renamed = make(_critic(NEW)).set_keys(action=NEW)
    renamed.load_state_dict(plain.state_dict())
    return plain, renamed


def _stochastic_actor():
    torch.manual_seed(0)
    return make_actor(OBS, ACT, num_cells=(8,))


def _deterministic_actor(out_key: str):
    torch.manual_seed(0)
    return Actor(MLP(in_features=3, out_features=1, num_cells=[8]), out_keys=[out_key])


def _assert_same(out_a, out_b, keys):
    for key in keys:
        torch.testing.assert_close(out_a[key], out_b[key], msg=key)


def test_sac_reads_and_writes_the_renamed_action():
    actor = _stochastic_actor()
    plain, renamed = _continuous_pair(lambda q: SACLoss(actor, q, gamma=0.9))
    assert renamed.tensor_keys.action == NEW
    assert NEW in renamed.in_keys and "action" not in renamed.in_keys
    batch = _batch(torch.rand(B, 1) * 4 - 2)
    _assert_same(
        _run(plain, batch.clone()),
        _run(renamed, _renamed(batch)),
        ["loss_actor", "loss_qvalue", "loss_alpha"],
    )


def test_sac_renamed_action_matches_the_op_by_op_path():
    """The default keys take SAC's one-node path; a renamed key gives the same numbers."""
    actor = _stochastic_actor()
    plain, renamed = _continuous_pair(lambda q: SACLoss(actor, q, gamma=0.9))
    batch = _batch(torch.rand(B, 1) * 4 - 2)
    one_node = _run(plain, batch.clone())
    with fast.plain("SAC_ONE_NODE"):
        slow = _run(renamed, _renamed(batch))
    _assert_same(one_node, slow, ["loss_actor", "loss_qvalue"])


def test_sac_data_action_is_read_at_the_renamed_key():
    """Changing the entry at the renamed key changes the critic loss; "action" is ignored."""
    actor = _stochastic_actor()
    _, loss = _continuous_pair(lambda q: SACLoss(actor, q, gamma=0.9))
    batch = _renamed(_batch(torch.rand(B, 1) * 4 - 2))
    base = _run(loss, batch.clone())["loss_qvalue"]
    decoy = batch.clone()
    decoy["action"] = torch.zeros(B, 1)
    assert torch.equal(_run(loss, decoy)["loss_qvalue"], base)
    moved = batch.clone()
    moved[NEW] = -moved[NEW]
    assert not torch.allclose(_run(loss, moved)["loss_qvalue"], base)


def test_critic_not_reading_the_action_key_is_reported():
    actor = _stochastic_actor()
    loss = SACLoss(actor, _critic("action"), gamma=0.9).set_keys(action=NEW)
    with pytest.raises(KeyError, match="agent_action"):
        loss(_renamed(_batch(torch.rand(B, 1))))


@pytest.mark.parametrize("name", ["td3", "ddpg", "td3_bc"])
def test_deterministic_losses_read_and_write_the_renamed_action(name):
    make = {
        "td3": lambda a, q: TD3Loss(a, q, action_spec=ACT, gamma=0.9),
        "ddpg": lambda a, q: DDPGLoss(a, q, gamma=0.9),
        "td3_bc": lambda a, q: TD3BCLoss(a, q, action_spec=ACT, gamma=0.9),
    }[name]
    torch.manual_seed(0)
    plain = make(_deterministic_actor("action"), _critic("action"))
    torch.manual_seed(0)
    renamed = make(_deterministic_actor(NEW), _critic(NEW)).set_keys(action=NEW)
    renamed.load_state_dict(plain.state_dict())
    batch = _batch(torch.rand(B, 1) * 4 - 2)
    critic = "loss_value" if name == "ddpg" else "loss_qvalue"
    _assert_same(_run(plain, batch.clone()), _run(renamed, _renamed(batch)), ["loss_actor", critic])
    assert NEW in renamed.in_keys


def test_td3_sequential_actor_writing_the_renamed_action():
    """torchrl's TD3 actor: a net writing "param" and a TanhModule writing the action; the
    loss uses the entry the actor writes at the renamed key, not "param"."""
    torch.manual_seed(0)
    net = MLP(in_features=3, out_features=1, num_cells=[8])

    def actor(out_key):
        return TensorDictSequential(
            TensorDictModule(net, in_keys=["observation"], out_keys=["param"]),
            TanhModule(in_keys=["param"], out_keys=[out_key], spec=ACT),
        )

    torch.manual_seed(0)
    plain = TD3Loss(actor("action"), _critic("action"), action_spec=ACT, gamma=0.9)
    torch.manual_seed(0)
    renamed = TD3Loss(actor(NEW), _critic(NEW), action_spec=ACT, gamma=0.9)
    renamed.set_keys(action=NEW)
    renamed.load_state_dict(plain.state_dict())
    batch = _batch(torch.rand(B, 1) * 4 - 2)
    _assert_same(
        _run(plain, batch.clone()), _run(renamed, _renamed(batch)), ["loss_actor", "loss_qvalue"]
    )
    with torch.no_grad():  # the actor's action is tanh-squashed into [-2, 2]
        a = renamed._actor_module(batch["observation"])
    assert a.abs().max() <= 2.0
    torch.testing.assert_close(a, 2 * torch.tanh(net(batch["observation"])))


def test_iql_reads_the_renamed_action():
    actor = _stochastic_actor()
    torch.manual_seed(2)
    value = ValueOperator(
        MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"]
    )
    plain, renamed = _continuous_pair(lambda q: IQLLoss(actor, q, value, gamma=0.9))
    batch = _batch(torch.rand(B, 1) * 3.8 - 1.9)
    _assert_same(
        _run(plain, batch.clone()),
        _run(renamed, _renamed(batch)),
        ["loss_actor", "loss_qvalue", "loss_value"],
    )


def _one_hot_action():
    torch.manual_seed(5)
    return F.one_hot(torch.randint(4, (B,)), 4).bool()


def _qvalue_actor():
    torch.manual_seed(0)
    return QValueActor(
        module=nn.Linear(3, 4), spec=Composite(action=OneHot(4)), in_keys=["observation"]
    )


@pytest.mark.parametrize("cls", [DQNLoss, DiscreteCQLLoss])
def test_dqn_family_reads_the_renamed_action(cls):
    model = _qvalue_actor()
    plain = cls(model, action_space="one_hot", delay_value=False)
    renamed = cls(model, action_space="one_hot", delay_value=False).set_keys(action=NEW)
    batch = _batch(_one_hot_action())
    keys = ["loss"] if cls is DQNLoss else ["loss_qvalue", "loss_cql"]
    _assert_same(plain(batch.clone()), renamed(_renamed(batch)), keys)
    assert NEW in renamed.in_keys


def _categorical_actor():
    torch.manual_seed(0)
    return ProbabilisticActor(
        TensorDictModule(
            MLP(in_features=3, out_features=4, num_cells=[8]), ["observation"], ["logits"]
        ),
        in_keys=["logits"],
        spec=OneHot(4),
        distribution_class=OneHotCategorical,
    )


def _action_values_critic():
    torch.manual_seed(1)
    return ValueOperator(
        MLP(in_features=3, out_features=4, num_cells=[8]),
        in_keys=["observation"],
        out_keys=["action_value"],
    )


def test_discrete_sac_reads_the_renamed_action():
    actor = _categorical_actor()
    torch.manual_seed(0)
    plain = DiscreteSACLoss(actor, _action_values_critic(), num_actions=4)
    torch.manual_seed(0)
    renamed = DiscreteSACLoss(actor, _action_values_critic(), num_actions=4)
    renamed.set_keys(action=NEW)
    batch = _batch(_one_hot_action())
    _assert_same(plain(batch.clone()), renamed(_renamed(batch)), ["loss_actor", "loss_qvalue"])


def test_discrete_iql_reads_the_renamed_action():
    actor = _categorical_actor()
    torch.manual_seed(2)
    value = ValueOperator(
        MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"]
    )
    torch.manual_seed(0)
    plain = DiscreteIQLLoss(actor, _action_values_critic(), value, action_space="one_hot")
    torch.manual_seed(0)
    renamed = DiscreteIQLLoss(actor, _action_values_critic(), value, action_space="one_hot")
    renamed.set_keys(action=NEW)
    batch = _batch(_one_hot_action())
    _assert_same(
        plain(batch.clone()),
        renamed(_renamed(batch)),
        ["loss_actor", "loss_qvalue", "loss_value"],
    )


def test_renamed_action_survives_make_value_estimator():
    actor = _stochastic_actor()
    _, loss = _continuous_pair(lambda q: SACLoss(actor, q))
    loss.make_value_estimator(gamma=0.9)
    assert loss.tensor_keys.action == NEW
    out = loss(_renamed(_batch(torch.rand(B, 1))))
    assert torch.isfinite(out["loss_qvalue"])
