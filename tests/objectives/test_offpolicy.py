import re

import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict
from torch import nn

from rl_trainers.envs.specs import Bounded, Categorical, Composite, OneHot, Unbounded
from rl_trainers.modules import QValueActor, make_actor, make_qvalue
from rl_trainers.objectives import (
    CriticEnsemble,
    DDPGLoss,
    DQNLoss,
    HardUpdate,
    SACLoss,
    SoftUpdate,
    TD3Loss,
)

OBS = Composite(observation=Unbounded(shape=(3,)))
ACT = Bounded(low=-2.0, high=2.0, shape=(1,))


def _batch(n=16, obs=3, action=None, terminated=None):
    terminated = torch.zeros(n, 1, dtype=torch.bool) if terminated is None else terminated
    return TensorDict(
        {
            "observation": torch.randn(n, obs),
            "action": torch.rand(n, 1) * 4 - 2 if action is None else action,
            "next": {
                "observation": torch.randn(n, obs),
                "reward": torch.randn(n, 1),
                "terminated": terminated,
                "done": terminated.clone(),
            },
        },
        batch_size=[n],
    )


class _FixedLogProbDist:
    def __init__(self, loc):
        self.loc = loc

    def rsample_and_log_prob(self):
        return 2 * torch.tanh(self.loc), torch.full(self.loc.shape[:-1], -1.0)


class _StubActor(nn.Module):
    in_keys = ["observation"]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def get_dist(self, td):
        return _FixedLogProbDist(self.lin(td["observation"]))


def _member_q(ens, i, obs, act):
    x = torch.cat([obs, act], -1)
    h = F.relu(x @ ens.weight0[i].T + ens.bias0[i])
    h = F.relu(h @ ens.weight1[i].T + ens.bias1[i])
    return h @ ens.weight2[i].T + ens.bias2[i]


def test_critic_ensemble_first_member_is_the_template():
    q = make_qvalue(OBS, ACT, num_cells=(8, 8))
    ens = CriticEnsemble(q.module, 2)
    obs, act = torch.randn(5, 3), torch.randn(5, 1)
    out = ens(obs, act)
    assert out.shape == (2, 5, 1)
    torch.testing.assert_close(out[0], q.module(obs, act))
    assert not torch.allclose(out[0], out[1])  # copies are re-initialised


def test_critic_ensemble_generic_path_matches():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 1)

        def forward(self, obs, act):
            return self.b(torch.sin(self.a(torch.cat([obs, act], -1))))

    net = Odd()
    ens = CriticEnsemble(net, 3)
    obs, act = torch.randn(5, 3), torch.randn(5, 1)
    torch.testing.assert_close(ens(obs, act)[0], net(obs, act))


def test_sac_targets_and_losses_by_hand():
    torch.manual_seed(0)
    actor = _StubActor()
    q = make_qvalue(OBS, ACT, num_cells=(8, 8))
    loss = SACLoss(actor, q, alpha_init=0.5, gamma=0.9, action_spec=ACT, loss_function="l2")
    # make target critics differ from the online ones
    with torch.no_grad():
        for t in loss.target_qvalue_network_params.buffers():
            t.add_(0.1)
    term = torch.tensor([[False], [True], [False], [False]])
    td = _batch(4, terminated=term)
    out = loss(td)
    tgt, onl = loss.target_qvalue_network_params, loss.qvalue_network_params
    with torch.no_grad():
        a_next = 2 * torch.tanh(actor.lin(td["next", "observation"]))
        q_next = torch.minimum(
            *(_member_q(tgt, i, td["next", "observation"], a_next) for i in range(2))
        )
        y = td["next", "reward"] + 0.9 * (~term).float() * (q_next - 0.5 * -1.0)
        q_data = [_member_q(onl, i, td["observation"], td["action"]) for i in range(2)]
        expected_q = 0.5 * sum(((qd - y) ** 2).mean() for qd in q_data)
        a_pi = 2 * torch.tanh(actor.lin(td["observation"]))
        q_pi = torch.minimum(*(_member_q(onl, i, td["observation"], a_pi) for i in range(2)))
        expected_actor = (0.5 * -1.0 - q_pi).mean()
    torch.testing.assert_close(out["loss_qvalue"], expected_q)
    torch.testing.assert_close(out["loss_actor"], expected_actor)
    torch.testing.assert_close(out["alpha"], torch.tensor(0.5))
    # target_entropy "auto" = -prod(action shape) = -1: loss_alpha = -log(.5) * (-1 + -1)
    torch.testing.assert_close(out["loss_alpha"], torch.tensor(0.5).log() * 2.0)
    assert td["td_error"].shape == (4,)


def test_sac_gradients_and_parameters():
    actor = make_actor(OBS, ACT, num_cells=(16, 16))
    loss = SACLoss(actor, make_qvalue(OBS, ACT, num_cells=(16, 16)), gamma=0.99)
    out = loss(_batch(8))
    # the actor loss does not touch the critics
    out["loss_actor"].backward()
    assert all(p.grad is None for p in loss.qvalue_network_params.parameters())
    assert all(p.grad is not None for p in actor.parameters())
    names = {n for n, _ in loss.named_parameters()}
    assert not any(n.startswith("target_") for n in names)
    assert any(k.startswith("target_qvalue_network_params.") for k in loss.state_dict())
    assert "log_alpha" in names


def test_soft_update_semantics():
    loss = SACLoss(make_actor(OBS, ACT, num_cells=(4,)), make_qvalue(OBS, ACT, num_cells=(4,)))
    src = loss.qvalue_network_params.weight0
    tgt = loss.target_qvalue_network_params.weight0
    torch.testing.assert_close(src.detach(), tgt)
    old = tgt.clone()
    with torch.no_grad():
        src.add_(1.0)
    SoftUpdate(loss, eps=0.9).step()
    torch.testing.assert_close(tgt, 0.9 * old + 0.1 * src.detach())
    with pytest.raises(ValueError, match="exactly one"):
        SoftUpdate(loss, eps=0.9, tau=0.1)


def _dqn_setup(spec):
    net = nn.Linear(2, 2)
    return net, QValueActor(net, in_keys=["observation"], spec=spec)


@pytest.mark.parametrize("spec", [OneHot(2), Categorical(2)])
def test_double_dqn_target_by_hand(spec):
    net, actor = _dqn_setup(spec)
    loss = DQNLoss(actor, double_dqn=True, gamma=0.5, loss_function="l2")
    target_net = loss.target_value_network_params.module
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        net.bias.zero_()
        target_net.weight.copy_(torch.tensor([[2.0, 0.0], [0.0, 3.0]]))
        target_net.bias.zero_()
    idx = torch.tensor([0, 1])
    action = F.one_hot(idx, 2).bool() if isinstance(spec, OneHot) else idx
    td = TensorDict(
        {
            "observation": torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
            "action": action,
            "next": {
                "observation": torch.tensor([[5.0, 1.0], [1.0, 1.0]]),
                "reward": torch.tensor([[1.0], [0.0]]),
                "terminated": torch.tensor([[False], [False]]),
                "done": torch.tensor([[False], [False]]),
            },
        },
        batch_size=[2],
    )
    out = loss(td)
    # online picks argmax of next obs: row0 -> action 0, row1 -> tie -> action 0
    # target values of those: row0 2*5 = 10, row1 2*1 = 2 (plain DQN would take max: 10, 3)
    y = torch.tensor([[1.0 + 0.5 * 10.0], [0.0 + 0.5 * 2.0]])
    chosen = torch.tensor([[1.0], [4.0]])
    torch.testing.assert_close(out["loss"], ((chosen - y) ** 2).mean())
    plain = DQNLoss(actor, double_dqn=False, gamma=0.5)
    with torch.no_grad():
        plain.target_value_network_params.module.weight.copy_(target_net.weight)
        plain.target_value_network_params.module.bias.zero_()
    y_plain = torch.tensor([[1.0 + 0.5 * 10.0], [0.0 + 0.5 * 3.0]])
    torch.testing.assert_close(plain(td)["loss"], ((chosen - y_plain) ** 2).mean())


def test_hard_update_copies_every_interval():
    net, actor = _dqn_setup(OneHot(2))
    loss = DQNLoss(actor, gamma=0.9)
    target = loss.target_value_network_params.module.weight
    with torch.no_grad():
        net.weight.add_(1.0)
    updater = HardUpdate(loss, value_network_update_interval=3)
    updater.step()
    updater.step()
    assert not torch.allclose(target, net.weight.detach())
    updater.step()
    torch.testing.assert_close(target, net.weight.detach())
    assert {id(p) for p in loss.parameters()} == {id(p) for p in net.parameters()}


def test_dqn_multistep_discount():
    net, actor = _dqn_setup(Categorical(2))
    loss = DQNLoss(actor, gamma=0.5, delay_value=False)
    td = _batch(4, obs=2, action=torch.zeros(4, dtype=torch.int64))
    with torch.no_grad():
        q_next = net(td["next", "observation"]).max(-1, keepdim=True).values
        chosen = net(td["observation"])[:, :1]
    td["steps_to_next_obs"] = torch.full((4, 1), 3)
    expected = ((chosen - (td["next", "reward"] + 0.125 * q_next)) ** 2).mean()
    torch.testing.assert_close(loss(td)["loss"], expected)


def test_td3_and_ddpg_run_and_respect_bounds():
    actor = make_actor(OBS, ACT, num_cells=(8,), deterministic=True)
    q = make_qvalue(OBS, ACT, num_cells=(8,))
    td3 = TD3Loss(actor, q, policy_noise=0.2, noise_clip=0.5, gamma=0.99)
    a_next = td3._target_action(_batch(64))
    assert (a_next.abs() <= 2.0).all()
    out = td3(_batch(8))
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    assert all(p.grad is not None for p in actor.parameters())
    SoftUpdate(td3, tau=0.01).step()
    ddpg = DDPGLoss(actor, q, gamma=0.99)
    assert {"loss_actor", "loss_value"} <= set(ddpg(_batch(8)).keys())


def _end_of_life_batch(n=16):
    """Episodes go on (terminated False) but every step loses a life (``end-of-life``)."""
    batch = _batch(n)
    batch["next", "end-of-life"] = torch.ones(n, 1, dtype=torch.bool)
    ended = batch.clone()
    ended["next", "terminated"] = torch.ones(n, 1, dtype=torch.bool)
    ended["next", "done"] = torch.ones(n, 1, dtype=torch.bool)
    return batch, ended


def _off_policy_losses():
    torch.manual_seed(0)
    actor = make_actor(OBS, ACT, num_cells=(8,), deterministic=True)
    q = make_qvalue(OBS, ACT, num_cells=(8,))
    stochastic = make_actor(OBS, ACT, num_cells=(8,))
    return {
        "td3": TD3Loss(actor, q, policy_noise=0.0, noise_clip=0.5, gamma=0.9),
        "ddpg": DDPGLoss(actor, q, gamma=0.9),
        "sac": SACLoss(stochastic, q, gamma=0.9, loss_function="l2"),
    }


@pytest.mark.parametrize("name", ["td3", "ddpg", "sac"])
def test_off_policy_losses_read_renamed_done_keys(name):
    """torchrl's Atari recipes: set_keys(done="end-of-life", terminated="end-of-life") makes
    the targets stop at a lost life, exactly as a terminated step would."""
    loss = _off_policy_losses()[name]
    batch, ended = _end_of_life_batch()
    torch.manual_seed(1)
    reference = loss(ended)
    loss.set_keys(done="end-of-life", terminated="end-of-life")
    assert loss.tensor_keys.terminated == "end-of-life"
    assert ("next", "end-of-life") in loss.in_keys
    torch.manual_seed(1)
    renamed = loss(batch)
    critic = "loss_value" if name == "ddpg" else "loss_qvalue"
    assert torch.allclose(renamed[critic], reference[critic])
    torch.manual_seed(1)
    plain = loss.set_keys(done="done", terminated="terminated")(batch)
    assert not torch.allclose(plain[critic], reference[critic])


def test_dqn_reads_renamed_reward_and_done_keys():
    spec = OneHot(4)
    torch.manual_seed(0)
    model = QValueActor(
        module=nn.Linear(3, 4), spec=Composite(action=spec), in_keys=["observation"]
    )
    action = F.one_hot(torch.randint(4, (16,)), 4).bool()
    batch, ended = _end_of_life_batch()
    batch["action"] = ended["action"] = action
    batch["next", "clipped_reward"] = ended["next", "reward"].sign()
    ended["next", "reward"] = ended["next", "reward"].sign()
    loss = DQNLoss(model, action_space="one_hot", delay_value=False)
    reference = loss(ended)["loss"]
    loss.set_keys(reward="clipped_reward", done="end-of-life", terminated="end-of-life")
    assert torch.allclose(loss(batch)["loss"], reference)


@pytest.mark.parametrize("name", ["td3", "ddpg", "sac", "dqn"])
def test_a_batch_without_the_next_observation_is_refused_naming_it(name):
    if name == "dqn":
        loss = DQNLoss(_dqn_setup(OneHot(2))[1], delay_value=False)
        batch = _batch(obs=2, action=F.one_hot(torch.randint(2, (16,)), 2).bool())
    else:
        loss, batch = _off_policy_losses()[name], _batch()
    del batch["next", "observation"]
    with pytest.raises(KeyError, match=re.escape("('next', 'observation'), which the batch lacks")):
        loss(batch)


@pytest.mark.parametrize("spec", [OneHot(3), Categorical(3)])
@pytest.mark.parametrize("loss_function", ["l2", "l1", "smooth_l1"])
@pytest.mark.parametrize("double_dqn", [False, True])
def test_dqn_loss_and_grads_equals_forward_and_backward(spec, loss_function, double_dqn):
    """The autograd-free step of an MLP Q-network gives forward()'s entries and backward()'s
    gradients, bitwise."""
    from rl_trainers.modules import MLP

    torch.manual_seed(0)
    net = MLP(4, 3, num_cells=[16, 16], activation_class=nn.ReLU)
    actor = QValueActor(net, in_keys=["observation"], spec=spec)
    loss = DQNLoss(actor, loss_function=loss_function, double_dqn=double_dqn, gamma=0.9)
    with torch.no_grad():  # online and target networks apart
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    idx = torch.randint(3, (32,))
    action = F.one_hot(idx, 3).bool() if isinstance(spec, OneHot) else idx
    td = _batch(32, obs=4, action=action)
    td["observation"] = 3 * td["observation"]
    reference = loss(td.clone())
    reference["loss"].backward()
    expected = [p.grad.clone() for p in loss.parameters()]
    for p in loss.parameters():
        p.grad = None
    out = loss.loss_and_grads(td.clone())
    assert out is not None
    for key in ("loss", "q_mean", "td_error"):
        assert torch.equal(out[key], reference[key].detach()), key
    for p, grad in zip(loss.parameters(), expected, strict=True):
        assert torch.equal(p.grad, grad)
