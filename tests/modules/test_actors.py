import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from rl_trainers.envs.specs import Bounded, Categorical, Composite, OneHot, Unbounded
from rl_trainers.modules import (
    Actor,
    IndependentNormal,
    QValueActor,
    TanhNormal,
    ValueOperator,
    make_actor,
    make_qvalue,
    make_value,
)

PENDULUM_OBS = Composite(observation=Unbounded(shape=(3,)))
PENDULUM_ACT = Bounded(low=-2.0, high=2.0, shape=(1,))
CARTPOLE_OBS = Composite(observation=Unbounded(shape=(4,)))


def _td(*batch, obs=3):
    return TensorDict(observation=torch.randn(*batch, obs), batch_size=list(batch))


def test_tanh_normal_actor_reads_bounds_from_spec():
    actor = make_actor(PENDULUM_OBS, PENDULUM_ACT)
    td = _td(5, 7)
    dist = actor.get_dist(td)
    assert isinstance(dist, TanhNormal)
    torch.testing.assert_close(dist.low, torch.tensor([-2.0]))
    torch.testing.assert_close(dist.high, torch.tensor([2.0]))
    with set_interaction_type(InteractionType.RANDOM):
        out = actor(td)
    assert out["action"].shape == (5, 7, 1)
    assert out["sample_log_prob"].shape == (5, 7)
    assert (out["action"].abs() <= 2.0).all()


def test_deterministic_interaction_uses_mode():
    actor = make_actor(PENDULUM_OBS, PENDULUM_ACT)
    td = _td(8)
    with set_interaction_type(InteractionType.DETERMINISTIC):
        a1 = actor(td.clone())["action"]
        a2 = actor(td.clone())["action"]
    torch.testing.assert_close(a1, a2)
    loc = actor.get_dist(td.clone()).loc
    torch.testing.assert_close(a1, 2.0 * torch.tanh(loc))
    with set_interaction_type(InteractionType.RANDOM):
        r1 = actor(td.clone())["action"]
    assert not torch.allclose(r1, a1)


def test_categorical_actor_with_one_hot_spec():
    spec = OneHot(2)
    actor = make_actor(CARTPOLE_OBS, spec)
    with set_interaction_type(InteractionType.RANDOM):
        out = actor(_td(3, 8, obs=4))
    assert out["action"].shape == (3, 8, 2)
    assert out["action"].dtype == spec.dtype
    assert (out["action"].sum(-1) == 1).all()
    logp = torch.log_softmax(out["logits"], -1)
    expected = (logp * out["action"].float()).sum(-1)
    torch.testing.assert_close(out["sample_log_prob"], expected)


def test_categorical_actor_with_index_spec():
    actor = make_actor(CARTPOLE_OBS, Categorical(3))
    out = actor(_td(6, obs=4))
    assert out["action"].shape == (6,) and out["action"].dtype == torch.int64
    torch.testing.assert_close(out["action"], out["logits"].argmax(-1))


def test_unbounded_actions_use_a_gaussian():
    actor = make_actor(PENDULUM_OBS, Unbounded(shape=(2,)))
    assert isinstance(actor.get_dist(_td(4)), IndependentNormal)


def test_deterministic_actor_is_bounded():
    actor = make_actor(PENDULUM_OBS, PENDULUM_ACT, deterministic=True)
    assert isinstance(actor, Actor)
    for p in actor.parameters():
        p.data.mul_(100)
    out = actor(_td(64))["action"]
    assert out.shape == (64, 1) and (out.abs() <= 2.0).all()


def test_value_and_qvalue_builders():
    v = make_value(PENDULUM_OBS)
    assert v(_td(4, 2))["state_value"].shape == (4, 2, 1)
    q = make_qvalue(PENDULUM_OBS, PENDULUM_ACT)
    td = _td(4)
    td["action"] = torch.zeros(4, 1)
    assert q(td)["state_action_value"].shape == (4, 1)
    assert isinstance(make_qvalue(CARTPOLE_OBS, OneHot(2)), QValueActor)
    assert ValueOperator(torch.nn.Linear(3, 1)).out_keys == ["state_value"]


@pytest.mark.parametrize("spec,shape", [(OneHot(3), (5, 3)), (Categorical(3), (5,))])
def test_qvalue_actor_outputs(spec, shape):
    net = torch.nn.Linear(4, 3)
    actor = QValueActor(net, in_keys=["observation"], spec=spec)
    td = actor(_td(5, obs=4))
    values = net(td["observation"])
    torch.testing.assert_close(td["action_value"], values)
    assert td["action"].shape == shape
    torch.testing.assert_close(td["chosen_action_value"], values.max(-1, keepdim=True).values)


def test_qvalue_actor_rejects_continuous_spec():
    with pytest.raises(ValueError, match="one_hot or categorical"):
        QValueActor(torch.nn.Linear(3, 1), spec=PENDULUM_ACT)
