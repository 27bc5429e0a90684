"""gSDE: the distribution the update scores, the actions exploration takes, when the noise
is redrawn, and the PPO step's gradients."""

from __future__ import annotations

import copy

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from rl_trainers.envs.specs import Bounded, Composite, Unbounded
from rl_trainers.modules import make_gsde_actor, make_value
from rl_trainers.objectives import ClipPPOLoss

NUM_ENVS, OBS, ACT = 3, 4, 2


def specs(num_envs: int = NUM_ENVS):
    obs = Composite(observation=Unbounded(shape=(num_envs, OBS)), shape=(num_envs,))
    act = Bounded(low=-2.0, high=2.0, shape=(num_envs, ACT))
    return obs, act


def actor(sample_freq: int = -1, log_std_init: float = -1.0, num_envs: int = NUM_ENVS):
    torch.manual_seed(0)
    obs, act = specs(num_envs)
    return make_gsde_actor(
        obs, act, num_cells=[8, 5], log_std_init=log_std_init, sample_freq=sample_freq
    )


def observations(n: int = NUM_ENVS, seed: int = 1) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    return TensorDict({"observation": torch.randn(n, OBS, generator=g)}, batch_size=[n])


def latent_and_mean(policy, td):
    net = policy.noise_net
    z = net.body(td["observation"])
    return z, net.mean(z)


def test_log_prob_and_entropy_are_the_normal_with_the_gsde_variance():
    policy = actor()
    with torch.no_grad():
        policy.noise_net.log_std.uniform_(-2.0, 0.5)  # a different std per entry
    td = observations(7)
    z, mean = latent_and_mean(policy, td)
    std = policy.noise_net.log_std.exp()
    expected = torch.distributions.Normal(mean, ((z**2) @ std**2 + 1e-6).sqrt())
    action = torch.randn(7, ACT)

    dist = policy.get_dist(td)

    torch.testing.assert_close(dist.log_prob(action), expected.log_prob(action).sum(-1))
    torch.testing.assert_close(dist.entropy(), expected.entropy().sum(-1))


def test_the_scale_does_not_backpropagate_into_the_latent():
    policy = actor()
    td = observations()
    policy.get_dist(td).scale.sum().backward()
    assert policy.noise_net.log_std.grad.abs().sum() > 0
    assert all(p.grad is None for p in policy.noise_net.body.parameters())


def test_a_sampled_action_is_the_mean_plus_the_latent_times_its_envs_noise():
    policy = actor()
    td = observations()
    with set_interaction_type(InteractionType.RANDOM), torch.no_grad():
        out = policy(td.clone())
        z, mean = latent_and_mean(policy, td)
    noise = policy.sde_noise  # [num_envs, L, A]: one matrix per sub-env
    assert noise.shape == (NUM_ENVS, 5, ACT)
    expected = mean + torch.einsum("el,ela->ea", z, noise)
    torch.testing.assert_close(out["action"], expected)
    torch.testing.assert_close(out["sample_log_prob"], policy.get_dist(td).log_prob(expected))


def test_noise_is_drawn_with_the_learned_std():
    policy = actor(log_std_init=-1.5, num_envs=2000)
    std = policy.sde_noise.std(dim=0)
    torch.testing.assert_close(
        std, torch.full_like(std, torch.tensor(-1.5).exp()), rtol=0.05, atol=0
    )


def test_deterministic_interaction_acts_with_the_mean():
    policy = actor()
    td = observations()
    with set_interaction_type(InteractionType.DETERMINISTIC), torch.no_grad():
        out = policy(td.clone())
        _, mean = latent_and_mean(policy, td)
    torch.testing.assert_close(out["action"], mean)


def noise_per_step(policy, steps: int) -> list[torch.Tensor]:
    seen = []
    with set_interaction_type(InteractionType.RANDOM), torch.no_grad():
        for t in range(steps):
            policy(observations(seed=t))
            seen.append(policy.sde_noise.clone())
    return seen


def test_noise_stays_fixed_within_a_batch_without_sample_freq():
    policy = actor(sample_freq=-1)
    first = policy.sde_noise.clone()
    seen = noise_per_step(policy, 10)
    assert all(torch.equal(n, first) for n in seen)
    policy.reset_noise()  # the trainer's batch start
    assert not torch.equal(policy.sde_noise, first)


def test_noise_is_redrawn_every_sample_freq_steps_and_at_reset():
    policy = actor(sample_freq=3)
    first = policy.sde_noise.clone()
    seen = noise_per_step(policy, 7)
    # steps 0-2 act with the first draw, 3-5 with a second, 6 with a third
    assert all(torch.equal(n, first) for n in seen[:3])
    assert torch.equal(seen[3], seen[4]) and torch.equal(seen[4], seen[5])
    assert not torch.equal(seen[3], first) and not torch.equal(seen[6], seen[5])
    policy.reset_noise()  # a new batch restarts the count
    after = noise_per_step(policy, 3)
    assert all(torch.equal(n, after[0]) for n in after)
    assert not torch.equal(after[0], seen[6])


def test_noise_comes_from_the_torch_rng():
    a, b = actor(sample_freq=2), actor(sample_freq=2)
    torch.manual_seed(5)
    na = noise_per_step(a, 5)
    torch.manual_seed(5)
    nb = noise_per_step(b, 5)
    assert all(torch.equal(x, y) for x, y in zip(na, nb, strict=True))


def test_noise_and_step_count_are_in_the_state_dict():
    policy = actor(sample_freq=4)
    noise_per_step(policy, 2)
    clone = actor(sample_freq=4)
    clone.load_state_dict(policy.state_dict())
    torch.manual_seed(3)
    na = noise_per_step(policy, 5)
    torch.manual_seed(3)
    nb = noise_per_step(clone, 5)
    assert all(torch.equal(x, y) for x, y in zip(na, nb, strict=True))


def test_evaluations_and_other_batch_shapes_sample_without_touching_the_envs_noise():
    policy = actor(sample_freq=2)
    noise_per_step(policy, 1)
    noise, steps = policy.sde_noise.clone(), int(policy.sde_steps)
    with set_interaction_type(InteractionType.RANDOM), torch.no_grad():
        other = policy(observations(5))
        evaluations = [policy.act_with_fresh_noise(observations(seed=1)) for _ in range(3)]
    assert other["action"].shape == (5, ACT)
    assert torch.equal(policy.sde_noise, noise) and int(policy.sde_steps) == steps
    # a new noise matrix at every evaluation step
    assert not torch.equal(evaluations[0]["action"], evaluations[1]["action"])


def ppo_batch(policy, n: int = 16) -> TensorDict:
    td = observations(n, seed=9)
    with torch.no_grad():
        policy(td)
    g = torch.Generator().manual_seed(2)
    td["action"] = td["loc"] + 0.3 * torch.randn(n, ACT, generator=g)
    with torch.no_grad():
        td["sample_log_prob"] = policy.get_dist(td).log_prob(td["action"]) - 0.1
    td["advantage"] = torch.randn(n, 1, generator=g)
    td["value_target"] = torch.randn(n, 1, generator=g)
    return td


def test_a_ppo_steps_gradients_are_those_of_forward_and_backward():
    policy = actor()
    obs, _ = specs()
    critic = make_value(obs, num_cells=[8])
    loss = ClipPPOLoss(policy, critic, entropy_coef=0.01)
    batch = ppo_batch(policy)
    reference = copy.deepcopy(loss)
    losses = reference(batch.clone())
    sum(v for k, v in losses.items() if k.startswith("loss_")).backward()
    expected = {k: p.grad for k, p in reference.named_parameters()}

    fast = loss.loss_and_grads(batch.clone())  # what the trainer tries first
    if fast is None:  # not supported: the trainer calls forward() and backward()
        losses = loss(batch.clone())
        sum(v for k, v in losses.items() if k.startswith("loss_")).backward()

    assert expected["actor_network.module.module.log_std"].abs().sum() > 0
    for name, param in loss.named_parameters():
        torch.testing.assert_close(param.grad, expected[name], msg=name)
