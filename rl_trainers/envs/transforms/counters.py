"""``TrajCounter``: a trajectory id in every step, counted over all the episodes an env (and
the copies made with ``clone()``) has started.

Each reset gives the (sub-)envs it resets the next free ids, in sub-env order; steps carry the
id of their episode. The counter is a buffer (``state_dict()["traj_count"]``), so checkpoints
restore it.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Bounded, Composite
from rl_trainers.envs.transforms.transforms import Key, Transform
from rl_trainers.envs.utils import fast_set

__all__ = ["TrajCounter"]


class TrajCounter(Transform):
    """Number the trajectories: ``out_key`` holds the id of the current episode (torchrl's).

    Args:
        out_key: the id entry (``[*B, 1]``, int64).

    Clones (:meth:`clone`) share the counter, so envs built from one transform never hand
    out the same id; the counter is not shared across processes (a collector worker holding
    its own copy of the env counts on its own).

    Example:
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(StepCounter(6), TrajCounter()))
        >>> r = env.rollout(18, break_when_any_done=False)
        >>> r["next", "traj_count"].flatten().tolist()  # three episodes of 6 steps
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    """

    def __init__(self, out_key: Key = "traj_count") -> None:
        super().__init__(in_keys=[], out_keys=[])
        self.out_keys = [out_key]
        self.register_buffer("traj_count", torch.zeros((), dtype=torch.int64))

    @property
    def out_key(self) -> Key:
        """The id entry."""
        return self.out_keys[0]

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        prev = tensordict.get(self.out_key, None)
        mask = tensordict.get("_reset", None)
        if mask is None or prev is None or prev.shape != shape:
            flags = torch.ones(shape, dtype=torch.bool)
        else:
            flags = mask.reshape(shape).bool().cpu()
        n = int(flags.sum())
        start = int(self.traj_count)
        self.traj_count.add_(n)
        ids = torch.zeros(shape, dtype=torch.int64)
        ids[flags] = torch.arange(start, start + n)
        ids = ids.to(tensordict_reset.device)
        if prev is not None and prev.shape == ids.shape and mask is not None:
            ids = torch.where(flags.to(ids.device), ids, prev)
        tensordict_reset.set(self.out_key, ids)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        ids = tensordict.get(self.out_key, None)
        if ids is None:
            raise RuntimeError(
                f"TrajCounter: {self.out_key!r} missing from the step input; reset the env "
                "through the TransformedEnv before stepping."
            )
        fast_set(next_tensordict, self.out_key, ids)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TrajCounter can only be called within an env step or reset.")

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TrajCounter can only be called within an env step or reset.")

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.out_key] = Bounded(
            0,
            torch.iinfo(torch.int64).max,
            shape=(*observation_spec.shape, 1),
            dtype=torch.int64,
            device=observation_spec.device,
        )
        return observation_spec

    def clone(self) -> TrajCounter:
        """A copy attached to no env, sharing this transform's counter."""
        out = super().clone()
        out._buffers["traj_count"] = self.traj_count
        return out

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN202
        key = prefix + "traj_count"
        if key in state_dict and not isinstance(state_dict[key], torch.Tensor):
            state_dict[key] = torch.as_tensor(int(state_dict[key]), dtype=torch.int64)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def __repr__(self) -> str:
        return f"TrajCounter(out_key={self.out_key!r}, traj_count={int(self.traj_count)})"
