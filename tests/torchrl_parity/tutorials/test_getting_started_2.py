"""torchrl's "Getting started with model optimization" (getting-started-2), ported.

DDPG's loss on a Pendulum rollout, the ``loss_*`` sum, one Adam step and a SoftUpdate of the
target parameters, as the tutorial writes them with ``torchrl`` replaced by ``rl_trainers``.
"""

from __future__ import annotations

import math

import torch


def test_getting_started_2_ddpg_loss_optimizer_and_soft_update():
    torch.manual_seed(0)
    from rl_trainers.envs import GymEnv

    env = GymEnv("Pendulum-v1")

    from rl_trainers.modules import MLP, Actor, ValueOperator
    from rl_trainers.objectives import DDPGLoss

    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.shape[-1]
    actor = Actor(MLP(in_features=n_obs, out_features=n_act, num_cells=[32, 32]))
    value_net = ValueOperator(
        MLP(in_features=n_obs + n_act, out_features=1, num_cells=[32, 32]),
        in_keys=["observation", "action"],
    )

    ddpg_loss = DDPGLoss(actor_network=actor, value_network=value_net)

    rollout = env.rollout(max_steps=100, policy=actor)
    loss_vals = ddpg_loss(rollout)
    print(loss_vals)
    assert rollout.batch_size == (100,)
    assert {"loss_actor", "loss_value"} <= set(loss_vals.keys())
    # only the loss values are differentiable: summing the "loss_" entries is the total loss
    for key, val in loss_vals.items():
        assert val.requires_grad == key.startswith("loss_"), key
        assert math.isfinite(val.float().mean().item()), key

    total_loss = 0
    for key, val in loss_vals.items():
        if key.startswith("loss_"):
            total_loss += val

    from torch.optim import Adam

    optim = Adam(ddpg_loss.parameters())
    total_loss.backward()
    # every parameter the loss trains gets a gradient (the actor's are the actor's own)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in ddpg_loss.parameters())
    assert all(p.grad is not None for p in actor.parameters())

    before = [p.detach().clone() for p in ddpg_loss.parameters()]
    optim.step()
    optim.zero_grad()
    assert all(not torch.equal(a, b) for a, b in zip(before, ddpg_loss.parameters()))

    from rl_trainers.objectives import SoftUpdate

    updater = SoftUpdate(ddpg_loss, eps=0.99)
    online, target = ddpg_loss.target_pairs()
    want = [0.99 * t.detach().clone() + 0.01 * o.detach() for o, t in zip(online, target)]
    assert any(not torch.allclose(o, t) for o, t in zip(online, target))  # targets lag

    updater.step()
    for got, expected in zip(ddpg_loss.target_pairs()[1], want):
        torch.testing.assert_close(got, expected)


def test_ddpg_loss_trains_the_value_network_it_was_given():
    torch.manual_seed(0)
    from rl_trainers.envs import GymEnv
    from rl_trainers.modules import MLP, Actor, ValueOperator
    from rl_trainers.objectives import DDPGLoss

    env = GymEnv("Pendulum-v1")
    actor = Actor(MLP(in_features=3, out_features=1, num_cells=[32, 32]))
    value_net = ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[32, 32]), in_keys=["observation", "action"]
    )
    ddpg_loss = DDPGLoss(actor_network=actor, value_network=value_net)
    loss_vals = ddpg_loss(env.rollout(max_steps=20, policy=actor))
    (loss_vals["loss_actor"] + loss_vals["loss_value"]).backward()
    before = [p.detach().clone() for p in value_net.parameters()]
    torch.optim.Adam(ddpg_loss.parameters()).step()
    # torchrl's DDPGLoss trains the critic module it was given
    assert all(not torch.equal(a, b) for a, b in zip(before, value_net.parameters()))
    td = env.rollout(max_steps=5, policy=actor)
    with torch.no_grad():
        q_loss = ddpg_loss.value_network_params(td["observation"], td["action"])[0]
        assert torch.equal(value_net(td)["state_action_value"], q_loss)
