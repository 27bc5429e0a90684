import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from rl_trainers.envs.specs import Bounded, OneHot
from rl_trainers.modules import AdditiveGaussianWrapper, EGreedyModule, EGreedyWrapper, QValueActor


def test_egreedy_annealing_is_linear_and_saved():
    module = EGreedyModule(OneHot(2), eps_init=1.0, eps_end=0.1, annealing_num_steps=10)
    module.step(5)
    torch.testing.assert_close(module.eps, torch.tensor(0.55))
    module.step(100)
    torch.testing.assert_close(module.eps, torch.tensor(0.1))
    assert float(module.state_dict()["eps"]) == float(module.eps)


def test_egreedy_wrapper_explores_only_in_random_mode():
    spec = OneHot(4)
    net = torch.nn.Linear(3, 4)
    with torch.no_grad():
        net.weight.zero_()
        net.bias.copy_(torch.tensor([0.0, 0.0, 5.0, 0.0]))
    policy = EGreedyWrapper(
        QValueActor(net, spec=spec), eps_init=1.0, eps_end=1.0, annealing_num_steps=1, spec=spec
    )
    td = TensorDict(observation=torch.randn(2000, 3), batch_size=[2000])
    with set_interaction_type(InteractionType.DETERMINISTIC):
        greedy = policy(td.clone())["action"]
    assert (greedy.float().argmax(-1) == 2).all()
    with set_interaction_type(InteractionType.RANDOM):
        explored = policy(td.clone())["action"]
    assert explored.dtype == spec.dtype and (explored.sum(-1) == 1).all()
    frac = (explored.float().argmax(-1) == 2).float().mean()
    assert 0.15 < frac < 0.35  # eps=1: uniform over 4 actions


def test_additive_gaussian_respects_bounds_and_anneals():
    spec = Bounded(low=-1.0, high=1.0, shape=(2,))

    class Zero(torch.nn.Module):
        in_keys = ["observation"]
        out_keys = ["action"]

        def forward(self, td):
            td["action"] = torch.full((*td.batch_size, 2), 0.9)
            return td

    policy = AdditiveGaussianWrapper(
        Zero(), sigma_init=5.0, sigma_end=0.5, annealing_num_steps=4, spec=spec
    )
    with set_interaction_type(InteractionType.RANDOM):
        a = policy(TensorDict(batch_size=[500]))["action"]
    assert (a.abs() <= 1.0).all() and not torch.allclose(a, torch.full_like(a, 0.9))
    policy.step(2)
    torch.testing.assert_close(policy.sigma, torch.tensor(2.75))
