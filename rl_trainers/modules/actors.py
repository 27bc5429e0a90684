"""TensorDict actors and value operators.

Stochastic actors follow tensordict's interaction types: under
``set_interaction_type(InteractionType.RANDOM)`` they sample, otherwise (deterministic, mode,
mean, or nothing set) they take the distribution's deterministic value.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import (
    InteractionType,
    TensorDictModule,
    TensorDictModuleBase,
    dispatch,
    interaction_type,
)
from torch import nn

from rl_trainers.modules.distributions import TanhNormal
from rl_trainers.modules.operators import leaf_spec, project_if_safe, project_outputs

__all__ = [
    "ProbabilisticActor",
    "SafeProbabilisticModule",
    "Actor",
    "ValueOperator",
    "QValueActor",
    "QValueModule",
    "TanhModule",
    "spec_kind",
]

NestedKey = str | tuple


def spec_kind(spec) -> str:
    """Classifies an action spec as ``"one_hot"``, ``"categorical"``, ``"bounded"`` or ``"unbounded"``.

    Works on the real specs of :mod:`rl_trainers.envs.specs` and on any object exposing the same
    attributes (``n`` for discrete specs, ``low``/``high`` for bounded ones).
    """
    name = type(spec).__name__.lower()
    if "onehot" in name:
        return "one_hot"
    if "multicategorical" in name or "binary" in name:
        raise ValueError(f"action spec {type(spec).__name__} is not supported by the actors")
    if "categorical" in name or "discrete" in name:
        return "categorical"
    if "bounded" in name and "unbounded" not in name:
        return "bounded"
    if "unbounded" in name:
        return "unbounded"
    if getattr(spec, "n", None) is not None:
        shape = tuple(getattr(spec, "shape", ()))
        return "one_hot" if shape and shape[-1] == spec.n else "categorical"
    if getattr(spec, "low", None) is not None and getattr(spec, "high", None) is not None:
        return "bounded"
    return "unbounded"


def _deterministic() -> bool:
    itype = interaction_type()
    return itype is None or itype != InteractionType.RANDOM


class ProbabilisticActor(TensorDictModuleBase):
    """Runs a module that writes distribution parameters, then acts with that distribution.

    Args:
        module: a tensordict module writing the distribution parameters (e.g. ``loc``/``scale``).
        in_keys: keys of the distribution parameters, a list (passed positionally in order as
            the distribution's keyword names ``loc``, ``scale``... are the key names) or a dict
            ``{distribution_kwarg: key}``.
        out_keys: where to write the action (``["action"]``).
        spec: the action spec (optional: casts discrete actions to its dtype).
        distribution_class: a distribution class of :mod:`rl_trainers.modules.distributions`
            or any class with the same methods.
        distribution_kwargs: extra keyword arguments of the distribution (e.g. ``low``/``high``).
        return_log_prob: also write the action's log-probability at ``log_prob_key``.
        log_prob_key: key of the log-probability (``"sample_log_prob"``).
        default_interaction_type: used when no interaction type is set (deterministic).
        safe: project actions outside ``spec`` back onto it.
        cache_dist, n_empirical_estimate: torchrl's options (no effect here).
    """

    def __init__(
        self,
        module: TensorDictModuleBase,
        in_keys: Sequence[NestedKey] | dict[str, NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec=None,
        distribution_class: type = TanhNormal,
        distribution_kwargs: dict | None = None,
        return_log_prob: bool = False,
        log_prob_key: NestedKey | None = "sample_log_prob",
        default_interaction_type: InteractionType = InteractionType.DETERMINISTIC,
        safe: bool = False,
        cache_dist: bool = False,
        n_empirical_estimate: int = 1000,
    ) -> None:
        super().__init__()
        if safe and spec is None:
            raise RuntimeError("ProbabilisticActor(safe=True) needs a spec")
        self.safe = safe
        log_prob_key = "sample_log_prob" if log_prob_key is None else log_prob_key
        if not isinstance(module, TensorDictModuleBase):
            raise TypeError(
                f"ProbabilisticActor needs a tensordict module (e.g. TensorDictModule), got {type(module).__name__}"
            )
        if isinstance(in_keys, str):
            in_keys = [in_keys]
        if isinstance(in_keys, dict):
            self._dist_keys = dict(in_keys)
        else:
            self._dist_keys = {k if isinstance(k, str) else k[-1]: k for k in in_keys}
        out_keys = ["action"] if out_keys is None else list(out_keys)
        self.module = module
        self.spec = spec
        self.distribution_class = distribution_class
        self.distribution_kwargs = dict(distribution_kwargs or {})
        for key in ("low", "high"):
            value = self.distribution_kwargs.get(key)
            if torch.is_tensor(value):
                self.register_buffer(f"_dist_{key}", value.clone(), persistent=False)
                self.distribution_kwargs.pop(key)
        self.return_log_prob = return_log_prob
        self.log_prob_key = log_prob_key
        self.default_interaction_type = default_interaction_type
        leaf = leaf_spec(spec, out_keys[0])
        self._action_dtype = getattr(leaf, "dtype", None) if leaf is not None else None
        # the network's inputs, then distribution inputs it does not write (e.g. a mask)
        extra = [k for k in self._dist_keys.values() if k not in module.out_keys]
        self.in_keys = list(dict.fromkeys([*module.in_keys, *extra]))
        self.out_keys = (
            list(module.out_keys) + out_keys + ([log_prob_key] if return_log_prob else [])
        )
        self.action_key = out_keys[0]
        self._param_keys = list(self._dist_keys.values())

    def _dist_kwargs(self) -> dict:
        kwargs = self.distribution_kwargs
        if hasattr(self, "_dist_low") or hasattr(self, "_dist_high"):
            kwargs = dict(kwargs)
            if hasattr(self, "_dist_low"):
                kwargs["low"] = self._dist_low
            if hasattr(self, "_dist_high"):
                kwargs["high"] = self._dist_high
        return kwargs

    def build_dist(self, tensordict: TensorDictBase):
        """Builds the distribution from parameters already present in ``tensordict``."""
        params = {name: tensordict.get(key) for name, key in self._dist_keys.items()}
        return self.distribution_class(**params, **self._dist_kwargs())

    def get_dist(self, tensordict: TensorDictBase):
        """Runs the parameter module on ``tensordict`` (in place) and returns the distribution."""
        module = self.module
        if type(module) is TensorDictModule and module.out_keys == self._param_keys:
            # hot path (every builder's actor): call the network on tensors, skipping the
            # tensordict-module dispatch; same writes as module(tensordict)
            out = module.module(*[tensordict.get(k) for k in module.in_keys])
            if not isinstance(out, tuple):
                out = (out,)
            params = dict(zip(self._dist_keys, out))
            for key, value in zip(module.out_keys, out):
                tensordict.set(key, value)
            return self.distribution_class(**params, **self._dist_kwargs())
        tensordict = module(tensordict)
        return self.build_dist(tensordict)

    def _interaction(self) -> InteractionType:
        itype = interaction_type()
        return self.default_interaction_type if itype is None else itype

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        dist = self.get_dist(tensordict)
        log_prob = None
        if self._interaction() == InteractionType.RANDOM:
            if self.return_log_prob and hasattr(dist, "sample_and_log_prob"):
                action, log_prob = dist.sample_and_log_prob()
            else:
                action = dist.sample()
        else:
            action = _interaction_sample(dist, self._interaction())
        if self.return_log_prob and log_prob is None:
            log_prob = dist.log_prob(action)
        if self._action_dtype is not None and action.dtype != self._action_dtype:
            action = action.to(self._action_dtype)
        tensordict.set(self.action_key, action)
        if self.safe:
            project_outputs(tensordict, self.spec, [self.action_key])
        if log_prob is not None:
            tensordict.set(self.log_prob_key, log_prob)
        return tensordict


def _interaction_sample(dist, itype: InteractionType) -> torch.Tensor:
    """The action of a non-random interaction, as torchrl picks it: ``dist.mode`` under
    ``MODE``, ``dist.mean`` under ``MEAN``, else the distribution's ``deterministic_sample``,
    or for a plain ``torch.distributions`` class (e.g. ``torch.distributions.Categorical``,
    as torchrl's examples use) its mode on a discrete support and its mean otherwise, as
    tensordict does. The three agree for TanhNormal (``mid + half * tanh(loc)``), the
    normal and the categoricals; TruncatedNormal's mode is ``loc`` clamped onto the bounds,
    its mean and deterministic sample the truncated mean."""
    if itype == InteractionType.MODE:
        return dist.mode
    if itype == InteractionType.MEAN:
        return dist.mean
    sample = getattr(dist, "deterministic_sample", None)
    if sample is not None:
        return sample
    try:
        real = isinstance(dist.support, torch.distributions.constraints._Real)
    except NotImplementedError:
        real = False
    return dist.mean if real else dist.mode


class _ReadParams(TensorDictModuleBase):
    """Reads distribution parameters already in the tensordict (no network)."""

    def __init__(self, keys: list) -> None:
        super().__init__()
        self.in_keys = list(keys)
        self.out_keys = []

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


class SafeProbabilisticModule(ProbabilisticActor):
    """Samples an action from distribution parameters already in the tensordict (torchrl's
    ``SafeProbabilisticModule``); put it after the network in a
    :class:`~rl_trainers.modules.SafeProbabilisticTensorDictSequential`.

    Args:
        in_keys: keys of the distribution parameters (see :class:`ProbabilisticActor`).
        out_keys: where to write the action (``["action"]``).
        spec, safe, default_interaction_type, distribution_class, distribution_kwargs,
            return_log_prob, log_prob_key, cache_dist, n_empirical_estimate: as in
            :class:`ProbabilisticActor`.
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | dict[str, NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        spec=None,
        safe: bool = False,
        default_interaction_type: InteractionType = InteractionType.DETERMINISTIC,
        distribution_class: type = TanhNormal,
        distribution_kwargs: dict | None = None,
        return_log_prob: bool = False,
        log_prob_key: NestedKey | None = "sample_log_prob",
        cache_dist: bool = False,
        n_empirical_estimate: int = 1000,
    ) -> None:
        keys = [in_keys] if isinstance(in_keys, str) else in_keys
        params = list(keys.values()) if isinstance(keys, dict) else list(keys)
        super().__init__(
            _ReadParams(params),
            in_keys,
            out_keys,
            spec=spec,
            distribution_class=distribution_class,
            distribution_kwargs=distribution_kwargs,
            return_log_prob=return_log_prob,
            log_prob_key=log_prob_key,
            default_interaction_type=default_interaction_type,
            safe=safe,
            cache_dist=cache_dist,
            n_empirical_estimate=n_empirical_estimate,
        )
        self.out_keys = [k for k in self.out_keys if k not in params]


def _is_keys(value) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(k, (str, tuple)) for k in value)


class TanhModule(TensorDictModuleBase):
    """Squashes its input into ``[low, high]`` with ``tanh`` (bounded deterministic actors).

    Two forms:

    * torchrl's: ``TanhModule(in_keys, out_keys=None, *, spec=None, low=None, high=None,
      clamp=False)`` is a tensordict module reading ``in_keys`` and writing ``out_keys``
      (default: ``in_keys``); the bounds come from ``low``/``high``, else from ``spec``
      (a bounded spec, or a composite keyed by the out key), else ``[-1, 1]``. ``clamp``
      keeps the output ``eps`` inside the bounds.
    * on tensors: ``TanhModule(low=-1.0, high=1.0)`` maps ``x`` to
      ``center + half_range * tanh(x)`` (e.g. ``nn.Sequential(mlp, TanhModule(low, high))``).
    """

    def __init__(
        self,
        in_keys=None,
        out_keys=None,
        *,
        spec=None,
        low: torch.Tensor | float | None = None,
        high: torch.Tensor | float | None = None,
        clamp: bool = False,
    ) -> None:
        super().__init__()
        if in_keys is not None and not _is_keys(in_keys):
            # the tensor form's positional order: TanhModule(low, high)
            low, high, in_keys, out_keys = in_keys, out_keys, None, None
        if in_keys is None:
            self.in_keys, self.out_keys = [], []
        else:
            in_keys = [in_keys] if isinstance(in_keys, str) else list(in_keys)
            out_keys = in_keys if out_keys is None else out_keys
            out_keys = [out_keys] if isinstance(out_keys, str) else list(out_keys)
            if len(in_keys) != len(out_keys):
                raise ValueError(f"in_keys {in_keys} and out_keys {out_keys} differ in length")
            self.in_keys, self.out_keys = in_keys, out_keys
        if (low is None or high is None) and spec is not None:
            if self.out_keys and not hasattr(spec, "low"):
                try:
                    spec = spec[self.out_keys[0]]
                except (KeyError, TypeError):
                    pass
            low = spec.low if low is None else low
            high = spec.high if high is None else high
        low = torch.as_tensor(-1.0 if low is None else low, dtype=torch.float32)
        high = torch.as_tensor(1.0 if high is None else high, dtype=torch.float32)
        if not (low < high).all():
            raise ValueError(f"TanhModule needs low < high, got low={low} high={high}")
        self.spec = spec
        self.clamp = clamp
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def _squash(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x)
        if self.clamp:
            eps = torch.finfo(y.dtype).resolution
            y = y.clamp(-1 + eps, 1 - eps)
        return self.center + self.half_range * y

    def forward(self, x):
        if not isinstance(x, TensorDictBase):
            return self._squash(x)
        if not self.in_keys:
            raise TypeError("TanhModule(low, high) works on tensors; give in_keys for tensordicts")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            x.set(out_key, self._squash(x.get(in_key)))
        return x


class Actor(TensorDictModule):
    """A deterministic actor: ``module(observation) -> action``.

    Args:
        module: the network.
        in_keys: input keys (``["observation"]``).
        out_keys: output keys (``["action"]``).
        spec: the action spec (kept for exploration wrappers).
        safe: project actions outside ``spec`` back onto it.
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec=None,
        safe: bool = False,
    ) -> None:
        super().__init__(
            module,
            in_keys=list(in_keys) if in_keys is not None else ["observation"],
            out_keys=list(out_keys) if out_keys is not None else ["action"],
        )
        if safe and spec is None:
            raise RuntimeError("Actor(safe=True) needs a spec")
        self.spec = spec
        self.safe = safe

    def forward(self, *args, **kwargs):
        return project_if_safe(self, super().forward(*args, **kwargs))


class ValueOperator(TensorDictModule):
    """Wraps a value network reading ``in_keys`` and writing a value.

    The default output key is ``"state_value"``, or ``"state_action_value"`` when ``"action"``
    is among the inputs. Several inputs reach the module as separate positional arguments
    (:class:`~rl_trainers.modules.MLP` concatenates them).

    Args:
        module: the network.
        in_keys: input keys (``["observation"]``).
        out_keys: output keys.
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        in_keys = ["observation"] if in_keys is None else list(in_keys)
        if out_keys is None:
            out_keys = ["state_action_value"] if "action" in in_keys else ["state_value"]
        super().__init__(module, in_keys=in_keys, out_keys=list(out_keys))


#: torchrl's spellings of the discrete action spaces
_ACTION_SPACES = {
    "one_hot": "one_hot",
    "one-hot": "one_hot",
    "onehot": "one_hot",
    "categorical": "categorical",
}


def discrete_kind(action_space, spec, owner: str) -> tuple[str, object]:
    """``("one_hot" | "categorical", action spec)`` from torchrl's ``action_space``/``spec``
    pair: ``action_space`` is a name or a spec; without it the spec decides."""
    spec = leaf_spec(spec, "action", required=True)
    if action_space is not None and not isinstance(action_space, str):
        spec, action_space = action_space, None
    if action_space is None and spec is None:
        raise ValueError(f"{owner} needs a spec or an action_space ('one_hot' or 'categorical')")
    kind = spec_kind(spec) if action_space is None else action_space
    kind = _ACTION_SPACES.get(kind, kind)
    if kind in ("mult_one_hot", "mult-one-hot", "binary"):
        raise NotImplementedError(f"{owner}: action_space {kind!r} is not supported")
    if kind not in ("one_hot", "categorical"):
        raise ValueError(f"{owner} supports one_hot or categorical actions, got {kind!r}")
    if action_space is not None and spec is not None and spec_kind(spec) != kind:
        raise ValueError(
            f"The action spec and the action space do not match: got action_space={kind} "
            f"and spec={type(spec).__name__}."
        )
    return kind, spec


def greedy_action(
    values: torch.Tensor, kind: str, dtype=None, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(action, chosen value [*B, 1])`` of the greedy choice over ``values`` ``[*B, n]``;
    ``mask`` (bool ``[*B, n]``) excludes the False actions."""
    if mask is not None:
        values = values.masked_fill(~mask.bool(), float("-inf"))
    index = values.argmax(-1)
    chosen = values.gather(-1, index.unsqueeze(-1))
    if kind == "one_hot":
        action = F.one_hot(index, values.shape[-1]).to(dtype or torch.int64)
    else:
        action = index if dtype is None else index.to(dtype)
    return action, chosen


class QValueModule(TensorDictModuleBase):
    """Turns action values into the greedy action (torchrl's ``QValueModule``).

    Reads ``action_value_key`` (``[*B, n]``) and writes ``out_keys`` = ``["action",
    action_value_key, "chosen_action_value"]``. Works on tensordicts and on tensors:
    ``module(values)`` returns ``(action, values, chosen_action_value)``.

    Args:
        action_space: ``"one_hot"``/``"categorical"`` or an action spec.
        action_value_key: key of the action values (``"action_value"``).
        out_keys: the three output keys.
        var_nums: torchrl's multi-one-hot cardinalities (not supported; must be None).
        spec: the action spec (or a composite with an ``"action"`` entry).
        safe: project the action onto the spec (greedy actions always lie in it).
        action_mask_key: key of a boolean mask of the allowed actions.
    """

    def __init__(
        self,
        action_space=None,
        action_value_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        var_nums: int | None = None,
        spec=None,
        safe: bool = False,
        action_mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        if var_nums is not None:
            raise NotImplementedError("QValueModule(var_nums=...): mult-one-hot is not supported")
        self.action_space, self.spec = discrete_kind(action_space, spec, "QValueModule")
        self.safe = safe
        action_value_key = "action_value" if action_value_key is None else action_value_key
        if out_keys is None:
            out_keys = ["action", action_value_key, "chosen_action_value"]
        elif action_value_key not in out_keys:
            raise RuntimeError(
                f"Expected the action-value key to be '{action_value_key}' but got "
                f"{out_keys[1]} instead."
            )
        self.action_mask_key = action_mask_key
        self.in_keys = [action_value_key] + ([action_mask_key] if action_mask_key else [])
        self.out_keys = list(out_keys)
        self._action_dtype = getattr(self.spec, "dtype", None)

    @property
    def action_value_key(self) -> NestedKey:
        return self.in_keys[0]

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = tensordict.get(self.action_value_key, None)
        if values is None:
            raise KeyError(f"Action value key {self.action_value_key} not found in {tensordict}.")
        mask = tensordict.get(self.action_mask_key) if self.action_mask_key else None
        action, chosen = greedy_action(values, self.action_space, self._action_dtype, mask)
        tensordict.update(dict(zip(self.out_keys, (action, values, chosen))))
        return tensordict


class QValueActor(TensorDictModuleBase):
    """Greedy actor over a Q-network's action values.

    Writes ``"action_value"`` ``[*B, n]``, ``"action"`` (one-hot ``[*B, n]`` or index ``[*B]``
    matching the spec) and ``"chosen_action_value"`` ``[*B, 1]``.

    Args:
        module: network mapping the inputs to ``[*B, n]`` action values (or a tensordict module
            writing ``action_value_key``).
        in_keys: input keys (``["observation"]``).
        spec: the action spec (OneHot or Categorical, or a composite with an ``"action"``).
        action_space: ``"one_hot"`` or ``"categorical"`` (or a spec) when no spec is given.
        action_value_key: key of the action values (``"action_value"``).
        safe: torchrl's projection onto the spec (greedy actions always lie in it).
        action_mask_key: key of a boolean mask of the allowed actions.
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        spec=None,
        action_space: str | None = None,
        action_value_key: NestedKey | None = None,
        *,
        safe: bool = False,
        action_mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        kind, spec = discrete_kind(action_space, spec, "QValueActor")
        self.action_space = kind
        self.spec = spec
        self.safe = safe
        self._action_dtype = getattr(spec, "dtype", None) if spec is not None else None
        action_value_key = "action_value" if action_value_key is None else action_value_key
        if isinstance(module, TensorDictModuleBase):
            if action_value_key not in module.out_keys:
                raise KeyError(f"The key '{action_value_key}' is not part of the module out-keys.")
            self._td_module = True
            in_keys = list(module.in_keys)
        else:
            self._td_module = False
            in_keys = ["observation"] if in_keys is None else list(in_keys)
        self.module = module
        self.action_value_key = action_value_key
        self.action_mask_key = action_mask_key
        self.in_keys = in_keys + ([action_mask_key] if action_mask_key else [])
        self._net_keys = in_keys
        self.out_keys = ["action", action_value_key, "chosen_action_value"]

    def action_values(self, tensordict: TensorDictBase) -> torch.Tensor:
        """Returns the action values ``[*B, n]`` without writing anything."""
        if self._td_module:
            return self.module(tensordict).get(self.action_value_key)
        return self.module(*(tensordict.get(k) for k in self._net_keys))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = self.action_values(tensordict)
        mask = tensordict.get(self.action_mask_key) if self.action_mask_key else None
        action, chosen = greedy_action(values, self.action_space, self._action_dtype, mask)
        tensordict.set(self.action_value_key, values)
        tensordict.set("action", action)
        tensordict.set("chosen_action_value", chosen)
        return tensordict
