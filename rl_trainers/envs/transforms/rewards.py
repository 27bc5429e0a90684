"""Reward transforms: ``RewardClipping``, ``BinarizeReward``, ``TargetReturn`` and
``Reward2GoTransform`` (torchrl's names and signatures), and ``RewardNorm`` (the running
reward normaliser of Stable-Baselines3's ``VecNormalize``).

``RewardClipping`` and ``BinarizeReward`` map the reward of every step (resets carry no
reward); ``TargetReturn`` keeps a return-to-go in the observations (Decision Transformer's
conditioning), restarted at each (partial) reset; ``Reward2GoTransform`` computes the
discounted reward-to-go of stored trajectories (replay-buffer or offline data) and refuses to
run inside an env, where episodes are not finished yet. ``RewardNorm`` divides each reward by
the running standard deviation of the discounted return.

Example:
    >>> env = TransformedEnv(GymEnv("CartPole-v1"), TargetReturn(10.0))
    >>> env.rollout(3)["target_return"].flatten().tolist()
    [10.0, 9.0, 8.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Binary, Composite, Unbounded
from rl_trainers.envs.transforms.transforms import (
    Key,
    RunningStatistics,
    Transform,
    TransformedEnv,
    _keys,
    _missing,
    _reset_mask,
)
from rl_trainers.envs.transforms.values import ClipTransform
from rl_trainers.envs.utils import fast_set

__all__ = [
    "RewardClipping",
    "BinarizeReward",
    "TargetReturn",
    "Reward2GoTransform",
    "RewardNorm",
]


class RewardClipping(ClipTransform):
    """Clip rewards to ``[clamp_min, clamp_max]`` (torchrl's reward clipping).

    A :class:`ClipTransform` on the reward keys: the written reward specs become ``Bounded``
    (their old bounds clipped; ``-inf``/``inf`` on an open side).

    Args:
        clamp_min: lower bound (scalar; None for none).
        clamp_max: upper bound (scalar; None for none). At least one of them is needed.
        in_keys: reward keys (default ``["reward"]``).
        out_keys: where the clipped rewards go (default: ``in_keys``).

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), RewardClipping(-1.0, 1.0))
        >>> assert env.rollout(5)["next", "reward"].abs().max() <= 1
    """

    def __init__(
        self,
        clamp_min: float | torch.Tensor | None = None,
        clamp_max: float | torch.Tensor | None = None,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        # ClipTransform's checks, under this transform's names for the bounds
        Transform.__init__(self, _keys(in_keys, ["reward"]), out_keys)
        self._set_bounds(clamp_min, clamp_max, ("clamp_min", "clamp_max"))

    @property
    def clamp_min(self) -> float | None:
        """The lower bound (torchrl's name)."""
        return self.low

    @property
    def clamp_max(self) -> float | None:
        """The upper bound (torchrl's name)."""
        return self.high

    def __repr__(self) -> str:
        return (
            f"RewardClipping(clamp_min={self.low}, clamp_max={self.high}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys})"
        )


class BinarizeReward(Transform):
    """Map each reward to 1 where it is positive, else 0 (``int8``, as torchrl's).

    Args:
        in_keys: reward keys (default ``["reward"]``); their last dim must be 1.
        out_keys: where the binary rewards go (default: ``in_keys``).

    The written reward specs become ``Binary(n=1)`` of the reward's shape.
    """

    def __init__(
        self,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(_keys(in_keys, ["reward"]), out_keys)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if not reward.ndim or reward.shape[-1] != 1:
            raise RuntimeError(
                "BinarizeReward: the reward's last dim must be a singleton, got a reward of "
                f"shape {tuple(reward.shape)}."
            )
        return (reward > 0).to(torch.int8)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset  # resets carry no reward

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ik in reward_spec.keys(True, True):
                spec = reward_spec[ik]
                reward_spec[ok] = Binary(n=1, shape=spec.shape, device=spec.device)
        return reward_spec


def _replace_last(key: Key, name: str) -> Key:
    if isinstance(key, tuple):
        return name if len(key) == 1 else (*key[:-1], name)
    return name


class TargetReturn(Transform):
    """Keep a target return in the observations: the return still to collect (Decision
    Transformer's return-to-go conditioning).

    At each reset the target is ``target_return``; with ``mode="reduce"`` each step subtracts
    its reward (``target_{t+1} = target_t - r_t``), with ``mode="constant"`` it stays as set.
    Partial resets (``"_reset"``) restart it in the flagged sub-envs only.

    Args:
        target_return: the return to reach (e.g. the best return of the data set, scaled as
            the policy's inputs are).
        mode: ``"reduce"`` or ``"constant"``.
        in_keys: reward keys (default ``["reward"]``).
        out_keys: target keys (default: each reward key with its last name replaced by
            ``"target_return"``).
        reset_key: the partial-reset flag; only ``"_reset"`` (the default) exists for the
            single-agent envs here.

    Like torchrl's, it only works inside an env: calling it on a TensorDict raises
    ``NotImplementedError``.

    Example:
        >>> env = TransformedEnv(GymEnv("CartPole-v1"), TargetReturn(10.0, mode="reduce"))
        >>> env.rollout(4)["next", "target_return"].flatten().tolist()
        [9.0, 8.0, 7.0, 6.0]
    """

    MODES = ("reduce", "constant")

    def __init__(
        self,
        target_return: float,
        mode: str = "reduce",
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        reset_key: Key | None = None,
    ) -> None:
        if mode not in self.MODES:
            raise ValueError(
                f"TargetReturn: mode can only be 'reduce' or 'constant', got {mode!r}."
            )
        if reset_key not in (None, "_reset", ("_reset",)):
            raise ValueError(
                f"TargetReturn: reset_key={reset_key!r} is not supported; only '_reset' "
                "(single-agent envs)."
            )
        in_keys = _keys(in_keys, ["reward"])
        if out_keys is None:
            out_keys = [_replace_last(k, "target_return") for k in in_keys]
            if len(set(out_keys)) < len(out_keys):
                raise ValueError(
                    f"TargetReturn: cannot name the targets of rewards {in_keys} (they would "
                    "share one 'target_return' entry); pass out_keys."
                )
        super().__init__(in_keys, out_keys)
        self.target_return = float(target_return)
        self.mode = mode
        self._dtype = torch.float32

    @property
    def reset_key(self) -> str:
        """The partial-reset entry read on resets."""
        return "_reset"

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        for ok in self.out_keys:
            fresh = torch.full(
                shape, self.target_return, dtype=self._dtype, device=tensordict_reset.device
            )
            prev = tensordict.get(ok, None)
            mask = _reset_mask(tensordict, fresh)
            if mask is not None and prev is not None and prev.shape == fresh.shape:
                fresh = torch.where(mask, fresh, prev)
            tensordict_reset.set(ok, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for ik, ok in zip(self.in_keys, self.out_keys):
            target = tensordict.get(ok, None)
            if target is None:
                raise KeyError(
                    f"TargetReturn: {ok!r} missing from the step input; reset the env through "
                    "the TransformedEnv before stepping."
                )
            if self.mode == "reduce":
                reward = next_tensordict.get(ik, None)
                if reward is None:
                    raise _missing(next_tensordict, ik, "TargetReturn")
                if reward.shape != target.shape:
                    raise ValueError(
                        f"TargetReturn: the reward {ik!r} ({tuple(reward.shape)}) and the target "
                        f"return ({tuple(target.shape)}) must have the same shape."
                    )
                target = target - reward
            fast_set(next_tensordict, ok, target)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError(
            "TargetReturn cannot be called independently, only its step and reset methods "
            "are functional: the target follows the rewards of an env's episode."
        )

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        # in the observations (not the rewards), so that step_mdp carries it to the next input
        parent = self.parent
        rewards = parent.full_reward_spec if parent is not None else Composite()
        for ik, ok in zip(self.in_keys, self.out_keys):
            if ik in rewards.keys(True, True):
                spec = rewards[ik]
                shape, dtype = spec.shape, torch.promote_types(torch.float32, spec.dtype)
            else:
                shape, dtype = (*observation_spec.shape, 1), torch.float32
            self._dtype = dtype
            observation_spec[ok] = Unbounded(
                shape=shape, dtype=dtype, device=observation_spec.device
            )
        return observation_spec

    def __repr__(self) -> str:
        return (
            f"TargetReturn(target_return={self.target_return}, mode={self.mode!r}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys})"
        )


class Reward2GoTransform(Transform):
    """Discounted reward-to-go of stored trajectories (replay-buffer / offline data).

    ``G_t = r_t + gamma * G_{t+1}``, restarting after each ``("next", done_key)``; time is the
    dim before the reward's last (``[*B, T, 1]``), the TensorDict's last batch dim. Every
    trajectory must end within the data (``RuntimeError`` otherwise): the reward-to-go of an
    unfinished episode is unknown, which is also why the transform refuses to join an env.

    ``inv(td)`` computes it as torchrl's (there, ``rb.extend`` calls it); ``forward(td)`` does
    the same, since rl_trainers' buffers only transform what they hand out: on samples made of
    whole trajectories the values are those of torchrl's buffer (see docs/porting.md).

    Args:
        gamma: discount factor.
        in_keys: reward entries (default ``[("next", "reward")]``).
        out_keys: where the rewards-to-go go (default: ``in_keys``, in place).
        done_key: the done entry, read under ``"next"``.

    Example:
        >>> r2g = Reward2GoTransform(gamma=0.99, out_keys=["reward_to_go"])
        >>> data = r2g.inv(collector_batch)  # doctest: +SKIP
    """

    def __init__(
        self,
        gamma: float | torch.Tensor = 1.0,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
        done_key: Key = "done",
    ) -> None:
        in_keys = _keys(in_keys, [("next", "reward")])
        out_keys = _keys(out_keys, in_keys)
        super().__init__(in_keys, out_keys, in_keys, out_keys)
        self.done_key = done_key
        self.register_buffer("gamma", torch.as_tensor(gamma, dtype=torch.float32))

    _ENV_ERR = (
        "Reward2GoTransform needs finished trajectories: apply it to stored data (a replay "
        "buffer's transform, or .inv() on a collected batch), not inside an env."
    )

    def _reward_to_go(self, tensordict: TensorDictBase) -> TensorDictBase:
        from rl_trainers._returns import reward2go

        inner = self.done_key if isinstance(self.done_key, tuple) else (self.done_key,)
        done_key = ("next", *inner)
        done = tensordict.get(done_key, None)
        if done is None:
            raise _missing(tensordict, done_key, "Reward2GoTransform")
        if done.ndim < 2 or not bool(done.any(-2).all()):
            raise RuntimeError(
                "Reward2GoTransform: a trajectory of the data has no end (no done step along "
                "its time dim), so its reward-to-go is unknown; collect batches longer than an "
                "episode or store whole trajectories."
            )
        found = False
        for ik, ok in zip(self.in_keys, self.out_keys):
            reward = tensordict.get(ik, None)
            if reward is None:
                continue
            found = True
            ends = done.bool().expand_as(reward) if done.shape != reward.shape else done
            tensordict.set(ok, reward2go(reward, ends, float(self.gamma)))
        if not found:
            raise KeyError(
                f"Reward2GoTransform: none of the reward keys {self.in_keys} was found; keys "
                f"present: {list(tensordict.keys(True, True))}."
            )
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._reward_to_go(tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._reward_to_go(tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError(self._ENV_ERR)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError(self._ENV_ERR)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        raise ValueError(self._ENV_ERR)

    def set_container(self, container: TransformedEnv | Transform | None) -> None:
        if isinstance(container, TransformedEnv):
            raise ValueError(self._ENV_ERR)
        super().set_container(container)

    def __repr__(self) -> str:
        return (
            f"Reward2GoTransform(gamma={float(self.gamma)}, in_keys={self.in_keys}, "
            f"out_keys={self.out_keys}, done_key={self.done_key!r})"
        )


def _merged(stats: tuple[float, float, float], returns: np.ndarray) -> tuple[float, float, float]:
    """``(count, mean, var)`` with a batch of returns merged in (Chan et al.'s exact update),
    in float64 on the host."""
    count, mean, var = stats
    n = returns.size
    batch_mean, batch_var = float(returns.mean()), float(returns.var())
    total = count + n
    delta = batch_mean - mean
    m2 = var * count + batch_var * n + delta * delta * count * n / total
    return total, mean + delta * n / total, m2 / total


class RewardNorm(RunningStatistics):
    """Divide each reward by the running standard deviation of the discounted return.

    The reward normalisation of Stable-Baselines3's ``VecNormalize`` (``norm_reward``, what
    rl-zoo's ``normalize: true`` turns on). Every sub-env keeps its discounted return
    ``R = gamma * R + r``. After each step:

    1. the running mean and variance of ``R`` take in the step's returns of all sub-envs,
       merged exactly with the statistics so far (Chan et al.'s parallel update, no decay:
       they are the mean and variance of every return seen);
    2. the reward is replaced by ``clip(r / sqrt(var + eps), -clip, clip)`` (the mean is not
       subtracted: the sign of a reward is kept);
    3. ``R`` restarts at 0 in the sub-envs whose episode ended (terminated or truncated).

    Place it after :class:`RewardSum` so that the logged episode return is the raw one, and
    build evaluation envs without it. At any time all rewards are divided by the same
    positive number, which does not change which policy is best (clipping aside; the number
    settles as the statistics grow); value targets are measured in units of that std.

    State (buffers, in ``state_dict`` and so in checkpoints): ``count``, ``mean`` and ``var``
    of the returns (float64), each sub-env's running return ``returns`` ``[*B, 1]`` and the
    statistics at the last merge across processes (``merged_*``, see
    :meth:`pending_statistics`). ``freeze()`` stops updating the statistics.

    Unlike SB3's ``RunningMeanStd``, which starts from a pseudo-count of ``1e-4`` with
    variance 1, the statistics start empty: after the first step they are exactly those of
    the returns seen.

    Args:
        gamma: discount of the running return (use the algorithm's, as rl-zoo does).
        eps: added to the variance before the square root.
        clip: normalised rewards are clipped to ``[-clip, clip]``.
        in_keys: the reward key (default ``["reward"]``; one key).
        out_keys: where the normalised reward goes (default: in place).

    Example:
        >>> env = TransformedEnv(
        ...     GymEnv("Pendulum-v1", num_envs=4), Compose(RewardSum(), RewardNorm(gamma=0.9))
        ... )
        >>> td = env.rollout(100, break_when_any_done=False)
        >>> # ("next", "reward") is normalised; ("next", "episode_reward") sums the raw rewards
    """

    def __init__(
        self,
        gamma: float = 0.99,
        eps: float = 1e-8,
        clip: float = 10.0,
        in_keys: Key | Sequence[Key] | None = None,
        out_keys: Key | Sequence[Key] | None = None,
    ) -> None:
        super().__init__(_keys(in_keys, ["reward"]), out_keys)
        if len(self.in_keys) != 1:
            raise ValueError(f"RewardNorm normalises one reward key, got in_keys={self.in_keys}.")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"RewardNorm: gamma must be in [0, 1], got {gamma}.")
        if not eps >= 0.0:
            raise ValueError(f"RewardNorm: eps must be >= 0, got {eps}.")
        if not clip > 0.0:
            raise ValueError(f"RewardNorm: clip must be positive, got {clip}.")
        self.gamma = float(gamma)
        self.eps = float(eps)
        self.clip = float(clip)
        self.frozen = False
        for prefix in ("", "merged_"):
            for name in ("count", "mean", "var"):
                self.register_buffer(prefix + name, torch.zeros((), dtype=torch.float64))
        self.register_buffer("returns", None)

    # --- state ---------------------------------------------------------------------------------
    def _init_returns(self, shape: torch.Size) -> None:
        self.returns = torch.zeros(shape, dtype=torch.float64, device=self.mean.device)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN202
        key = prefix + "returns"
        if key in state_dict and self.returns is None:
            self._init_returns(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        ik, ok = self.in_keys[0], self.out_keys[0]
        if ik in reward_spec.keys(True, True):
            spec = reward_spec[ik]
            if self.returns is None:
                self._init_returns(spec.shape)
            if ok != ik:
                reward_spec[ok] = spec.clone()
        return reward_spec

    @property
    def std(self) -> torch.Tensor:
        """The divisor of the rewards: ``sqrt(var + eps)``."""
        return (self.var + self.eps).sqrt()

    # --- the maths -----------------------------------------------------------------------------
    # On the host in float64 (Python floats and small numpy arrays): one env step costs a few
    # microseconds here, where the same dozen ops as tensors cost ~15x more in dispatch.
    @torch.no_grad()
    def _update(self, returns: Any) -> None:
        """Merge a batch of returns into the running mean and variance (exact)."""
        stats = (self.count.item(), self.mean.item(), self.var.item())
        self._store(*_merged(stats, np.asarray(returns, dtype=np.float64)))

    def _store(self, count: float, mean: float, var: float) -> None:
        self.count.fill_(count)
        self.mean.fill_(mean)
        self.var.fill_(var)

    @torch.no_grad()
    def _normalize(self, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        """One step: update the returns and statistics, return the normalised reward."""
        r = reward.detach().cpu().numpy()
        out = self._normalize_steps(r[None], done.detach().cpu().numpy().reshape(r.shape)[None])
        return torch.from_numpy(out[0]).to(reward.device, reward.dtype)

    def _normalize_steps(self, rewards: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Steps ``rewards[t]`` in order (``[T, *B, 1]``; ``done`` alike): update the returns
        and statistics at each, return the normalised rewards (float64)."""
        shape = rewards.shape[1:]
        if self.returns is None or self.returns.shape != shape:
            self._init_returns(shape)
        returns = self.returns.cpu().numpy()
        stats = (self.count.item(), self.mean.item(), self.var.item())
        out = np.empty(rewards.shape, dtype=np.float64)
        for t in range(rewards.shape[0]):
            r = rewards[t].astype(np.float64)
            running = returns * self.gamma + r
            if not self.frozen:
                stats = _merged(stats, running)
            out[t] = np.clip(r / math.sqrt(stats[2] + self.eps), -self.clip, self.clip)
            running[done[t]] = 0.0
            returns = running
        self._store(*stats)
        self.returns = torch.from_numpy(returns).to(self.mean.device)
        return out

    # --- env hooks -----------------------------------------------------------------------------
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        ik, ok = self.in_keys[0], self.out_keys[0]
        reward = next_tensordict.get(ik, None)
        if reward is None:
            raise _missing(next_tensordict, ik, "RewardNorm")
        fast_set(next_tensordict, ok, self._normalize(reward, next_tensordict.get("done")))
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        # new episodes start with a zero return (already zeroed where a step ended one)
        if self.returns is not None:
            mask = _reset_mask(tensordict, self.returns)
            zeros = torch.zeros_like(self.returns)
            if mask is None:
                self.returns = zeros
            elif mask.shape == self.returns.shape:
                self.returns = torch.where(mask.to(zeros.device), zeros, self.returns)
        return tensordict_reset

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError(
            "RewardNorm follows the discounted returns of an env's episodes step by step: use "
            "it inside a TransformedEnv, not on stored data."
        )

    # the collectors' whole-batch path (TransformedEnv.rollout_batch): the same steps, in order
    batch_rollout = True

    def _batch_carry(self, tensordict: TensorDictBase) -> list:
        return []  # the running returns are buffers, not entries of the policy input

    def _batch_step(self, batch: TensorDictBase, carry: list, next_input: TensorDictBase) -> None:
        ik, ok = self.in_keys[0], self.out_keys[0]
        nxt = batch.get("next")
        reward = nxt.get(ik, None)
        if reward is None:
            raise _missing(nxt, ik, "RewardNorm")
        time_first = np.moveaxis(reward.detach().cpu().numpy(), -2, 0)
        done = np.moveaxis(nxt.get("done").cpu().numpy(), -2, 0)
        out = np.moveaxis(self._normalize_steps(time_first, done), 0, -2)
        nxt.set(ok, torch.from_numpy(np.ascontiguousarray(out)).to(reward.device, reward.dtype))

    # --- data-parallel training (freeze/frozen_copy: RunningStatistics) ------------------------
    @torch.no_grad()
    def pending_statistics(self) -> torch.Tensor:
        """What this normaliser saw since the last :meth:`merge_statistics_`: ``[count, sum of
        (R - m), sum of (R - m)**2]`` of those returns, with ``m`` the merged mean (float64).

        Data-parallel training sums this over the processes and gives the sum to
        :meth:`merge_statistics_` on every process, whose statistics then become those of
        every process's returns (exactly, as if one normaliser had seen them all).
        """
        c0, m0, v0 = self.merged_count, self.merged_mean, self.merged_var
        shift = self.mean - m0
        return torch.stack(
            [
                self.count - c0,
                self.count * shift,
                self.count * (self.var + shift * shift) - c0 * v0,
            ]
        )

    @torch.no_grad()
    def merge_statistics_(self, pending: torch.Tensor) -> None:
        """Set the statistics to the merged ones plus ``pending`` (the sum over the processes
        of their :meth:`pending_statistics`); they become the new merged statistics."""
        c0, m0, v0 = self.merged_count, self.merged_mean, self.merged_var
        pending = pending.to(self.mean.device, torch.float64)
        n, s, q = pending.unbind()
        total = c0 + n
        if total > 0:
            shift = s / total
            self.mean.copy_(m0 + shift)
            self.var.copy_(((c0 * v0 + q) / total - shift * shift).clamp_min(0.0))
            self.count.copy_(total)
        for name in ("count", "mean", "var"):
            getattr(self, "merged_" + name).copy_(getattr(self, name))

    # --- collector workers (see RunningStatistics) -----------------------------------------
    def statistics_update(self) -> dict[str, torch.Tensor]:
        """This worker's :meth:`pending_statistics` (returns seen since it last loaded)."""
        return {"pending": self.pending_statistics()}

    def merge_updates_(self, updates: dict[int, dict[str, torch.Tensor]]) -> None:
        """Merge the workers' pending returns, exactly, into this copy's statistics."""
        self.merge_statistics_(torch.stack([u["pending"] for u in updates.values()]).sum(0))

    def statistics(self) -> dict[str, torch.Tensor]:
        """Count, mean and variance of every return seen, as both the current statistics
        and the merged ones (a worker's next pending returns start from them)."""
        stats = {name: getattr(self, name).clone() for name in ("count", "mean", "var")}
        return {**stats, **{"merged_" + name: value for name, value in stats.items()}}

    def __repr__(self) -> str:
        return (
            f"RewardNorm(gamma={self.gamma}, eps={self.eps}, clip={self.clip}, "
            f"in_keys={self.in_keys}, out_keys={self.out_keys})"
        )
