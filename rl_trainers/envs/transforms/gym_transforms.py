"""Gymnasium-specific transforms: ``EndOfLifeTransform``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Categorical, Composite, Unbounded
from rl_trainers.envs.transforms.transforms import Key, Transform, TransformedEnv

__all__ = ["EndOfLifeTransform"]


def _innermost_env(env: Any) -> Any:
    while isinstance(env, TransformedEnv):
        env = env.base_env
    return env


def _follow(obj: Any, path: list[str]) -> Any:
    for name in path:
        obj = getattr(obj, name)
    return obj() if callable(obj) else obj


class EndOfLifeTransform(Transform):
    """Write an end-of-life flag for gymnasium envs with lives (Atari's ``ale.lives()``).

    After each step, ``("next", eol_key)`` is True where a life was lost (the lives count
    read from the gymnasium env dropped) or the episode ended (``done_key``).
    ``("next", lives_key)`` holds the lives count. The flag does not reset the env: pass it
    to a loss as its done/terminated signal, ``loss.set_keys(done="end-of-life",
    terminated="end-of-life")`` (or :meth:`register_keys`), as DeepMind's DQN does.

    Args:
        eol_key: the end-of-life entry.
        lives_key: the lives entry.
        done_key: the done entry of the env (its shape is the flag's).
        eol_attribute: dotted path to the lives in the gymnasium env, from the env built
            by ``GymEnv`` (``"unwrapped.ale.lives"``); a callable at the end is called.
            Batched ``GymEnv(..., num_envs=N)``/``SerialEnv`` envs read it in each sub-env.
    """

    def __init__(
        self,
        eol_key: Key = "end-of-life",
        lives_key: Key = "lives",
        done_key: Key = "done",
        eol_attribute: str = "unwrapped.ale.lives",
    ) -> None:
        super().__init__(in_keys=[done_key], out_keys=[eol_key])
        self.eol_key = eol_key
        self.lives_key = lives_key
        self.done_key = done_key
        self.eol_attribute = eol_attribute.split(".")

    # --- reading the lives ---------------------------------------------------------------
    def _base(self) -> tuple[Any, Any]:
        """The outer TransformedEnv and the innermost (gymnasium) env."""
        env = self._env()  # cheaper than self.parent, which rebuilds specs
        if env is None:
            raise RuntimeError("EndOfLifeTransform needs an env: use it inside a TransformedEnv.")
        return env, _innermost_env(env)

    def _get_lives(self) -> torch.Tensor:
        env, base = self._base()
        target = getattr(base, "env", base)  # GymWrapper: the gymnasium env it wraps
        path = ".".join(self.eol_attribute)
        try:
            if isinstance(target, gym.vector.SyncVectorEnv):
                values = [_follow(sub, self.eol_attribute) for sub in target.envs]
            elif isinstance(target, gym.vector.VectorEnv):
                raise TypeError(
                    f"EndOfLifeTransform cannot read {path!r} in the worker processes of "
                    f"{type(target).__name__} (ParallelEnv); use GymEnv(..., num_envs=N) or "
                    "a SerialEnv."
                )
            else:
                values = _follow(target, self.eol_attribute)
        except AttributeError as err:
            raise AttributeError(
                f"EndOfLifeTransform: the env has no lives at {path!r} ({err}); pass "
                "eol_attribute= the dotted path to them (e.g. 'unwrapped.ale.lives')."
            ) from err
        lives = torch.as_tensor(values, dtype=torch.int64, device=env.device)
        return lives.reshape(env.batch_size)

    def _done_shape(self, td: TensorDictBase) -> torch.Size:
        done = td.get(self.done_key, None)
        if done is not None:
            return done.shape
        env, _ = self._base()
        return env.full_done_spec[self.done_key].shape

    # --- env hooks -----------------------------------------------------------------------
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        lives = self._get_lives()
        done = next_tensordict.get(self.done_key, None)
        if done is None:
            raise KeyError(
                f"EndOfLifeTransform: done entry {self.done_key!r} not found; keys present: "
                f"{list(next_tensordict.keys(True, True))}. Pass done_key=."
            )
        previous = tensordict.get(self.lives_key, None)
        lost = torch.zeros_like(done) if previous is None else (previous > lives)
        lost = lost.reshape(*lost.shape, *([1] * (done.ndim - lost.ndim)))
        next_tensordict.set(self.eol_key, lost.expand_as(done) | done)
        next_tensordict.set(self.lives_key, lives)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = self._done_shape(tensordict_reset)
        tensordict_reset.set(
            self.eol_key,
            torch.zeros(shape, dtype=torch.bool, device=tensordict_reset.device),
        )
        tensordict_reset.set(self.lives_key, self._get_lives())
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "EndOfLifeTransform reads the lives from a running env; it cannot be applied "
            "to stored data. Use it inside a TransformedEnv."
        )

    # --- specs and losses ----------------------------------------------------------------
    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        bs, device = observation_spec.shape, observation_spec.device
        parent = self.parent
        if parent is not None and self.done_key in parent.full_done_spec.keys(True, True):
            observation_spec[self.eol_key] = parent.full_done_spec[self.done_key].clone()
        else:
            observation_spec[self.eol_key] = Categorical(
                2, shape=(*bs, 1), dtype=torch.bool, device=device
            )
        observation_spec[self.lives_key] = Unbounded(shape=bs, device=device, dtype=torch.int64)
        return observation_spec

    def register_keys(self, loss_or_advantage: Any) -> None:
        """Make a loss (or value estimator) read the end-of-life flag as done/terminated."""
        loss_or_advantage.set_keys(done=self.eol_key, terminated=self.eol_key)

    def __repr__(self) -> str:
        return (
            f"EndOfLifeTransform(eol_key={self.eol_key!r}, lives_key={self.lives_key!r}, "
            f"eol_attribute={'.'.join(self.eol_attribute)!r})"
        )
