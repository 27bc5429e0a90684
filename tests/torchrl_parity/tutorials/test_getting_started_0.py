"""torchrl's "Get started with Environments, TED and transforms" (getting-started-0), ported.

The tutorial's code runs as written with ``torchrl`` replaced by ``rl_trainers``; the
asserts check what the tutorial prints and says about each step.
"""

from __future__ import annotations

import torch

from rl_trainers.envs import GymEnv

FLAGS = {"done", "terminated", "truncated"}


def test_getting_started_0_env_api_ted_and_step_counter():
    torch.manual_seed(0)
    env = GymEnv("Pendulum-v1")

    reset = env.reset()
    print(reset)
    assert set(reset.keys()) == {"observation", *FLAGS}
    assert reset["observation"].shape == (3,) and not reset["done"].any()

    # Now let's take a random action in the action space. First, sample the action:
    reset_with_action = env.rand_action(reset)
    print(reset_with_action)
    print(reset_with_action["action"])
    assert reset_with_action["action"].shape == (1,)
    assert env.action_spec.is_in(reset_with_action["action"])

    stepped_data = env.step(reset_with_action)
    print(stepped_data)
    # identical to the previous one, plus a "next" entry holding the step's results
    assert set(stepped_data["next"].keys()) == {"observation", "reward", *FLAGS}
    assert stepped_data["next", "reward"].shape == (1,)
    torch.testing.assert_close(stepped_data["observation"], reset["observation"])

    from rl_trainers.envs import step_mdp

    data = step_mdp(stepped_data)
    print(data)
    # the root of the next step: the observation after the action, no action nor reward
    assert set(data.keys()) == {"observation", *FLAGS}
    torch.testing.assert_close(data["observation"], stepped_data["next", "observation"])

    rollout = env.rollout(max_steps=10)
    print(rollout)
    assert rollout.batch_size == (10,)

    transition = rollout[3]
    print(transition)
    assert transition.batch_size == ()
    # TED: the "next" observation of step t is the root observation of step t + 1
    torch.testing.assert_close(transition["next", "observation"], rollout[4]["observation"])
    torch.testing.assert_close(rollout["next", "observation"][:-1], rollout["observation"][1:])

    from rl_trainers.envs import StepCounter, TransformedEnv

    transformed_env = TransformedEnv(env, StepCounter(max_steps=10))
    rollout = transformed_env.rollout(max_steps=100)
    print(rollout)
    # truncated after 10 steps, not the 100 asked for
    assert rollout.batch_size == (10,)
    assert rollout["step_count"].squeeze(-1).tolist() == list(range(10))
    assert rollout["next", "step_count"].squeeze(-1).tolist() == list(range(1, 11))

    print(rollout["next", "truncated"])
    truncated = rollout["next", "truncated"].squeeze(-1)
    assert truncated.tolist() == [False] * 9 + [True]
    assert not rollout["next", "terminated"].any()
    assert torch.equal(rollout["next", "done"], rollout["next", "truncated"])
