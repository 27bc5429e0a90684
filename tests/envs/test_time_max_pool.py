"""``TimeMaxPool``: max of each entry over the last ``T`` steps, on single and batched envs."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.envs import (
    EnvBase,
    GymEnv,
    SerialEnv,
    TimeMaxPool,
    TransformedEnv,
    check_env_specs,
    step_mdp,
)
from rl_trainers.envs.specs import Composite, Unbounded

# observation of sub-env i at step t of its episode (t = 0 is the reset)
SCRIPTS = [
    [-1.0, 3.0, -2.0, 1.0, 0.5, 4.0, -3.0, 2.0],
    [2.0, -1.0, -1.0, 5.0, -4.0, -4.0, -4.0, 1.0],
]


class ScriptedEnv(EnvBase):
    """Sub-env ``i`` plays ``SCRIPTS[i]`` (``obs = [x, -x]``) and is done after ``length``
    steps."""

    def __init__(self, n: int = 2, length: int = 100) -> None:
        super().__init__(batch_size=(n,) if n else ())
        b = self.batch_size
        self.observation_spec = Composite(observation=Unbounded((*b, 2)), shape=b)
        self.action_spec = Unbounded((*b, 1))
        self.scripts = torch.tensor(SCRIPTS[: max(n, 1)])
        self.t = torch.zeros(max(n, 1), dtype=torch.long)
        self.length = length

    def _obs(self):
        x = self.scripts[torch.arange(len(self.t)), self.t % self.scripts.shape[1]]
        obs = torch.stack([x, -x], -1)
        return obs.reshape(*self.batch_size, 2)

    def _reset(self, tensordict):
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None:
            self.t.zero_()
        else:
            self.t[mask.reshape(-1)] = 0
        return TensorDict({"observation": self._obs()}, self.batch_size)

    def _step(self, tensordict):
        self.t += 1
        done = (self.t >= self.length).reshape(*self.batch_size, 1)
        reward = torch.zeros(*self.batch_size, 1)
        return TensorDict(
            {"observation": self._obs(), "reward": reward, "done": done}, self.batch_size
        )

    def _set_seed(self, seed):
        pass


def _pooled(script: list[float], T: int, steps: int) -> list[float]:
    """Hand formula: max(0 padding, last T values of the episode) at each step."""
    out = []
    for t in range(steps + 1):
        window = script[max(0, t - T + 1) : t + 1]
        if len(window) < T:
            window = [*window, 0.0]
        out.append(max(window))
    return out


def test_single_env_values_and_signature():
    env = TransformedEnv(ScriptedEnv(n=0), TimeMaxPool(in_keys=["observation"], T=3))
    td = env.rollout(7)
    expected = _pooled(SCRIPTS[0], 3, 7)
    assert td["observation"][:, 0].tolist() == expected[:7]
    assert td["next", "observation"][:, 0].tolist() == expected[1:]
    neg = [-x for x in SCRIPTS[0]]
    assert td["next", "observation"][:, 1].tolist() == _pooled(neg, 3, 7)[1:]
    check_env_specs(env)


def test_out_keys_keep_the_raw_observation():
    t = TimeMaxPool(in_keys=["observation"], out_keys=["pooled"], T=2)
    env = TransformedEnv(ScriptedEnv(n=2), t)
    assert env.observation_spec["pooled"].shape == (2, 2)
    td = env.rollout(5)
    assert td["next", "observation"][0, :, 0].tolist() == SCRIPTS[0][1:6]
    assert td["next", "pooled"][0, :, 0].tolist() == _pooled(SCRIPTS[0], 2, 5)[1:]
    assert td["next", "pooled"][1, :, 0].tolist() == _pooled(SCRIPTS[1], 2, 5)[1:]


def test_batched_env_partial_resets_restart_only_the_finished_sub_env():
    base = ScriptedEnv(n=2, length=4)
    env = TransformedEnv(base, TimeMaxPool(T=3))
    td = env.reset()
    rows = [[], []]
    for _ in range(3):
        env.rand_action(td)
        td = env.step(td)
        nxt = td["next"]
        for i in range(2):
            rows[i].append(nxt["observation"][i, 0].item())
        td = step_mdp(td)
    # sub-env 1 alone is reset (as a collector does for a finished sub-env)
    td.set("_reset", torch.tensor([[False], [True]]))
    td = env.reset(td)
    assert td["observation"][0, 0].item() == rows[0][-1]  # untouched
    assert td["observation"][1, 0].item() == max(SCRIPTS[1][0], 0.0)  # fresh window
    env.rand_action(td)
    td = env.step(td)
    assert td["next", "observation"][0, 0].item() == _pooled(SCRIPTS[0], 3, 4)[4]
    assert td["next", "observation"][1, 0].item() == _pooled(SCRIPTS[1], 3, 1)[1]


def test_rollout_with_auto_reset_of_finished_sub_envs():
    env = TransformedEnv(ScriptedEnv(n=2, length=4), TimeMaxPool(T=2))
    td = env.rollout(8, break_when_any_done=False)
    # episodes of 4 steps: the window restarts from the reset observation
    per_episode = _pooled(SCRIPTS[0], 2, 4)
    assert td["next", "observation"][0, :, 0].tolist() == per_episode[1:] * 2
    assert td["observation"][0, 4, 0].item() == per_episode[0]


def test_errors_users_see():
    with pytest.raises(ValueError, match="greater or equal to one"):
        TimeMaxPool(T=0)
    env = TransformedEnv(ScriptedEnv(n=0), TimeMaxPool(T=2))
    with pytest.raises(NotImplementedError, match="cannot be called independently"):
        env.transform(TensorDict({"observation": torch.zeros(3, 2)}, [3]))
    with pytest.raises(KeyError, match="pixels"):
        TransformedEnv(ScriptedEnv(n=0), TimeMaxPool(["pixels"], T=2)).reset()


def test_gym_envs_single_and_serial():
    env = TransformedEnv(GymEnv("Pendulum-v1"), TimeMaxPool(in_keys=["observation"], T=4))
    env.set_seed(0)
    td = env.rollout(10)
    raw = TransformedEnv(GymEnv("Pendulum-v1"), TimeMaxPool(["observation"], ["pool"], T=4))
    raw.set_seed(0)
    ref = raw.rollout(10)
    obs = torch.cat([ref["observation"][:1], ref["next", "observation"]])
    padded = torch.cat([torch.zeros(3, 3), obs])
    expected = torch.stack([padded[t : t + 4].amax(0) for t in range(11)])
    assert torch.allclose(ref["pool"], expected[:10])
    assert torch.allclose(td["next", "observation"], expected[1:])
    serial = TransformedEnv(SerialEnv(2, lambda: GymEnv("Pendulum-v1")), TimeMaxPool(T=3))
    out = serial.rollout(5)
    assert out["next", "observation"].shape == (2, 5, 3)
    check_env_specs(serial)
    serial.close()
