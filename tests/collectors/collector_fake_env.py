"""A tiny deterministic batched env following the env contract (docs/architecture.md)."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase


class _ActionSpec:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = torch.Size(shape)

    def rand(self, shape=()) -> torch.Tensor:
        return torch.randint(0, 2, (*shape, *self.shape)).float()


class CountingEnv:
    """Sub-env ``i`` ends its episodes after ``lengths[i]`` steps.

    The observation is ``1000 * episode_index + step_in_episode`` so tests can tell final
    from reset observations. Episodes end by truncation when ``truncate`` else termination.
    ``fail_after`` raises inside ``step`` after that many steps (for worker-error tests).
    """

    def __init__(self, lengths=(3, 5), truncate=False, fail_after=None, batched=True):
        self.lengths = torch.tensor(lengths)
        self.n = len(lengths)
        self.batched = batched
        self.batch_size = torch.Size([self.n]) if batched else torch.Size([])
        self.action_spec = _ActionSpec((*self.batch_size, 1))
        self.truncate = truncate
        self.fail_after = fail_after
        self.total_steps = 0
        self.is_closed = False
        self.seed = None
        self._step = torch.zeros(self.n, dtype=torch.long)
        self._episode = torch.zeros(self.n, dtype=torch.long)

    def _shape(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.batched else x.reshape(x.shape[1:])

    def _obs(self) -> torch.Tensor:
        return self._shape((1000 * self._episode + self._step).float().unsqueeze(-1))

    def _flags(self, done: torch.Tensor) -> dict:
        done = self._shape(done.unsqueeze(-1))
        zeros = torch.zeros_like(done)
        return {
            "done": done,
            "terminated": zeros if self.truncate else done,
            "truncated": done if self.truncate else zeros,
        }

    def reset(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        if tensordict is None or "_reset" not in tensordict.keys():
            mask = torch.ones(self.n, dtype=torch.bool)
            self._episode += 1
        else:
            mask = tensordict.get("_reset").reshape(self.n)
            self._episode[mask] += 1
        self._step[mask] = 0
        out = TensorDict(
            {"observation": self._obs(), **self._flags(torch.zeros(self.n, dtype=torch.bool))},
            batch_size=self.batch_size,
        )
        if tensordict is not None:
            for key in tensordict.keys():
                if key not in out.keys() and key not in ("_reset", "next", "action"):
                    out.set(key, tensordict.get(key))
        return out

    def step_and_maybe_reset(self, tensordict: TensorDictBase):
        self.total_steps += 1
        if self.fail_after is not None and self.total_steps > self.fail_after:
            raise ValueError("CountingEnv exploded on purpose")
        self._step += 1
        done = self._step >= self.lengths
        reward = self._shape(torch.ones(self.n, 1))
        nxt = TensorDict(
            {"observation": self._obs(), "reward": reward, **self._flags(done)},
            batch_size=self.batch_size,
        )
        tensordict.set("next", nxt)
        next_input = nxt.exclude("reward").clone()
        for key in ("collector",):
            if key in tensordict.keys():
                next_input.set(key, tensordict.get(key))
        if done.any():
            next_input.set("_reset", self._shape(done.unsqueeze(-1)))
            next_input = self.reset(next_input)
        return tensordict, next_input

    def set_seed(self, seed: int) -> int:
        self.seed = seed
        return seed + self.n

    def state_dict(self) -> dict:
        return {"total_steps": self.total_steps}

    def load_state_dict(self, state_dict: dict) -> None:
        self.total_steps = state_dict["total_steps"]

    def close(self) -> None:
        self.is_closed = True
