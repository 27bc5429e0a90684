"""``EnvBase.rollout(break_when_all_done=True)``: torchrl's rule for batched envs."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.envs import EnvBase, GymEnv, SerialEnv, StepCounter, TransformedEnv
from rl_trainers.envs.specs import Composite, Unbounded


class CountingEnv(EnvBase):
    """Sub-env ``i`` counts up and is done after ``lengths[i]`` steps."""

    def __init__(self, lengths: list[int]) -> None:
        super().__init__(batch_size=(len(lengths),))
        self.lengths = torch.tensor(lengths).unsqueeze(-1)
        b = self.batch_size
        self.observation_spec = Composite(count=Unbounded((*b, 1), dtype=torch.int64), shape=b)
        self.action_spec = Unbounded((*b, 1))
        self.count = torch.zeros(*b, 1, dtype=torch.int64)
        self.resets = 0

    def _reset(self, tensordict):
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None:
            self.count.zero_()
        else:
            self.resets += int(mask.sum())
            self.count[mask] = 0
        return TensorDict({"count": self.count.clone()}, self.batch_size)

    def _step(self, tensordict):
        self.count += 1
        done = self.count >= self.lengths
        reward = torch.ones(*self.batch_size, 1)
        return TensorDict(
            {"count": self.count.clone(), "reward": reward, "done": done}, self.batch_size
        )

    def _set_seed(self, seed):
        pass


def test_batched_rollout_runs_until_every_sub_env_is_done():
    env = CountingEnv([2, 5, 3])
    td = env.rollout(100, break_when_all_done=True)
    assert td.batch_size == (3, 5)
    # each row is the first episode of its sub-env, its done step repeated afterwards
    assert td["next", "count"].squeeze(-1).tolist() == [
        [1, 2, 2, 2, 2],
        [1, 2, 3, 4, 5],
        [1, 2, 3, 3, 3],
    ]
    assert td["count"].squeeze(-1).tolist() == [[0, 1, 1, 1, 1], [0, 1, 2, 3, 4], [0, 1, 2, 2, 2]]
    assert td["next", "done"].squeeze(-1).tolist() == [
        [False, True, True, True, True],
        [False, False, False, False, True],
        [False, False, True, True, True],
    ]
    assert td["next", "reward"].sum().item() == 15


def test_max_steps_caps_the_rollout():
    td = CountingEnv([2, 9]).rollout(4, break_when_all_done=True)
    assert td["next", "count"].squeeze(-1).tolist() == [[1, 2, 2, 2], [1, 2, 3, 4]]


def test_default_break_when_any_done_still_stops_at_the_first_done():
    td = CountingEnv([2, 5]).rollout(100)
    assert td.batch_size == (2, 2)


def test_both_flags_true_raise_torchrl_type_error():
    with pytest.raises(TypeError, match="break_when_all_done and break_when_any_done"):
        CountingEnv([2]).rollout(5, break_when_any_done=True, break_when_all_done=True)


def test_gym_vector_env_rollout_until_all_done():
    env = TransformedEnv(GymEnv("CartPole-v1", num_envs=3), StepCounter())
    env.set_seed(0)
    td = env.rollout(500, break_when_all_done=True)
    done = td["next", "done"].squeeze(-1)
    assert done[:, -1].all()
    first = done.float().argmax(-1)  # each sub-env's first done step
    assert int(first.max()) == td.shape[1] - 1
    steps = td["next", "step_count"].squeeze(-1)
    for i in range(3):
        k = int(first[i])
        assert done[i, k:].all() and not done[i, :k].any()
        # one episode per row: counts 1..k+1, then the done step repeated
        assert steps[i, : k + 1].tolist() == list(range(1, k + 2))
        assert (steps[i, k:] == k + 1).all()
    env.close()


def test_serial_env_and_single_env():
    env = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    env.set_seed(1)
    td = env.rollout(500, break_when_all_done=True)
    assert td["next", "done"][:, -1].all()
    env.close()
    single = GymEnv("CartPole-v1")
    single.set_seed(0)
    td = single.rollout(500, break_when_all_done=True)
    assert td["next", "done"][-1].item() and not td["next", "done"][:-1].any()


def test_auto_reset_false_resets_the_done_sub_envs_of_the_given_input():
    from rl_trainers.envs import step_mdp

    env = CountingEnv([2, 5])
    first = env.rollout(100)  # stops when sub-env 0 is done
    assert first["next", "done"][:, -1].squeeze(-1).tolist() == [True, False]
    more = env.rollout(3, auto_reset=False, tensordict=step_mdp(first[..., -1]))
    # torchrl's maybe_reset: the done sub-env starts a new episode, the other continues
    assert more["count"].squeeze(-1).tolist() == [[0, 1], [2, 3]]
    assert env.resets == 1


def test_auto_reset_false_on_a_finished_gym_episode_does_not_step_a_done_env():
    import warnings

    from rl_trainers.envs import step_mdp

    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
    env.set_seed(0)
    first = env.rollout(500)
    assert first["next", "done"][-1].item()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gymnasium warns when a terminated env is stepped
        more = env.rollout(3, auto_reset=False, tensordict=step_mdp(first[..., -1]))
    assert more["step_count"].squeeze(-1).tolist() == [0, 1, 2]
