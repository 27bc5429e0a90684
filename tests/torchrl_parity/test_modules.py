"""torchrl modules a ported script imports: TanhDelta, OU noise, SafeModule, QValueModule and
the actor/value operators, called as torchrl's documentation calls them."""

import pickle
import warnings

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    InteractionType,
    NormalParamExtractor,
    TensorDictModule,
    TensorDictSequential,
    set_interaction_type,
)
from torch import nn

from rl_trainers.envs.specs import Bounded, Composite, OneHot
from rl_trainers.modules import (
    MLP,
    Actor,
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    AdditiveGaussianModule,
    AddStateIndependentNormalScale,
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    Delta,
    EGreedyModule,
    OrnsteinUhlenbeckProcessModule,
    OrnsteinUhlenbeckProcessWrapper,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    SafeModule,
    SafeSequential,
    TanhDelta,
    TanhNormal,
    ValueOperator,
    ddpg_init_last_layer,
)
from rl_trainers.objectives import A2CLoss, ClipPPOLoss


def test_tanh_delta_maps_param_onto_bounds_and_is_a_point_mass():
    low, high = torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 1.0])
    param = torch.tensor([[0.0, 0.0], [50.0, -50.0]], requires_grad=True)
    dist = TanhDelta(param, low=low, high=high)
    assert torch.allclose(dist.mode, torch.tensor([[0.0, 0.5], [2.0, 0.0]]))
    assert torch.equal(dist.deterministic_sample, dist.mode)
    assert dist.rsample().requires_grad and dist.rsample((3,)).shape == (3, 2, 2)
    assert torch.equal(dist.log_prob(dist.mode), torch.full((2,), float("inf")))
    assert torch.equal(dist.log_prob(dist.mode + 0.1), torch.full((2,), float("-inf")))
    assert dist.batch_shape == (2,) and dist.event_shape == (2,)
    assert torch.allclose(TanhDelta(param, min=-2.0, max=2.0).mode[0], torch.zeros(2))
    with pytest.raises(ValueError, match="low < high"):
        TanhDelta(param, low=1.0, high=-1.0)
    assert torch.equal(Delta(param).log_prob(param.detach()), torch.full((2,), float("inf")))


def test_tanh_delta_in_a_probabilistic_actor_reads_spec_bounds():
    spec = Bounded(-3.0, 3.0, torch.Size([2]))
    net = TensorDictModule(nn.Linear(4, 2), ["observation"], ["param"])
    actor = ProbabilisticActor(
        net,
        in_keys=["param"],
        spec=spec,
        distribution_class=TanhDelta,
        distribution_kwargs={"low": spec.low, "high": spec.high},
    )
    td = actor(TensorDict({"observation": torch.randn(5, 4) * 100}, [5]))
    assert torch.allclose(td["action"], 3 * torch.tanh(td["param"]))
    assert td["action"].abs().max() > 2.5


def _ou_td(n=4, is_init=True):
    return TensorDict(
        {
            "observation": torch.zeros(n, 3),
            "is_init": torch.full((n, 1), is_init),
        },
        [n],
    )


def test_ou_noise_is_correlated_in_time_and_reset_by_is_init():
    torch.manual_seed(0)
    spec = Bounded(-10.0, 10.0, torch.Size([3]))
    policy = TensorDictSequential(
        Actor(nn.Linear(3, 3, bias=False), spec=spec),
        OrnsteinUhlenbeckProcessModule(spec=spec, theta=0.0, sigma=1.0, dt=1.0),
    )
    td = policy(_ou_td())
    assert td["_ou_steps"].tolist() == [1, 1, 1, 1]
    first = td["_ou_prev_noise"].clone()
    assert torch.equal(td["action"], first)  # zero policy output, eps 1
    nxt = td.exclude("action").set("is_init", torch.zeros(4, 1, dtype=torch.bool))
    nxt = policy(nxt)
    assert nxt["_ou_steps"].tolist() == [2, 2, 2, 2]
    # theta = 0: a random walk, the new noise is the old plus a fresh step
    assert not torch.equal(nxt["_ou_prev_noise"], first)
    assert (nxt["_ou_prev_noise"] - first).abs().max() < 6
    again = policy(nxt.exclude("action").set("is_init", torch.ones(4, 1, dtype=torch.bool)))
    assert again["_ou_steps"].tolist() == [1, 1, 1, 1]


def test_ou_clamps_to_spec_anneals_eps_and_is_off_when_deterministic():
    spec = Bounded(-0.1, 0.1, torch.Size([3]))
    ou = OrnsteinUhlenbeckProcessModule(spec, sigma=50.0, annealing_num_steps=10, eps_end=0.5)
    policy = TensorDictSequential(Actor(nn.Linear(3, 3), spec=spec), ou)
    td = policy(_ou_td())
    assert td["action"].abs().max() <= 0.1 + 1e-6
    ou.step(5)
    assert ou.eps.item() == pytest.approx(0.75)
    ou.step(100)
    assert ou.eps.item() == pytest.approx(0.5)
    with set_interaction_type(InteractionType.DETERMINISTIC):
        td = policy(_ou_td())
    assert "_ou_prev_noise" not in td.keys()
    with pytest.raises(ValueError, match="eps should decrease"):
        OrnsteinUhlenbeckProcessModule(spec, eps_init=0.1, eps_end=0.5)
    with pytest.warns(UserWarning, match="InitTracker"):
        policy(_ou_td().exclude("is_init"))


def test_ou_wrapper_adds_the_modules_noise_to_the_policy():
    spec = Bounded(-10.0, 10.0, torch.Size([3]))
    actor = Actor(nn.Linear(3, 3, bias=False), spec=spec)
    explore = OrnsteinUhlenbeckProcessWrapper(
        actor, theta=0.0, sigma=1.0, dt=1.0, annealing_num_steps=10, eps_end=0.5
    )
    assert explore.spec is spec and explore.in_keys == actor.in_keys
    td = explore(_ou_td())
    # zero observations: the policy's action is 0, so the action is the noise itself
    assert torch.equal(td["action"], td["_ou_prev_noise"]) and td["action"].abs().sum() > 0
    explore.step(5)
    assert explore.eps.item() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no action spec"):
        OrnsteinUhlenbeckProcessWrapper(TensorDictModule(nn.Linear(3, 3), ["o"], ["action"]))


def test_ddpg_networks():
    actor = DdpgMlpActor(action_dim=2)
    qnet = DdpgMlpQNet()
    obs, action = torch.randn(5, 6), torch.randn(5, 2)
    assert actor(obs).shape == (5, 2) and qnet(obs, action).shape == (5, 1)
    # the paper's sizes; the output layers start near zero
    assert [m.out_features for m in actor.mlp if isinstance(m, nn.Linear)] == [400, 300, 2]
    assert qnet.mlp1[0].out_features == 400 and qnet.mlp2[0].in_features == 402
    for last in (actor.mlp[-1], qnet.mlp2[-1]):
        assert last.weight.abs().max() <= 3e-3 and last.bias.abs().max() <= 3e-3
    assert isinstance(actor.mlp[1], nn.ELU)
    small = DdpgMlpActor(action_dim=1, mlp_net_kwargs={"num_cells": [8, 8]})
    assert [m.out_features for m in small.mlp if isinstance(m, nn.Linear)] == [8, 8, 1]
    layer = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3))
    ddpg_init_last_layer(layer, scale=1e-2)
    assert layer[2].weight.abs().max() <= 5e-3
    with pytest.raises(TypeError, match="no nn.Linear"):
        ddpg_init_last_layer(nn.Sequential(nn.ReLU()))


def test_ddpg_cnn_networks_train_in_a_ddpg_loss():
    from rl_trainers.modules import ProbabilisticActor, TanhDelta, ValueOperator
    from rl_trainers.objectives import DDPGLoss

    torch.manual_seed(0)
    pixels = torch.rand(4, 3, 64, 64)
    action, hidden = DdpgCnnActor(action_dim=2)(pixels)
    assert action.shape == (4, 2) and hidden.shape == (4, 64 * 6 * 6)  # maps flattened
    pooled = DdpgCnnActor(action_dim=2, use_avg_pooling=True)
    assert pooled(pixels)[1].shape == (4, 64)  # one average per channel
    assert DdpgCnnQNet()(pixels, action).shape == (4, 1)
    assert DdpgCnnQNet(use_avg_pooling=False)(pixels, action).shape == (4, 1)
    assert DdpgCnnQNet().convnet[4].out_channels == 128

    spec = Bounded(-1.0, 1.0, torch.Size([2]))
    actor_net, q_net = DdpgCnnActor(action_dim=2), DdpgCnnQNet()
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, ["pixels"], ["param", "hidden"]),
        in_keys=["param"],
        distribution_class=TanhDelta,
        spec=spec,
    )
    qnet = ValueOperator(q_net, in_keys=["pixels", "action"])
    batch = TensorDict(
        {
            "pixels": pixels,
            "action": torch.rand(4, 2) * 2 - 1,
            "next": {
                "pixels": torch.rand(4, 3, 64, 64),
                "reward": torch.randn(4, 1),
                "done": torch.zeros(4, 1, dtype=torch.bool),
                "terminated": torch.zeros(4, 1, dtype=torch.bool),
            },
        },
        [4],
    )
    qnet(actor(batch.clone()))  # the lazy layers take their sizes
    for last in (actor_net.mlp[-1], q_net.mlp[-1]):
        assert last.weight.abs().max() <= 3e-4
    loss = DDPGLoss(actor, qnet)
    out = loss(batch)
    (out["loss_actor"] + out["loss_value"]).backward()
    conv = actor_net.convnet[0].weight
    assert out["loss_value"].isfinite() and conv.grad is not None and conv.grad.abs().sum() > 0


def test_ou_sigma_anneals_within_a_trajectory():
    spec = Bounded(-1.0, 1.0, torch.Size([1]))
    ou = OrnsteinUhlenbeckProcessModule(spec, sigma=0.5, sigma_min=0.1, n_steps_annealing=4)
    assert ou.current_sigma(torch.tensor([0.0, 2.0, 100.0])).tolist() == pytest.approx(
        [0.5, 0.3, 0.1]
    )


def test_safe_module_projects_onto_its_spec():
    spec = Bounded(-1.0, 1.0, torch.Size([3]))
    module = SafeModule(nn.Linear(4, 3), in_keys=["observation"], out_keys=["action"], spec=spec)
    big = TensorDict({"observation": torch.randn(5, 4) * 100}, [5])
    assert module(big.clone())["action"].abs().max() > 1
    safe = SafeModule(module.module, ["observation"], ["action"], spec=spec, safe=True)
    assert safe(big.clone())["action"].abs().max() <= 1
    composite = SafeModule(
        module.module, ["observation"], ["action"], spec=Composite(action=spec), safe=True
    )
    assert composite(big.clone())["action"].abs().max() <= 1
    with pytest.raises(RuntimeError, match="safe=True"):
        SafeModule(nn.Linear(4, 3), ["observation"], ["action"], safe=True)
    seq = SafeSequential(safe, TensorDictModule(lambda a: a * 2, ["action"], ["double"]))
    assert seq(big.clone())["double"].abs().max() <= 2
    assert seq.spec is spec


def test_qvalue_module_on_tensors_and_tensordicts():
    module = QValueModule("categorical", action_value_key="my_action_value")
    values = torch.tensor([0.0, 0.0, 0.0, 1.0])
    action, out_values, chosen = module(values)
    assert action.item() == 3 and torch.equal(out_values, values) and chosen.tolist() == [1.0]
    td = module(TensorDict({"my_action_value": values}, []))
    assert td["action"].item() == 3 and td["chosen_action_value"].tolist() == [1.0]
    one_hot = QValueModule(spec=OneHot(4))
    td = one_hot(TensorDict({"action_value": torch.randn(5, 4)}, [5]))
    assert td["action"].shape == (5, 4) and td["action"].sum(-1).tolist() == [1] * 5
    masked = QValueModule("categorical", action_mask_key="action_mask")
    td = masked(
        TensorDict(
            {"action_value": values.expand(2, 4), "action_mask": torch.tensor([[1, 1, 1, 0]] * 2)},
            [2],
        )
    )
    assert td["action"].tolist() == [0, 0]
    with pytest.raises(ValueError, match="do not match"):
        QValueModule("categorical", spec=OneHot(4))
    with pytest.raises(ValueError, match="spec or an action_space"):
        QValueModule()


def test_qvalue_actor_torchrl_forms():
    spec = OneHot(4)
    actor = QValueActor(module=nn.Linear(4, 4), spec=spec)
    td = actor(TensorDict({"observation": torch.randn(5, 4)}, [5]))
    assert td["action"].shape == (5, 4) and td["chosen_action_value"].shape == (5, 1)
    identity = TensorDictModule(lambda x: x, in_keys=["obs"], out_keys=["action_value"])
    actor = QValueActor(module=identity, spec=Composite(action=spec))
    obs = torch.randn(5, 4)
    td = actor(TensorDict({"obs": obs}, [5]))
    assert torch.equal(td["action"].long().argmax(-1), obs.argmax(-1))
    with pytest.raises(KeyError, match="not part of the module out-keys"):
        QValueActor(module=identity, spec=spec, action_value_key="q")
    assert QValueActor(nn.Linear(4, 3), action_space="categorical").action_space == "categorical"


def _heads():
    trunk = SafeModule(nn.Linear(4, 4), in_keys=["observation"], out_keys=["hidden"])
    head = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(nn.Linear(4, 4), NormalParamExtractor()),
            in_keys=["hidden"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )
    value = ValueOperator(nn.Linear(4, 1), in_keys=["hidden"])
    return trunk, head, value


def test_actor_value_operator_splits_into_policy_and_value():
    trunk, head, value = _heads()
    avo = ActorValueOperator(trunk, head, value)
    td = TensorDict({"observation": torch.randn(3, 4)}, [3])
    assert {"action", "hidden", "sample_log_prob", "state_value"} <= set(avo(td.clone()).keys())
    policy_keys = set(avo.get_policy_operator()(td.clone()).keys())
    assert "action" in policy_keys and "state_value" not in policy_keys
    value_keys = set(avo.get_value_operator()(td.clone()).keys())
    assert "state_value" in value_keys and "action" not in value_keys
    assert avo.get_policy_head() is head and avo.get_value_head() is value
    assert avo.get_policy_operator().in_keys == ["observation"]


@pytest.mark.parametrize("loss_class", [ClipPPOLoss, A2CLoss])
def test_actor_value_operator_trains_the_shared_trunk(loss_class):
    trunk, head, value = _heads()
    avo = ActorValueOperator(trunk, head, value)
    loss = loss_class(avo.get_policy_operator(), avo.get_value_operator())
    with set_interaction_type(InteractionType.RANDOM):
        batch = avo(TensorDict({"observation": torch.randn(6, 4)}, [6])).detach()
    batch["advantage"] = torch.randn(6, 1)
    batch["value_target"] = torch.randn(6, 1)
    out = loss(batch)
    sum(v for k, v in out.items() if k.startswith("loss_")).backward()
    assert trunk.module.weight.grad is not None and trunk.module.weight.grad.abs().sum() > 0
    assert value.module.weight.grad is not None


def test_actor_critic_operator_and_wrapper():
    trunk, head, value = _heads()
    critic = ValueOperator(MLP(in_features=6, out_features=1, num_cells=[]), ["hidden", "action"])
    aco = ActorCriticOperator(trunk, head, critic)
    td = TensorDict({"observation": torch.randn(3, 4)}, [3])
    assert "state_action_value" in aco.get_critic_operator()(td.clone()).keys()
    assert aco.get_critic_operator() is aco
    with pytest.raises(RuntimeError, match="get_critic_operator"):
        aco.get_value_operator()
    with pytest.raises(RuntimeError, match="state_value"):
        ActorCriticOperator(trunk, head, value)
    plain = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(nn.Linear(4, 4), NormalParamExtractor()),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
    )
    state_value = ValueOperator(nn.Linear(4, 1), in_keys=["observation"])
    acw = ActorCriticWrapper(plain, state_value)
    assert {"action", "state_value"} <= set(acw(td.clone()).keys())
    assert acw.get_policy_operator() is plain and acw.get_value_head() is state_value


def test_ou_module_pickles_with_its_state():
    spec = Bounded(-1.0, 1.0, torch.Size([2]))
    ou = OrnsteinUhlenbeckProcessModule(spec, annealing_num_steps=4)
    ou.step(2)
    copy = pickle.loads(pickle.dumps(ou))
    assert copy.eps.item() == pytest.approx(ou.eps.item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy(TensorDict({"action": torch.zeros(2, 2), "is_init": torch.ones(2, 1).bool()}, [2]))


def test_exploration_modules_read_composite_specs_at_the_action_key():
    spec = Bounded(-1.0, 1.0, torch.Size([2]))
    gaussian = AdditiveGaussianModule(Composite(action=spec), sigma_init=5.0)
    td = gaussian(TensorDict({"action": torch.full((50, 2), 0.99)}, [50]))
    assert td["action"].abs().max() <= 1.0
    greedy = EGreedyModule(Composite(action=OneHot(3)), eps_init=1.0)
    td = greedy(TensorDict({"action": torch.zeros(20, 3, dtype=torch.bool)}, [20]))
    assert td["action"].sum(-1).tolist() == [1] * 20


def test_egreedy_action_mask_draws_allowed_actions_only():
    torch.manual_seed(0)
    greedy = EGreedyModule(OneHot(4), eps_init=1.0, action_mask_key="action_mask")
    assert greedy.in_keys == ["action", "action_mask"]
    mask = torch.tensor([[False, True, False, True]]).expand(200, 4)
    td = TensorDict({"action": torch.zeros(200, 4, dtype=torch.bool), "action_mask": mask}, [200])
    chosen = greedy(td)["action"].long().argmax(-1)
    assert set(chosen.tolist()) == {1, 3}


def test_ou_noise_state_travels_through_a_collector():
    from rl_trainers.collectors import SyncDataCollector
    from rl_trainers.envs import GymEnv, InitTracker, TransformedEnv

    env = TransformedEnv(GymEnv("Pendulum-v1", num_envs=2), InitTracker())
    actor = Actor(MLP(in_features=3, out_features=1, num_cells=[8]), spec=env.action_spec)
    policy = TensorDictSequential(actor, OrnsteinUhlenbeckProcessModule(spec=env.action_spec))
    collector = SyncDataCollector(env, policy, frames_per_batch=10, total_frames=20)
    steps = [batch["_ou_steps"][0].tolist() for batch in collector]
    collector.shutdown()
    assert steps == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]


def test_add_state_independent_normal_scale_as_in_torchrl_ppo():
    net = nn.Sequential(
        MLP(in_features=3, out_features=2, num_cells=[8]),
        AddStateIndependentNormalScale(2, scale_lb=1e-8),
    )
    loc, scale = net(torch.randn(5, 3))
    assert loc.shape == scale.shape == (5, 2)
    assert torch.allclose(scale, torch.ones(5, 2))  # exp(0)
    scale.sum().backward()
    assert all(p.grad is not None for p in net[1].parameters())
    softplus = AddStateIndependentNormalScale(2, scale_mapping="biased_softplus_1.0")
    assert torch.allclose(softplus(torch.zeros(1, 2))[1], torch.ones(1, 2), atol=1e-5)


def test_safe_actors_project_onto_the_spec_and_accept_torchrl_options():
    spec = Bounded(-1.0, 1.0, torch.Size([2]))
    obs = TensorDict({"observation": torch.randn(6, 3) * 100}, [6])
    actor = Actor(nn.Linear(3, 2), spec=spec, safe=True)
    assert actor(obs.clone())["action"].abs().max() <= 1
    net = TensorDictModule(
        nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()), ["observation"], ["loc", "scale"]
    )
    from rl_trainers.modules import IndependentNormal

    prob = ProbabilisticActor(
        net,
        in_keys=["loc", "scale"],
        spec=spec,
        distribution_class=IndependentNormal,
        safe=True,
        cache_dist=True,
        n_empirical_estimate=10,
    )
    assert prob(obs.clone())["action"].abs().max() <= 1
    dist = TanhNormal(torch.zeros(2), torch.ones(2), low=-2.0, high=2.0, safe_tanh=False)
    assert dist.sample().abs().max() <= 2


def test_safe_probabilistic_sequence_feeds_the_losses():
    from rl_trainers.modules import (
        SafeProbabilisticModule,
        SafeProbabilisticTensorDictSequential,
    )

    net = TensorDictModule(
        nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()), ["observation"], ["loc", "scale"]
    )
    head = SafeProbabilisticModule(
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )
    actor = SafeProbabilisticTensorDictSequential(net, head)
    assert actor.in_keys == ["observation"]
    with set_interaction_type(InteractionType.RANDOM):
        batch = actor(TensorDict({"observation": torch.randn(6, 3)}, [6])).detach()
    assert {"action", "sample_log_prob"} <= set(batch.keys())
    batch["advantage"] = torch.randn(6, 1)
    loss = ClipPPOLoss(actor, entropy_bonus=False)
    loss(batch)["loss_objective"].backward()
    assert net.module[0].weight.grad is not None
    with pytest.raises(TypeError, match="probabilistic"):
        SafeProbabilisticTensorDictSequential(net, TensorDictModule(nn.Identity(), ["loc"], ["x"]))


def test_masked_categorical_samples_allowed_actions_in_an_actor():
    from rl_trainers.modules import MaskedCategorical, MaskedOneHotCategorical

    torch.manual_seed(0)
    mask = torch.tensor([[True, False, True, False]]).expand(300, 4)
    dist = MaskedCategorical(logits=torch.zeros(300, 4), mask=mask)
    assert set(dist.sample().tolist()) == {0, 2}
    assert dist.entropy()[0].item() == pytest.approx(float(torch.log(torch.tensor(2.0))))
    assert dist.log_prob(torch.ones(300, dtype=torch.long))[0] == float("-inf")
    hot = MaskedOneHotCategorical(probs=torch.full((300, 4), 0.25), mask=mask)
    assert hot.sample()[:, [1, 3]].sum() == 0
    actor = ProbabilisticActor(
        TensorDictModule(nn.Linear(3, 4), ["observation"], ["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"},
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    assert actor.in_keys == ["observation", "action_mask"]
    with set_interaction_type(InteractionType.RANDOM):
        td = actor(TensorDict({"observation": torch.randn(300, 3), "action_mask": mask}, [300]))
    assert set(td["action"].tolist()) == {0, 2}
    assert td["sample_log_prob"].isfinite().all()
    with pytest.raises(ValueError, match="mask"):
        MaskedCategorical(logits=torch.zeros(2, 4))


def test_probabilistic_actor_reads_a_composite_spec_at_the_action_key():
    from rl_trainers.modules import OneHotCategorical

    spec = OneHot(3)  # bool one-hot actions, as a gymnasium Discrete space gives
    actor = ProbabilisticActor(
        TensorDictModule(nn.Linear(4, 3), ["observation"], ["logits"]),
        in_keys=["logits"],
        spec=Composite(action=spec),
        distribution_class=OneHotCategorical,
    )
    td = actor(TensorDict({"observation": torch.randn(5, 4)}, [5]))
    assert td["action"].dtype == spec.dtype


def test_tanh_normal_positional_arguments_in_torchrl_order():
    # torchrl: TanhNormal(loc, scale, upscale, low, high, event_dims, tanh_loc, safe_tanh)
    loc = torch.full((4, 2), 100.0)
    dist = TanhNormal(loc, torch.ones(4, 2), 5.0, -2.0, 3.0, 1, True)
    assert torch.allclose(dist.mode, torch.full((4, 2), 0.5 + 2.5 * torch.tanh(torch.tensor(5.0))))
    assert dist.log_prob(dist.mode).shape == (4,)
    assert TanhNormal(torch.zeros(()), torch.ones(())).log_prob(torch.zeros(())).shape == ()


def test_egreedy_keeps_the_action_shape_of_a_shaped_categorical_spec():
    from rl_trainers.envs.specs import Categorical

    greedy = EGreedyModule(Categorical(4, shape=(1,)), eps_init=1.0)
    td = greedy(TensorDict({"action": torch.zeros(3, 1, dtype=torch.long)}, [3]))
    assert td["action"].shape == (3, 1)


def test_noisy_linear_in_an_mlp_redraws_noise_and_is_its_mean_in_eval():
    from rl_trainers.modules import NoisyLinear, reset_noise

    torch.manual_seed(0)
    net = MLP(in_features=3, out_features=2, num_cells=[8], layer_class=NoisyLinear)
    x = torch.randn(4, 3)
    first = net(x).detach()
    net.apply(reset_noise)
    out = net(x)
    assert not torch.allclose(first, out)
    out.sum().backward()
    layer = net[0]
    assert layer.weight_sigma.grad is not None and layer.weight_mu.grad is not None
    net.eval()
    mean = nn.functional.linear(x, layer.weight_mu, layer.bias_mu)
    torch.testing.assert_close(net[0](x), mean)
    assert NoisyLinear(3, 2, bias=False).bias is None


def test_independent_normal_takes_torchrl_arguments():
    from rl_trainers.modules import IndependentNormal

    loc, scale = torch.full((4, 2, 3), 100.0), torch.ones(4, 2, 3)
    dist = IndependentNormal(loc, scale, upscale=5.0, tanh_loc=True, event_dim=2)
    assert torch.allclose(dist.mode, torch.full((4, 2, 3), 5.0))
    assert dist.log_prob(dist.mode).shape == (4,) and dist.entropy().shape == (4,)
    assert dist.batch_shape == (4,)
    ref = torch.distributions.Independent(torch.distributions.Normal(dist.mode, scale), 2)
    torch.testing.assert_close(
        dist.log_prob(torch.zeros(4, 2, 3)), ref.log_prob(torch.zeros(4, 2, 3))
    )
    torch.testing.assert_close(dist.entropy(), ref.entropy())
