"""torchrl's tensor form of a loss call, ``loss(observation=..., next_reward=..., ...)``,
as its docstring examples use it: the out_keys come back as a tuple (a tensor when one)."""

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_trainers.envs.specs import Bounded, OneHot
from rl_trainers.modules import (
    Actor,
    NormalParamExtractor,
    ProbabilisticActor,
    QValueActor,
    SafeModule,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import (
    CQLLoss,
    CrossQLoss,
    DDPGLoss,
    DiscreteCQLLoss,
    DQNLoss,
    REDQLoss,
    SACLoss,
)

N_ACT, N_OBS = 4, 3
SPEC = Bounded(-torch.ones(N_ACT), torch.ones(N_ACT), (N_ACT,))


class ValueClass(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(N_OBS + N_ACT, 1)

    def forward(self, obs, act):
        return self.linear(torch.cat([obs, act], -1))


def _nets():
    torch.manual_seed(42)
    net = nn.Sequential(nn.Linear(N_OBS, 2 * N_ACT), NormalParamExtractor())
    module = SafeModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    actor = ProbabilisticActor(
        module=module, in_keys=["loc", "scale"], spec=SPEC, distribution_class=TanhNormal
    )
    qvalue = ValueOperator(module=ValueClass(), in_keys=["observation", "action"])
    return actor, qvalue


def _kwargs(batch=(2,)):
    torch.manual_seed(0)
    return {
        "observation": torch.randn(*batch, N_OBS),
        "action": SPEC.rand(batch),
        "next_done": torch.zeros(*batch, 1, dtype=torch.bool),
        "next_terminated": torch.zeros(*batch, 1, dtype=torch.bool),
        "next_observation": torch.zeros(*batch, N_OBS),
        "next_reward": torch.randn(*batch, 1),
    }


def _as_batch(kwargs):
    data = {k: v for k, v in kwargs.items() if not k.startswith("next_")}
    data["next"] = {k[5:]: v for k, v in kwargs.items() if k.startswith("next_")}
    return TensorDict(data, batch_size=kwargs["observation"].shape[:-1])


def test_sac_docstring_example_unpacks_five_values():
    actor, qvalue = _nets()
    loss = SACLoss(actor, qvalue)
    torch.manual_seed(1)
    loss_actor, loss_qvalue, loss_alpha, alpha, entropy = loss(**_kwargs())
    loss_actor.backward()
    torch.manual_seed(1)
    reference = loss(_as_batch(_kwargs()))
    torch.testing.assert_close(loss_qvalue, reference["loss_qvalue"])
    torch.testing.assert_close(entropy, reference["entropy"])
    _ = loss.select_out_keys("loss_actor", "loss_qvalue")
    loss_actor, loss_qvalue = loss(**_kwargs())
    loss_actor.backward()


@pytest.mark.parametrize(("cls", "count"), [(CrossQLoss, 5), (CQLLoss, 8), (REDQLoss, 9)])
def test_new_losses_keyword_call(cls, count):
    actor, qvalue = _nets()
    loss = cls(actor, qvalue)
    out = loss(**_kwargs())
    assert len(out) == count
    assert all(v.shape == () for v in out)
    out[0].backward()  # loss_actor first, as in torchrl
    loss.select_out_keys("loss_actor", "loss_qvalue")
    loss_actor, loss_qvalue = loss(**_kwargs())
    assert loss_qvalue.requires_grad


def test_dqn_keyword_call_on_one_transition_returns_the_loss():
    spec = OneHot(N_ACT)
    torch.manual_seed(0)
    loss = DQNLoss(
        QValueActor(nn.Linear(N_OBS, N_ACT), in_keys=["observation"], spec=spec),
        action_space=spec,
    )
    value = loss(
        observation=torch.randn(N_OBS),
        next_observation=torch.randn(N_OBS),
        next_reward=torch.randn(1),
        next_done=torch.zeros(1, dtype=torch.bool),
        next_terminated=torch.zeros(1, dtype=torch.bool),
        action=spec.rand(),
    )
    assert isinstance(value, torch.Tensor) and value.shape == ()
    value.backward()
    cql = DiscreteCQLLoss(
        QValueActor(nn.Linear(N_OBS, N_ACT), in_keys=["observation"], spec=spec),
        action_space=spec,
    )
    loss_qvalue, loss_cql = cql(**{**_kwargs(), "action": spec.rand((2,))})
    assert loss_cql.requires_grad


def test_ddpg_keyword_call_returns_its_five_entries():
    torch.manual_seed(0)
    actor = Actor(spec=SPEC, module=nn.Linear(N_OBS, N_ACT))
    value = ValueOperator(module=ValueClass(), in_keys=["observation", "action"])
    loss = DDPGLoss(actor, value)
    out = loss(**_kwargs())
    assert len(out) == len(loss.out_keys) == 5
    out[0].backward()


def test_keyword_inputs_without_a_common_batch_shape_are_reported():
    actor, qvalue = _nets()
    kwargs = _kwargs()
    kwargs["next_reward"] = torch.randn(3, 1)
    with pytest.raises(ValueError, match="share no batch shape"):
        SACLoss(actor, qvalue)(**kwargs)
