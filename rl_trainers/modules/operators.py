"""Spec-aware tensordict modules and actor/value operators (torchrl's names).

* :class:`SafeModule` / :class:`SafeSequential`: ``TensorDictModule`` /
  ``TensorDictSequential`` that carry a ``spec`` and, with ``safe=True``, project outputs
  that fall outside it back onto it.
* :class:`ActorValueOperator`: a common trunk, a policy head and a state-value head.
* :class:`ActorCriticOperator`: the same with a state-action value head.
* :class:`ActorCriticWrapper`: a policy and a value network without a trunk.

``get_policy_operator()`` of a probabilistic head returns a module with ``get_dist``, so it
can be handed to the losses (``ClipPPOLoss(avo.get_policy_operator(),
avo.get_value_operator())``); the trunk's parameters then receive both losses' gradients.
"""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential
from torch import nn

__all__ = [
    "SafeModule",
    "SafeSequential",
    "SafeProbabilisticTensorDictSequential",
    "ActorValueOperator",
    "ActorCriticOperator",
    "ActorCriticWrapper",
]


def leaf_spec(spec, key="action", required: bool = False):
    """The spec of entry ``key``: a composite spec (torchrl's ``Composite(action=...)``, an
    actor's spec) is read at ``key``; a leaf spec is returned as is. A composite without
    ``key`` gives None, or a KeyError when ``required``."""
    if spec is None or not hasattr(spec, "keys"):
        return spec
    if key in spec.keys(True):
        return spec[key]
    if required:
        raise KeyError(f"the composite spec has no {key!r} entry: {spec}")
    return None


def _spec_for(spec, key, out_keys: list):
    """The spec of output ``key``: ``spec`` itself for a single-output module, else the entry
    of a composite spec (None when it has none)."""
    if spec is not None and not hasattr(spec, "keys") and len(out_keys) > 1:
        return spec if key == out_keys[0] else None
    return leaf_spec(spec, key)


def project_outputs(tensordict: TensorDictBase, spec, out_keys: list) -> TensorDictBase:
    """Projects each output that lies outside its spec back onto it (torchrl's ``safe``)."""
    for key in out_keys:
        leaf = _spec_for(spec, key, out_keys)
        value = tensordict.get(key, None)
        if leaf is None or value is None or not hasattr(leaf, "project"):
            continue
        if not leaf.is_in(value):
            tensordict.set(key, leaf.project(value))
    return tensordict


def project_if_safe(module: TensorDictModuleBase, out):
    """``out`` with ``module``'s outputs projected onto ``module.spec`` when ``module.safe``
    (the forward of a safe module)."""
    if module.safe and isinstance(out, TensorDictBase):
        project_outputs(out, module.spec, list(module.out_keys))
    return out


class SafeModule(TensorDictModule):
    """A :class:`~tensordict.nn.TensorDictModule` with an output spec.

    Args:
        module: the wrapped callable.
        in_keys: keys read.
        out_keys: keys written.
        spec: spec of the output (a composite spec keyed by the out keys for several).
        safe: project outputs outside ``spec`` back onto it (needs ``spec``).
        inplace: write into the input tensordict.
    """

    def __init__(
        self,
        module,
        in_keys: Sequence | str,
        out_keys: Sequence | str,
        spec=None,
        safe: bool = False,
        inplace: bool = True,
    ) -> None:
        super().__init__(module, in_keys=in_keys, out_keys=out_keys, inplace=inplace)
        if safe and spec is None:
            raise RuntimeError("`SafeModule(spec=None, safe=True)` is not a valid configuration")
        self.spec = spec
        self.safe = safe

    def forward(self, *args, **kwargs):
        return project_if_safe(self, super().forward(*args, **kwargs))


class SafeSequential(TensorDictSequential):
    """A :class:`~tensordict.nn.TensorDictSequential` (torchrl's ``SafeSequential``).

    Args:
        *modules: tensordict modules run in order.
        partial_tolerant: skip modules whose inputs are missing.
        selected_out_keys: keep only these outputs.
        inplace: write into the input tensordict.
        spec: spec of the outputs (optional).
    """

    def __init__(
        self,
        *modules: TensorDictModuleBase,
        partial_tolerant: bool = False,
        selected_out_keys: list | None = None,
        inplace: bool | None = None,
        spec=None,
    ) -> None:
        super().__init__(
            *modules,
            partial_tolerant=partial_tolerant,
            selected_out_keys=selected_out_keys,
            inplace=inplace,
        )
        self._spec = spec

    @property
    def spec(self):
        """The given spec, else the last module's (e.g. a policy head's action spec)."""
        if self._spec is not None:
            return self._spec
        for module in reversed(list(self.module)):
            spec = getattr(module, "spec", None)
            if spec is not None:
                return spec
        return None


class ProbabilisticSequential(SafeSequential):
    """A trunk followed by a probabilistic actor: acts like the actor on the trunk's output.

    Its :meth:`get_dist` runs the trunk, then the actor's ``get_dist``, so the losses that
    take a probabilistic actor (PPO, A2C, SAC) accept it.
    """

    def get_dist(self, tensordict: TensorDictBase):
        *trunk, head = self.module
        for module in trunk:
            tensordict = module(tensordict)
        return head.get_dist(tensordict)

    @property
    def log_prob_key(self):
        return getattr(self.module[-1], "log_prob_key", "sample_log_prob")


class SafeProbabilisticTensorDictSequential(ProbabilisticSequential):
    """torchrl's name: modules ending with a probabilistic one (e.g.
    ``SafeProbabilisticTensorDictSequential(TensorDictModule(net, ..., ["loc", "scale"]),
    SafeProbabilisticModule(["loc", "scale"], ["action"], distribution_class=TanhNormal))``);
    its ``get_dist`` runs the network and returns the last module's distribution."""

    def __init__(self, *modules: TensorDictModuleBase, partial_tolerant: bool = False) -> None:
        if not hasattr(modules[-1], "get_dist"):
            raise TypeError(
                "the last module must be probabilistic (SafeProbabilisticModule or "
                f"ProbabilisticActor), got {type(modules[-1]).__name__}"
            )
        super().__init__(*modules, partial_tolerant=partial_tolerant)


def _policy_with_trunk(common: nn.Module, policy: nn.Module) -> SafeSequential:
    if hasattr(policy, "get_dist"):
        return ProbabilisticSequential(common, policy)
    return SafeSequential(common, policy)


class ActorValueOperator(SafeSequential):
    """A shared trunk, a policy head and a state-value head, run in that order.

    Args:
        common_operator: reads observations, writes a hidden entry.
        policy_operator: reads the hidden entry, writes the action.
        value_operator: reads the hidden entry, writes the value.

    Example:
        >>> avo = ActorValueOperator(trunk, actor_head, value_head)
        >>> loss = ClipPPOLoss(avo.get_policy_operator(), avo.get_value_operator())
    """

    def __init__(
        self,
        common_operator: TensorDictModuleBase,
        policy_operator: TensorDictModuleBase,
        value_operator: TensorDictModuleBase,
    ) -> None:
        super().__init__(common_operator, policy_operator, value_operator)

    def get_policy_operator(self) -> SafeSequential:
        """The trunk and the policy head: observation -> action (with ``get_dist`` if the
        head is probabilistic). Shares the parameters of this operator."""
        return _policy_with_trunk(self.module[0], self.module[1])

    def get_value_operator(self) -> SafeSequential:
        """The trunk and the value head: observation -> value. Shares the parameters."""
        return SafeSequential(self.module[0], self.module[2])

    def get_policy_head(self) -> TensorDictModuleBase:
        """The policy head alone (reads the hidden entry)."""
        return self.module[1]

    def get_value_head(self) -> TensorDictModuleBase:
        """The value head alone (reads the hidden entry)."""
        return self.module[2]


class ActorCriticOperator(ActorValueOperator):
    """A shared trunk, a policy head and a state-action value head (reading the action).

    ``get_critic_operator()`` is the whole operator (the value needs the policy's action);
    ``get_value_operator()`` raises, as in torchrl.
    """

    def __init__(
        self,
        common_operator: TensorDictModuleBase,
        policy_operator: TensorDictModuleBase,
        value_operator: TensorDictModuleBase,
    ) -> None:
        super().__init__(common_operator, policy_operator, value_operator)
        if self.module[2].out_keys[0] == "state_value":
            raise RuntimeError(
                "Value out_key is state_value, which may lead to errors in downstream usages "
                "of that module. Consider setting `'state_action_value'` instead. Make also "
                "sure that `'action'` is amongst the input keys of the value network. If you "
                "are confident that action should not be used to compute the value, please "
                "use `ActorValueOperator` instead."
            )

    def get_critic_operator(self) -> ActorCriticOperator:
        """The operator itself: observation -> action -> state-action value."""
        return self

    def get_value_operator(self):
        raise RuntimeError(
            "value_operator is the term used for operators that associate a value with a "
            "state/observation. This class computes the value of a state-action pair: to get "
            "the network computing this value, please call get_critic_operator()"
        )


class ActorCriticWrapper(SafeSequential):
    """A policy and a value network that share nothing, run in that order.

    Args:
        policy_operator: observation -> action.
        value_operator: observation -> value.
    """

    def __init__(
        self, policy_operator: TensorDictModuleBase, value_operator: TensorDictModuleBase
    ) -> None:
        super().__init__(policy_operator, value_operator)

    def get_policy_operator(self) -> TensorDictModuleBase:
        """The policy network itself."""
        return self.module[0]

    def get_value_operator(self) -> TensorDictModuleBase:
        """The value network itself."""
        return self.module[1]

    get_policy_head = get_policy_operator
    get_value_head = get_value_operator
