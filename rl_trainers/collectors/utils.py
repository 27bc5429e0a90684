"""Helpers shared by the collectors."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule

from rl_trainers import fast
from rl_trainers.fast.acting import CategoricalActing, GaussianActing, sampling_input
from rl_trainers.fast.mlp import fused_mlp_parts
from rl_trainers.modules.actors import ProbabilisticActor
from rl_trainers.modules.builders import state_independent_gaussian_net
from rl_trainers.modules.distributions import (
    Categorical,
    IndependentNormal,
    OneHotCategorical,
    TanhNormal,
)
from rl_trainers.modules.models import MLP

__all__ = ["act_on", "lean_acting", "split_trajectories", "weights_state_dict"]


def act_on(policy: Any, td: TensorDictBase, device: torch.device) -> TensorDictBase:
    """``policy(td)`` on ``device``: ``td`` moved there, the output moved back to ``td``'s
    device (an env's CPU TensorDicts and a policy on an accelerator)."""
    out = policy(td.to(device))
    return out.to(td.device) if out.device != td.device else out


def split_trajectories(
    rollout: TensorDictBase, *, traj_key: tuple[str, str] = ("collector", "traj_ids")
) -> TensorDictBase:
    """Regroup a ``[*B, T]`` batch into ``[num_trajs, max_len]`` padded trajectories.

    Every trajectory (a run of equal ``traj_key`` values along time in one env) becomes one
    row, left-aligned and zero-padded; ``("collector", "mask")`` marks the real steps.

    Args:
        rollout: a collector batch, time as the last batch dimension.
        traj_key: the entry holding trajectory ids.

    Returns:
        A new TensorDict of batch size ``[num_trajs, max_len]``.
    """
    T = rollout.batch_size[-1]
    flat = rollout.reshape(-1)  # env-major: each env's steps are contiguous
    ids = flat.get(traj_key)
    # a new segment starts at each env's first step and wherever the id changes
    starts = torch.ones(ids.shape[0], dtype=torch.bool)
    if ids.shape[0] > 1:
        starts[1:] = ids[1:] != ids[:-1]
    starts[::T] = True
    seg = torch.cumsum(starts.long(), 0) - 1
    num = int(seg[-1]) + 1
    start_pos = torch.nonzero(starts).squeeze(-1)
    pos = torch.arange(ids.shape[0]) - start_pos[seg]
    lengths = torch.bincount(seg, minlength=num)
    max_len = int(lengths.max())
    out = flat[:1].expand(num * max_len).clone().zero_().reshape(num, max_len)
    out[seg, pos] = flat
    mask = torch.zeros(num, max_len, dtype=torch.bool)
    mask[seg, pos] = True
    out.set(("collector", "mask"), mask)
    return out


def weights_state_dict(weights: Any) -> dict[str, torch.Tensor]:
    """Policy weights as a ``state_dict``-like mapping (``"module.0.weight"`` names).

    Accepts a module, a ``state_dict``, or torchrl's ``TensorDict.from_module(policy)``
    (nested keys are joined with dots, as ``state_dict`` names them).
    """
    if isinstance(weights, torch.nn.Module):
        return weights.state_dict()
    if isinstance(weights, TensorDictBase):
        flat = weights.flatten_keys(".")
        return {key: flat.get(key) for key in flat.keys(include_nested=True, leaves_only=True)}
    if hasattr(weights, "items"):
        return dict(weights.items())
    raise TypeError(
        "policy weights must be a module, a state_dict or a TensorDict of parameters, got "
        f"{type(weights).__name__}"
    )


def lean_acting(
    policy: Any, tensordict: TensorDictBase
) -> CategoricalActing | GaussianActing | None:
    """The lean acting path (:mod:`rl_trainers.fast.acting`, switch ``LEAN_ACTING``) that
    fits ``policy`` acting on ``tensordict`` (one step's input), or None: then the policy's
    own forward runs."""
    if not fast.LEAN_ACTING or type(policy) is not ProbabilisticActor or policy.safe:
        return None
    return _categorical_acting(policy, tensordict) or _gaussian_acting(policy, tensordict)


def _categorical_acting(
    policy: ProbabilisticActor, tensordict: TensorDictBase
) -> CategoricalActing | None:
    """Taken only for an exact ``ProbabilisticActor`` (no subclass, no hooks, not ``safe``)
    over a ``TensorDictModule`` wrapping an ``MLP`` that runs fused, with one input and the
    ``logits`` of a ``Categorical`` or ``OneHotCategorical`` without extra arguments,
    sampling (``InteractionType.RANDOM``) without gradients on a 2-D input."""
    module = policy.module
    if type(module) is not TensorDictModule or len(module.in_keys) != 1:
        return None
    if list(policy._dist_keys.items()) != [("logits", module.out_keys[0])]:
        return None
    if module.out_keys != policy._param_keys:
        return None
    kwargs = set(policy._dist_kwargs())
    if policy.distribution_class is OneHotCategorical:
        kwargs.discard("dtype")
    elif policy.distribution_class is not Categorical:
        return None
    if kwargs:
        return None
    mlp = module.module
    if type(mlp) is not MLP or mlp.out_shape is not None:
        return None
    obs = sampling_input(tensordict, policy, module, mlp)
    if obs is None:
        return None
    plan = fused_mlp_parts(mlp, obs)
    if plan is None:
        return None
    return CategoricalActing(policy, plan, policy.distribution_class is OneHotCategorical)


def _gaussian_acting(
    policy: ProbabilisticActor, tensordict: TensorDictBase
) -> GaussianActing | None:
    """Taken only for an exact ``ProbabilisticActor`` (no subclass, no hooks, not ``safe``)
    over a ``TensorDictModule`` with one input whose outputs are exactly the ``loc`` and
    ``scale`` of an ``IndependentNormal`` or ``TanhNormal``, sampling
    (``InteractionType.RANDOM``) without gradients on a 2-D input."""
    if policy.distribution_class not in (IndependentNormal, TanhNormal):
        return None
    module = policy.module
    if type(module) is not TensorDictModule or len(module.in_keys) != 1:
        return None
    if sorted(policy._dist_keys) != ["loc", "scale"]:
        return None
    if module.out_keys != policy._param_keys:
        return None
    obs = sampling_input(tensordict, policy, module, *module.module.modules())
    if obs is None:
        return None
    return GaussianActing(policy, _mlp_and_state_independent_scale(module.module, obs))


def _mlp_and_state_independent_scale(net: torch.nn.Module, obs: torch.Tensor) -> tuple | None:
    """:class:`GaussianActing`'s ``split`` for SB3's Gaussian network
    (:func:`~rl_trainers.modules.builders.state_independent_gaussian_net`) whose MLP runs
    fused on ``obs``, else None (the network's own forward runs)."""
    parts = state_independent_gaussian_net(net)
    if parts is None:
        return None
    mlp, head = parts
    plan = fused_mlp_parts(mlp, obs)
    if plan is None:
        return None
    return plan, head, head.state_independent_scale
