"""Evaluation hook: deterministic rollouts on a separate environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.utils import NestedKey

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = [
    "LogValidationReward",
    "Recorder",
    "dump_recorders",
    "episode_returns",
    "trajectory_returns",
]

_REWARD = ("next", "reward")


def _is_reward(key: NestedKey) -> bool:
    return key == _REWARD


def _interaction_type(value: InteractionType | str) -> InteractionType:
    if isinstance(value, InteractionType):
        return value
    try:
        return InteractionType[str(value).upper()]
    except KeyError:
        allowed = [t.name.lower() for t in InteractionType]
        raise ValueError(f"exploration_type {value!r} is not one of {allowed}.") from None


def episode_returns(rollout: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns and lengths of the episodes that end inside a ``[*B, T]`` rollout.

    Episodes cut off by the end of the rollout (no ``("next", "done")`` yet) are left out.

    Args:
        rollout: a TensorDict with ``("next", "reward")`` and ``("next", "done")``.

    Returns:
        ``(returns, lengths)``, 1-D float tensors with one entry per complete episode.
    """
    t = rollout.shape[-1]
    reward = rollout.get(_REWARD).reshape(-1, t).double()
    done = rollout.get(("next", "done")).reshape(-1, t).bool()
    cum = reward.cumsum(-1)
    rets, lens = [], []
    steps = torch.arange(1, t + 1, dtype=torch.float64)
    for row_cum, row_done in zip(cum, done):
        idx = row_done.nonzero().squeeze(-1)
        if idx.numel() == 0:
            continue
        ends = row_cum[idx]
        rets.append(ends - torch.cat([ends.new_zeros(1), ends[:-1]]))
        end_steps = steps[idx]
        lens.append(end_steps - torch.cat([end_steps.new_zeros(1), end_steps[:-1]]))
    if not rets:
        empty = torch.zeros(0, dtype=torch.float64)
        return empty, empty
    return torch.cat(rets), torch.cat(lens)


def trajectory_returns(rollout: TensorDictBase) -> torch.Tensor:
    """Summed reward of every trajectory of a ``[*B, T]`` rollout, the last one of each row
    included even if the rollout cut it (torchrl's ``split_trajectories`` view).

    A trajectory ends at a step whose ``("next", "done")`` is set; the steps after the last
    done of a row form one more, unfinished, trajectory.

    Args:
        rollout: a TensorDict with ``("next", "reward")`` and ``("next", "done")``.

    Returns:
        A 1-D float64 tensor with one summed reward per trajectory.
    """
    t = rollout.shape[-1]
    reward = rollout.get(_REWARD).reshape(*rollout.shape, -1).sum(-1).reshape(-1, t).double()
    done = rollout.get(("next", "done"), None)
    if done is None:
        return reward.sum(-1)
    done = done.reshape(*rollout.shape, -1).any(-1).reshape(-1, t)
    # trajectory id of each step within its row: number of dones strictly before it
    traj = torch.cumsum(done.long(), -1) - done.long()
    n_per_row = traj[:, -1] + 1
    offsets = torch.cumsum(n_per_row, 0) - n_per_row
    ids = (traj + offsets.unsqueeze(-1)).reshape(-1)
    out = torch.zeros(int(n_per_row.sum()), dtype=torch.float64, device=reward.device)
    return out.index_add_(0, ids, reward.reshape(-1))


def _dump_transform(transform: Any, suffix: str | None, done: set[int]) -> None:
    if id(transform) in done:  # a transform reachable twice is dumped once
        return
    done.add(id(transform))
    dump = getattr(transform, "dump", None)
    if callable(dump):
        dump() if suffix is None else dump(suffix=suffix)
    for child in getattr(transform, "transforms", None) or ():  # a Compose
        _dump_transform(child, suffix, done)


def dump_recorders(env: Any, suffix: str | None = None) -> None:
    """Call ``dump(suffix=suffix)`` on every recorder transform of ``env``.

    Recorders (``VideoRecorder``, ``TensorDictRecorder``) are found in the env's transform,
    inside a ``Compose`` and in the transforms of nested ``TransformedEnv`` base envs, so a
    video recorder appended next to other transforms is dumped too.

    Args:
        env: the (transformed) environment.
        suffix: passed to each ``dump`` (``VideoRecorder`` logs ``<tag>_<suffix>``).
    """
    seen: set[int] = set()
    done: set[int] = set()
    while env is not None and id(env) not in seen:
        seen.add(id(env))
        transform = getattr(env, "transform", None)
        if transform is not None:
            _dump_transform(transform, suffix, done)
        env = getattr(env, "base_env", None)


class LogValidationReward(TrainerHookBase):
    """Evaluate the policy on its own environment every ``record_interval`` calls.

    Each evaluation runs one rollout of ``record_frames`` env steps (episodes reset
    automatically) under ``exploration_type`` (deterministic by default), without gradients
    and with the policy in eval mode. It returns, for logging (with ``"log_pbar"`` set to
    ``log_pbar``):

    - for the reward ``("next", "reward")``, as torchrl: ``out_keys[key]`` (default
      ``r_evaluation``), the mean reward per step divided by ``frame_skip``, and
      ``"total_" + out_keys[key]``, the mean over the rollout's trajectories of their
      summed reward (the last trajectory of a row counts even if the rollout cut it);
      so ``out_keys={("next", "reward"): "rewards"}`` gives ``rewards`` and
      ``total_rewards``. Both are 0-d float tensors, as torchrl's (scripts call
      ``.item()`` on them);
    - for each other key of ``log_keys``, its mean over the rollout (a 0-d tensor) under
      ``out_keys[key]``;
    - ``eval/episode_return_mean``, ``eval/episode_return_std``,
      ``eval/episode_length_mean`` and ``eval/num_episodes`` over the episodes that ended
      inside the rollout (returns are absent if none ended).

    As in torchrl, ``suffix`` names the recorded video: after each evaluation, every
    recorder transform of the environment (a ``VideoRecorder``, also inside a ``Compose``)
    is dumped with ``dump(suffix=suffix)``, which logs the video as ``<tag>_<suffix>``.
    The names of ``out_keys`` are logged unchanged; the ``eval/...`` statistics (which
    torchrl does not log) get ``_<suffix>`` appended, so two hooks on one trainer (e.g.
    deterministic and random evaluation) keep them apart.

    Args:
        record_interval: number of calls between two evaluations (the first call evaluates).
        record_frames: env steps per evaluation rollout (as torchrl's ``max_steps``; the
            torchrl helpers' ``correct_for_frame_skip`` already divides it by the frame skip).
        frame_skip: frames per environment step.
        policy_exploration: the policy to evaluate.
        environment: the evaluation environment (``rollout(max_steps, policy, ...)``).
        exploration_type: interaction type during evaluation (``"deterministic"``,
            ``"random"``, ``"mode"``, ``"mean"`` or an ``InteractionType``).
        log_keys: rollout entries to log (default ``[("next", "reward")]``).
        out_keys: logged name of each entry of ``log_keys``; by default
            ``("next", "reward")`` -> ``"r_evaluation"`` and any other key its own name
            (tuple keys joined with ``"_"``).
        suffix: suffix of the recorded video, also appended to the ``eval/...`` names.
        log_pbar: also show the values on the progress bar.
        recorder: older name of ``environment``.
    """

    def __init__(
        self,
        *,
        record_interval: int,
        record_frames: int,
        frame_skip: int = 1,
        policy_exploration: Callable[[TensorDictBase], TensorDictBase],
        environment: Any = None,
        exploration_type: InteractionType | str = InteractionType.DETERMINISTIC,
        log_keys: Sequence[NestedKey] | None = None,
        out_keys: Mapping[NestedKey, str] | None = None,
        suffix: str | None = None,
        log_pbar: bool = False,
        recorder: Any = None,
    ) -> None:
        environment = recorder if environment is None else environment
        if environment is None:
            raise ValueError("LogValidationReward needs an evaluation environment.")
        if record_interval < 1 or record_frames < 1:
            raise ValueError(
                f"record_interval and record_frames must be >= 1, got {record_interval} and "
                f"{record_frames}."
            )
        self.record_interval = record_interval
        self.record_frames = record_frames
        self.frame_skip = frame_skip
        self.policy_exploration = policy_exploration
        self.environment = environment
        self.exploration_type = _interaction_type(exploration_type)
        self.log_keys = [_REWARD] if log_keys is None else list(log_keys)
        if out_keys is None:
            out_keys = {
                k: "r_evaluation" if _is_reward(k) else (k if isinstance(k, str) else "_".join(k))
                for k in self.log_keys
            }
        self.out_keys = dict(out_keys)
        missing = [k for k in self.log_keys if k not in self.out_keys]
        if missing:
            raise ValueError(f"log_keys {missing} have no logged name in out_keys.")
        self.suffix = suffix
        self.log_pbar = log_pbar
        self._count = 0

    def _name(self, name: str) -> str:
        return name if self.suffix is None else f"{name}_{self.suffix}"

    @torch.no_grad()
    def __call__(self, batch: Any = None) -> dict[str, Any] | None:
        count = self._count
        self._count += 1
        if count % self.record_interval:
            return None
        policy = self.policy_exploration
        was_training = getattr(policy, "training", None)
        if was_training:
            policy.eval()
        try:
            with set_interaction_type(self.exploration_type):
                rollout = self.environment.rollout(
                    max_steps=self.record_frames,
                    policy=policy,
                    auto_reset=True,
                    break_when_any_done=False,
                )
        finally:
            if was_training:
                policy.train()
        dump_recorders(self.environment, self.suffix)
        out: dict[str, Any] = {}
        for key in self.log_keys:
            name = self.out_keys[key]
            value = rollout.get(key).float()
            if _is_reward(key):
                out[name] = value.mean() / self.frame_skip
                # summed in float64, reported in the per-step value's dtype beside it
                out["total_" + name] = trajectory_returns(rollout).mean().to(value.dtype)
            else:
                out[name] = value.mean()
        returns, lengths = episode_returns(rollout)
        out[self._name("eval/num_episodes")] = returns.numel()
        if returns.numel():
            out[self._name("eval/episode_return_mean")] = returns.mean().item()
            out[self._name("eval/episode_return_std")] = (
                returns.std().item() if returns.numel() > 1 else 0.0
            )
            out[self._name("eval/episode_length_mean")] = lengths.mean().item()
        out["log_pbar"] = self.log_pbar
        return out

    def register(self, trainer: Trainer, name: str = "recorder") -> None:
        """Register at ``"post_steps_log"`` and checkpoint the counter and env state."""
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        """The call counter and, if it has one, the environment's state dict."""
        env_sd = getattr(self.environment, "state_dict", None)
        return {"count": self._count, "environment": env_sd() if callable(env_sd) else None}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the call counter and the environment's state."""
        self._count = int(state_dict["count"])
        load = getattr(self.environment, "load_state_dict", None)
        if state_dict.get("environment") is not None and callable(load):
            load(state_dict["environment"])


Recorder = LogValidationReward
