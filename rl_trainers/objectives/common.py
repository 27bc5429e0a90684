"""LossModule base class, target networks, and small shared helpers."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from enum import Enum
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictParams, TensorDictSequential
from torch import nn
from torch.nn.parameter import UninitializedParameter

from rl_trainers.modules.operators import leaf_spec
from rl_trainers.modules.rnn import runs_recurrent

__all__ = [
    "LossModule",
    "ValueEstimators",
    "distance_loss",
    "explained_variance",
    "buffer_copy",
    "constant",
    "gradient_buffers",
    "ParamsView",
    "params_view",
]


@functools.cache
def constant(value: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A shared, read-only 0-d tensor (e.g. the upstream gradient 1 of a loss term)."""
    return torch.tensor(value, dtype=dtype, device=device)


def gradient_buffers(params: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
    """Where :meth:`LossModule.loss_and_grads` writes each parameter's gradient: its
    ``.grad`` when that is contiguous (torch checks its shape, dtype and device), else a new
    tensor set as its ``.grad``; None for a parameter that does not require grad."""
    out: list[torch.Tensor | None] = []
    for p in params:
        if not p.requires_grad:
            out.append(None)
            continue
        grad = p.grad
        if grad is None or not grad.is_contiguous():
            grad = p.grad = torch.empty_like(p, memory_format=torch.contiguous_format)
        out.append(grad)
    return out


class ValueEstimators(Enum):
    """Value estimators a loss can be configured with (``make_value_estimator``)."""

    TD0 = "td0"
    TD1 = "td1"
    TDLambda = "td_lambda"
    GAE = "gae"
    VTrace = "vtrace"


_LOSS_FUNCTIONS = ("l1", "l2", "smooth_l1")


def estimator_type(name: str) -> ValueEstimators:
    """The :class:`ValueEstimators` member named ``name`` (``"gae"``, ``"td0"``...)."""
    try:
        return ValueEstimators(name.lower())
    except ValueError:
        allowed = [v.value for v in ValueEstimators]
        raise ValueError(f"unknown value estimator {name!r}; allowed: {allowed}") from None


def distance_loss(
    prediction: torch.Tensor, target: torch.Tensor, loss_function: str = "l2"
) -> torch.Tensor:
    """Elementwise distance (no reduction).

    Args:
        prediction: predicted values.
        target: target values (broadcast to the prediction).
        loss_function: ``"l2"`` (squared error), ``"l1"`` or ``"smooth_l1"`` (Huber, beta 1).
    """
    if loss_function == "l2":
        return (prediction - target).pow(2)
    if loss_function == "l1":
        return (prediction - target).abs()
    if loss_function == "smooth_l1":
        return F.smooth_l1_loss(prediction, target.expand_as(prediction), reduction="none")
    raise ValueError(f"unknown loss_function {loss_function!r}; allowed: {_LOSS_FUNCTIONS}")


def check_loss_function(loss_function: str) -> str:
    if loss_function not in _LOSS_FUNCTIONS:
        raise ValueError(f"unknown loss_function {loss_function!r}; allowed: {_LOSS_FUNCTIONS}")
    return loss_function


@torch.no_grad()
def check_no_shared_parameters(actor_network, critic_network, critic_name: str) -> None:
    """torchrl's ``separate_losses=True`` is accepted for networks that share no parameter
    (the only case rl_trainers' losses implement); shared ones raise."""
    actor_params = {id(p) for p in actor_network.parameters()}
    if any(id(p) in actor_params for p in critic_network.parameters()):
        raise NotImplementedError(
            f"separate_losses=True with parameters shared by the actor and the {critic_name} "
            "is not supported; use separate networks"
        )


def check_torchrl_options(samples_mc_entropy, exclude_dims, reduction) -> None:
    """Accepts torchrl's loss options at the values rl_trainers implements, refuses others."""
    if samples_mc_entropy != 1:
        raise NotImplementedError(
            f"samples_mc_entropy={samples_mc_entropy}: the entropy of a distribution without "
            "a closed form is estimated with one sample"
        )
    if tuple(exclude_dims):
        raise NotImplementedError(
            "normalize_advantage_exclude_dims is not supported (the advantage is "
            "normalised over the whole batch)"
        )
    if reduction not in (None, "mean"):
        raise NotImplementedError(f"reduction={reduction!r}: the losses are means")


def explained_variance(target: torch.Tensor, prediction: torch.Tensor) -> torch.Tensor:
    """``1 - Var[target - prediction] / Var[target]`` (1 is perfect, 0 no better than a constant).

    Returns 0 when the target has zero variance.
    """
    var_target = target.float().var(unbiased=False)
    var_residual = (target - prediction).float().var(unbiased=False)
    # torch.where instead of an `if` on a tensor: no host synchronisation in the hot path
    return torch.where(var_target > 0, 1.0 - var_residual / var_target, 0.0)


def _has_uninitialized(module: nn.Module) -> bool:
    return any(isinstance(p, UninitializedParameter) for p in module.parameters())


def buffer_copy(module: nn.Module) -> nn.Module:
    """Deep-copies ``module`` with every parameter turned into a (non-trainable) buffer.

    The copy runs exactly like the original but its tensors are excluded from ``parameters()``
    while still saved in ``state_dict()``: this is how losses keep target networks.
    """
    if _has_uninitialized(module):
        raise RuntimeError(
            "cannot copy a network with uninitialized lazy layers: run it once on a batch "
            "(e.g. policy(env.fake_tensordict())) before building the loss"
        )
    target = copy.deepcopy(module)
    for sub in target.modules():
        for name in list(sub._parameters):
            param = sub._parameters.pop(name)
            sub.register_buffer(name, None if param is None else param.detach().clone())
    return target


class ParamsView:
    """torchrl's ``loss.<name>_params`` surface on a module holding a network's tensors.

    torchrl keeps a loss's parameters in ``TensorDictParams``; scripts read them as a
    TensorDict, e.g. ``Adam(loss.qvalue_network_params.flatten_keys().values())``. Here the
    module itself holds the tensors (and still runs as the network); these methods return
    views whose leaves are its very parameters and buffers.
    """

    def params_td(self) -> TensorDict:
        """The module's parameters and buffers as a TensorDict (same tensor objects)."""
        return TensorDict.from_module(self)

    def flatten_keys(self, separator: str = ".") -> TensorDict:
        return self.params_td().flatten_keys(separator)

    def keys(self, include_nested: bool = False, leaves_only: bool = False):
        return self.params_td().keys(include_nested, leaves_only)

    def values(self, include_nested: bool = False, leaves_only: bool = False):
        return self.params_td().values(include_nested, leaves_only)

    def items(self, include_nested: bool = False, leaves_only: bool = False):
        return self.params_td().items(include_nested, leaves_only)

    def clone(self) -> TensorDict:
        """A copy of the tensors (e.g. to compare before and after an update)."""
        return self.params_td().clone()


def _rebuild_with_params_view(cls: type, state: dict) -> nn.Module:
    module = cls.__new__(cls)
    module.__setstate__(state)
    return with_params_view(module)


def _reduce_with_params_view(self, protocol):
    # pickled as the original class plus the view (a generated class has no importable name)
    return _rebuild_with_params_view, (self._view_base, self.__dict__.copy())


@functools.cache
def _with_params_view(cls: type) -> type:
    namespace = {
        "__module__": cls.__module__,
        "_view_base": cls,
        "__reduce_ex__": _reduce_with_params_view,
    }
    return type(cls.__name__, (ParamsView, cls), namespace)


def with_params_view(module: nn.Module) -> nn.Module:
    """Gives ``module`` the :class:`ParamsView` methods (in place, as
    ``torch.nn.utils.parametrize`` does: its class becomes a subclass of its class)."""
    if not isinstance(module, ParamsView):
        module.__class__ = _with_params_view(type(module))
    return module


def params_view(module: nn.Module) -> TensorDictParams:
    """``module``'s parameters and buffers as torchrl's ``TensorDictParams`` (its leaves are
    the module's own tensors: an optimiser built on them trains the module)."""
    return TensorDictParams(TensorDict.from_module(module), no_convert=True)


def _functional_target_pairs(source: nn.Module, target: TensorDictBase):
    """Matches ``source``'s parameters (shared ones included) with ``target``'s copies by
    key (``target`` holds ``TensorDict.from_module(source)``'s keys)."""
    srcs, tgts = [], []
    for key, value in TensorDict.from_module(source).items(True, True):
        if isinstance(value, nn.Parameter):
            srcs.append(value)
            tgts.append(target.get(key))
    return srcs, tgts


def _source_target_pairs(source: nn.Module, target: nn.Module):
    """Matches source parameters with target buffers by name."""
    tgt = dict(target.named_buffers())
    srcs, tgts = [], []
    for name, param in source.named_parameters():
        if name in tgt:
            srcs.append(param)
            tgts.append(tgt[name])
    return srcs, tgts


#: torchrl's ``tensor_keys`` of the one-step (off-policy) losses: the priority key, the
#: action and the next step's reward/done/terminated entries can be renamed
#: (``set_keys(priority=...)``, ``set_keys(action="agent_action")``,
#: ``set_keys(done="end-of-life", terminated="end-of-life")``)
OFF_POLICY_KEYS: dict = {
    "priority": "priority_key",
    "action": "action_key",
    "reward": "reward_key",
    "done": "done_key",
    "terminated": "terminated_key",
}


class LossModule(nn.Module):
    """Base class of losses: ``forward(td) -> TensorDict`` of ``loss_*`` scalars and diagnostics.

    Sum the ``loss_*`` entries for the backward pass; every other entry is detached.
    Target networks are registered with :meth:`_register_target` and kept as buffers named
    ``target_<name>_params`` (saved by ``state_dict()``, left out of ``parameters()``).
    :class:`SoftUpdate` and :class:`HardUpdate` update them.

    Attributes:
        diagnostics: compute the diagnostic entries (entropy, KL, clip fraction, explained
            variance...); the ``loss_*`` terms never depend on it. The :class:`Trainer`
            turns it off for the batches whose losses it does not log (a PPO update spends
            ~10 % of its time on them).
    """

    default_value_estimator: ValueEstimators = ValueEstimators.TD0
    #: where the next step's reward and episode-end flags are read (``("next", key)``)
    reward_key, done_key, terminated_key = "reward", "done", "terminated"
    #: where the batch's action is read (and where an actor's action goes into the critics)
    action_key = "action"
    #: the loss computes its TD(0) targets itself (off-policy losses): other estimators raise
    one_step_targets = False
    functional = True
    diagnostics = True

    def __init__(self) -> None:
        super().__init__()
        self._target_names: list[str] = []
        self._value_estimator = None
        self.gamma = 0.99

    # -- target networks -------------------------------------------------------------------
    def _register_target(self, name: str, source: nn.Module) -> None:
        """Creates ``self.target_<name>_params``, a buffer-only copy of ``source``."""
        self._target_names.append(name)
        setattr(self, f"target_{name}_params", with_params_view(buffer_copy(source)))

    def _source_of(self, name: str) -> nn.Module:
        return getattr(self, name)

    def target_pairs(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Returns matching lists (online parameters, target buffers) of every target network."""
        srcs, tgts = [], []
        for name in self._target_names:
            target = getattr(self, f"target_{name}_params")
            if isinstance(target, TensorDictParams):  # from convert_to_functional
                s, t = _functional_target_pairs(self._source_of(name), target)
            else:
                s, t = _source_target_pairs(self._source_of(name), target)
            srcs += s
            tgts += t
        return srcs, tgts

    # -- torchrl's functional API for hand-written losses ------------------------------------
    def convert_to_functional(
        self,
        module: nn.Module,
        module_name: str,
        expand_dim: int | None = None,
        create_target_params: bool = False,
        compare_against: Sequence[torch.Tensor] | None = None,
        **kwargs,
    ) -> None:
        """Registers ``module`` for a loss written against torchrl's functional API.

        Sets ``self.<module_name>`` (the module, whose parameters the loss's
        ``parameters()`` yields), ``self.<module_name>_params`` (a ``TensorDictParams``
        whose leaves are the module's own parameters and buffers: an optimiser over
        ``params.values(True, True)`` trains the module, and ``with
        params.detach().to_module(module):`` runs it without gradients to them) and, with
        ``create_target_params``, ``self.target_<module_name>_params`` (a detached copy,
        kept as buffers, that :class:`SoftUpdate`/:class:`HardUpdate` move toward the
        parameters).

        Args:
            module: the network.
            module_name: attribute name, e.g. ``"actor_network"``.
            expand_dim: torchrl's stacked copies of the parameters; not supported (use
                :class:`~rl_trainers.objectives.ensemble.CriticEnsemble`).
            create_target_params: also keep a target copy.
            compare_against: tensors owned by another network (e.g. a shared encoder's
                parameters): they enter ``<module_name>_params`` detached, so a loss that
                calls the module through them does not train them.
        """
        if expand_dim is not None:
            raise NotImplementedError(
                f"convert_to_functional(expand_dim={expand_dim}): stacked parameter copies "
                "are not supported; build an ensemble critic (CriticEnsemble) instead"
            )
        if kwargs:
            raise TypeError(f"convert_to_functional: unexpected arguments {sorted(kwargs)}")
        if _has_uninitialized(module):
            raise RuntimeError(
                f"convert_to_functional({module_name!r}): the network has uninitialized lazy "
                "layers; run it once on a batch before building the loss"
            )
        setattr(self, module_name, module)
        params = TensorDict.from_module(module)
        shared = {id(t) for t in compare_against or ()}
        detached = [k for k, v in params.items(True, True) if id(v) in shared]
        self.__dict__.setdefault("_functional", {})[f"{module_name}_params"] = (
            module_name,
            detached,
        )
        if create_target_params:
            target = params.detach().clone()
            setattr(self, f"target_{module_name}_params", TensorDictParams(target, no_convert=True))
            self._target_names.append(module_name)

    def __getattr__(self, name: str):
        functional = self.__dict__.get("_functional")
        if functional is not None and name in functional:
            # built on each access from the module's current tensors, so a copy of the loss
            # (deepcopy, pickling) or a moved module stays tied to its own parameters
            module_name, detached = functional[name]
            params = TensorDict.from_module(getattr(self, module_name))
            for key in detached:
                params.set(key, params.get(key).detach())
            return TensorDictParams(params, no_convert=True)
        return super().__getattr__(name)

    @property
    def has_targets(self) -> bool:
        return bool(self._target_names)

    # -- tensordict keys (torchrl's set_keys) -----------------------------------------------
    #: torchrl key name -> attribute holding it; names mapped to None are read at fixed keys
    _key_attrs: dict = {}

    def set_keys(self, **kwargs) -> LossModule:
        """Renames the entries the loss reads or writes, with torchrl's key names (e.g.
        ``set_keys(sample_log_prob="log_prob", value="state_value")``); the value estimator
        follows. Returns the loss."""
        for name, key in kwargs.items():
            if name not in self._key_attrs:
                raise ValueError(
                    f"{type(self).__name__}.set_keys: unknown key {name!r}; "
                    f"accepted: {sorted(self._key_attrs)}"
                )
            attr = self._key_attrs[name]
            if attr is None:
                if key != name:
                    raise NotImplementedError(
                        f"{type(self).__name__} reads ('next', {name!r}) at a fixed key"
                    )
                continue
            setattr(self, attr, key)
        self._keys_changed()
        if self._value_estimator is not None and hasattr(self._value_estimator, "set_keys"):
            names = self._value_estimator._key_attrs
            self._value_estimator.set_keys(**{k: v for k, v in kwargs.items() if k in names})
        return self

    def _keys_changed(self) -> None:
        """Called by :meth:`set_keys` after renaming (subclasses re-check their networks)."""

    # -- gradients without autograd ----------------------------------------------------------
    def loss_and_grads(
        self, tensordict: TensorDictBase, loss_keys: Sequence[str] | None = None
    ) -> TensorDictBase | None:
        """:meth:`forward`'s TensorDict, with the gradient of the sum of its ``loss_keys``
        entries (None: every ``loss*`` entry) set as the parameters' ``.grad``, computed
        without an autograd graph; or None, having changed nothing, where this loss cannot
        (then call :meth:`forward` and ``backward()``).

        The gradients replace the previous ones, as ``zero_grad()`` then ``backward()``
        would, and are written into a parameter's existing ``.grad`` tensor when it is
        contiguous (a trainer keeps them in one buffer, see
        :class:`~rl_trainers.core.flat_params.FlatParameters`). Losses whose forward and
        backward are hand-written nodes implement it (:class:`ClipPPOLoss` with MLP
        networks): on small networks the autograd engine's fixed cost per backward pass is
        a large part of an optimisation step. This base implementation returns None.
        """
        return None

    @property
    def tensor_keys(self) -> SimpleNamespace:
        """The current keys under torchrl's names (``loss.tensor_keys.advantage``...)."""
        return SimpleNamespace(
            **{
                name: (name if attr is None else getattr(self, attr))
                for name, attr in self._key_attrs.items()
            }
        )

    # -- outputs (torchrl's out_keys / select_out_keys) -------------------------------------
    def _default_out_keys(self) -> list[str]:
        return []

    @property
    def out_keys(self) -> list[str]:
        """The entries :meth:`forward` writes (those kept by :meth:`select_out_keys`)."""
        keys = self._default_out_keys()
        selected = getattr(self, "_selected_out_keys", None)
        return keys if selected is None else [k for k in keys if k in selected]

    def select_out_keys(self, *keys: str) -> LossModule:
        """Makes :meth:`forward` return only ``keys`` (e.g.
        ``loss.select_out_keys("loss_actor", "loss_qvalue")``). Returns the loss."""
        unknown = [k for k in keys if k not in self._default_out_keys()]
        if unknown:
            raise ValueError(
                f"{type(self).__name__} does not write {unknown}; its entries: "
                f"{self._default_out_keys()}"
            )
        if getattr(self, "_selected_out_keys", None) is None:
            self.register_forward_hook(_select_outputs)
        self._selected_out_keys = list(keys)
        return self

    # -- value estimators ------------------------------------------------------------------
    @property
    def value_estimator(self):
        """The value estimator (built with the default type on first access)."""
        if self._value_estimator is None:
            self.make_value_estimator()
        return self._value_estimator

    @value_estimator.setter
    def value_estimator(self, estimator) -> None:
        self._value_estimator = estimator

    def make_value_estimator(self, value_type: ValueEstimators | str | None = None, **hyperparams):
        """Builds the value estimator of this loss.

        Args:
            value_type: a :class:`ValueEstimators` member or its value (``"gae"``, ``"td0"``...).
            **hyperparams: estimator hyperparameters (``gamma``, ``lmbda``, ...).
        """
        from rl_trainers.objectives.value import make_estimator

        value_type = self.default_value_estimator if value_type is None else value_type
        if isinstance(value_type, str):
            value_type = estimator_type(value_type)
        if self.one_step_targets and value_type != ValueEstimators.TD0:
            raise NotImplementedError(
                f"{type(self).__name__} computes one-step (TD0) targets from each transition; "
                f"{value_type} is not supported (use ValueEstimators.TD0, or n-step batches "
                "from MultiStep)"
            )
        if "gamma" in hyperparams:
            self.gamma = float(hyperparams["gamma"])
        else:
            hyperparams["gamma"] = self.gamma
        if value_type == ValueEstimators.VTrace and "actor_network" not in hyperparams:
            actor = getattr(self, "actor_network", None)
            if actor is None:
                raise NotImplementedError(
                    f"{type(self).__name__} has no actor_network: V-trace needs the "
                    "log-probabilities of the policy being trained"
                )
            hyperparams["actor_network"] = actor
        self._value_estimator = make_estimator(
            value_type, value_network=self._estimator_network(), **hyperparams
        )
        shared = {
            name: getattr(self, attr)
            for name, attr in self._key_attrs.items()
            if attr is not None and self._value_estimator._key_attrs.get(name) is not None
        }
        self._value_estimator.set_keys(**shared)
        return self

    def _estimator_network(self):
        return None

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:  # pragma: no cover
        raise NotImplementedError

    # -- torchrl's keyword call (tensordict's ``dispatch``) ---------------------------------
    #: rl_trainers' own diagnostic entries, left out of the keyword call's tuple where
    #: torchrl's loss does not return them (so that its tuple unpacks as in torchrl)
    _dispatch_exclude: tuple = ()

    def __call__(self, *args, **kwargs):
        """``loss(td)``, or torchrl's tensor form ``loss(observation=..., action=...,
        next_reward=..., next_done=..., next_terminated=..., next_observation=...)``: the
        keyword names are the input keys joined by ``"_"``; it returns the ``out_keys``
        entries as a tuple in their order (the tensor itself for a single one)."""
        if args or not kwargs or "tensordict" in kwargs:
            return super().__call__(*args, **kwargs)
        out = super().__call__(self._batch_from_kwargs(kwargs))
        keys = [k for k in self.out_keys if k not in self._dispatch_exclude]
        values = tuple(out.get(k) for k in keys if k in out.keys())
        return values[0] if len(values) == 1 else values

    def _batch_from_kwargs(self, kwargs: dict) -> TensorDictBase:
        """The batch of a keyword call: ``next_reward`` -> ``("next", "reward")`` and so on
        (the loss's ``in_keys`` joined by ``"_"``), batch dims shared by every entry but the
        last (feature) dim; one unbatched transition becomes a batch of one."""
        names = {}
        for key in getattr(self, "in_keys", []):
            names[key if isinstance(key, str) else "_".join(key)] = key
        data = {}
        for name, value in kwargs.items():
            key = names.get(name)
            if key is None:
                key = ("next", name[len("next_") :]) if name.startswith("next_") else name
            data[key] = torch.as_tensor(value)
        shapes = [v.shape[:-1] for v in data.values()]
        batch = min(shapes, key=len) if shapes else torch.Size([])
        if any(s[: len(batch)] != batch for s in shapes):
            raise ValueError(
                f"{type(self).__name__}: the keyword inputs share no batch shape: "
                f"{ {k: tuple(v.shape) for k, v in kwargs.items()} }"
            )
        td = TensorDict(data, batch_size=batch)
        return td.unsqueeze(0) if not len(batch) else td


def _select_outputs(loss: LossModule, args, output):
    if isinstance(output, TensorDictBase):
        return output.select(*loss._selected_out_keys, strict=False)
    return output


def feature_dims(tensor: torch.Tensor) -> int:
    """How many trailing dims of a network input are features, not batch: three for images
    (``[..., C, H, W]``, i.e. inputs with four or more dims), else one."""
    return 3 if tensor.ndim >= 4 else 1


class TensorDictFn(nn.Module):
    """Calls a tensordict module as ``fn(*tensors) -> tensor``: the inputs go in at
    ``in_keys``, the result is read at ``out_key`` (losses call networks on tensors). The
    batch is the leading dims the inputs share once their feature dims are set aside
    (:func:`feature_dims`)."""

    def __init__(self, module: nn.Module, in_keys: list, out_key) -> None:
        super().__init__()
        self.module = module
        self.in_keys = list(in_keys)
        self.out_key = out_key

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        batch = min((x.shape[: x.ndim - feature_dims(x)] for x in inputs), key=len)
        td = TensorDict(dict(zip(self.in_keys, inputs)), batch_size=batch)
        return self.module(td).get(self.out_key)


def is_plain_module(module: nn.Module) -> bool:
    """A one-output ``TensorDictModule`` whose ``.module`` can be called on its inputs
    directly (not a ``TensorDictSequential``, which subclasses it)."""
    return (
        isinstance(module, TensorDictModule)
        and not isinstance(module, TensorDictSequential)
        and len(module.out_keys) == 1
    )


def call_tensor_module(module: nn.Module, td: TensorDictBase, out_key: str | None = None):
    """Runs a single-output tensordict module on ``td`` without writing into ``td``."""
    if is_plain_module(module):
        return module.module(*(td.get(k) for k in module.in_keys))
    key = out_key or module.out_keys[0]
    return module(td.select(*module.in_keys)).get(key)


def next_key(key) -> tuple:
    """Where a batch keeps ``key``'s value at the next step: ``("next", *key)``."""
    return ("next", *key) if isinstance(key, tuple) else ("next", key)


def batch_entry(td: TensorDictBase, key) -> torch.Tensor:
    """``td[key]``; a missing entry raises a ``KeyError`` that names it."""
    value = td.get(key, None)
    if value is None:
        raise KeyError(
            f"the loss reads the batch entry {key!r}, which the batch lacks; keep it in the "
            "batch (a SelectKeys hook that leaves it out is the usual cause)"
        )
    return value


def next_step(td: TensorDictBase, keys: Sequence) -> TensorDictBase:
    """``td["next"]``, checked (as :func:`batch_entry` checks) to hold each of ``keys``."""
    for key in keys:
        batch_entry(td, next_key(key))
    return td.get("next")


def stack_current_next(
    td: TensorDictBase, keys: Sequence, net: nn.Module | None = None
) -> TensorDictBase:
    """Concatenates ``td[k]`` and ``td["next", k]`` along dim 0 into a ``[2 * B0, ...]`` td.

    When ``net`` runs an LSTM/GRU in recurrent mode (:func:`runs_recurrent`) and ``td`` is a
    single sequence ``[T]``, the current and next steps become the two rows of a ``[2, T]``
    td instead: one ``[2T]`` sequence would carry the hidden state of the last current step
    into the first next step. A td without batch dimensions gives a ``[2]`` td.
    """
    if td.batch_dims == 0 or (net is not None and td.batch_dims == 1 and runs_recurrent(net)):
        td = td.unsqueeze(0)
    batch = td.batch_size
    data = {k: torch.cat([batch_entry(td, k), batch_entry(td, next_key(k))]) for k in keys}
    return TensorDict(data, batch_size=[2 * batch[0], *batch[1:]])


def current_and_next(
    call, td: TensorDictBase, keys: Sequence, net: nn.Module | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs ``call`` (e.g. a critic) once on :func:`stack_current_next` ``(td, keys, net)``
    and splits its output into the current and the next steps' halves, each with ``td``'s
    batch shape (``[1, ...]`` when ``td`` has no batch dimension)."""
    stacked = stack_current_next(td, keys, net)
    out = call(stacked)
    if stacked.batch_dims > max(td.batch_dims, 1):  # the [2, T] rows of a recurrent net
        return out[0], out[1]
    n = td.batch_size[0] if td.batch_dims else 1
    return out[:n], out[n:]


def discount(td: TensorDictBase, gamma: float, like: torch.Tensor) -> torch.Tensor | float:
    """The discount to apply to the next-state value.

    Honours multi-step returns: a ``("next", "gamma")`` or ``"gamma"`` entry is used as is;
    otherwise a ``"steps_to_next_obs"`` (top level or under ``"next"``) gives
    ``gamma ** steps``. Without either, ``gamma``.
    """
    for key in (("next", "gamma"), "gamma"):
        value = td.get(key, None)
        if value is not None:
            return value.reshape(like.shape).to(like.dtype)
    for key in ("steps_to_next_obs", ("next", "steps_to_next_obs")):
        steps = td.get(key, None)
        if steps is not None:
            return torch.pow(
                torch.as_tensor(gamma, dtype=like.dtype), steps.reshape(like.shape).to(like.dtype)
            )
    return gamma


def reward_and_not_terminated(
    td: TensorDictBase, loss: LossModule | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``("next", reward)`` and ``1 - terminated`` (``("next", done)`` without a
    ``terminated`` entry) as a float mask shaped like the reward, at ``loss``'s keys
    (``reward_key``, ``done_key``, ``terminated_key``; the default names without a loss)."""
    keys = LossModule if loss is None else loss
    reward = batch_entry(td, next_key(keys.reward_key))
    terminated = td.get(next_key(keys.terminated_key), None)
    if terminated is None:
        terminated = batch_entry(td, next_key(keys.done_key))
    not_term = (~terminated.bool()).to(reward.dtype).reshape(reward.shape)
    return reward, not_term


def one_step_target(
    td: TensorDictBase, gamma: float, next_value: torch.Tensor, loss: LossModule | None = None
) -> torch.Tensor:
    """``r + discount * (1 - terminated) * next_value``, shaped as the reward (the discount
    as :func:`discount` gives it; the entries at ``loss``'s keys)."""
    reward, not_term = reward_and_not_terminated(td, loss)
    return reward + discount(td, gamma, reward) * not_term * next_value.reshape(reward.shape)


def transition_in_keys(*key_lists, loss: LossModule | None = None) -> list:
    """The batch entries a one-step loss reads: the action, the next reward/done/terminated
    (at ``loss``'s keys), and each network input at the current and (``"next"``) the next
    step."""
    names = LossModule if loss is None else loss
    keys: list = [names.action_key] + [
        next_key(k) for k in (names.reward_key, names.done_key, names.terminated_key)
    ]
    for key in (k for ks in key_lists for k in ks if k != names.action_key):
        keys += [key, next_key(key)]
    return list(dict.fromkeys(keys))


def check_critic_reads_action(loss: LossModule, critic_keys: list) -> None:
    """Raises when the critics do not read the loss's action key (the actor's actions
    would never reach them)."""
    if loss.action_key not in critic_keys:
        raise KeyError(
            f"{type(loss).__name__}: the critic reads {critic_keys}, not the action key "
            f"{loss.action_key!r}; rename the loss's action key to the one the critic reads "
            "(loss.set_keys(action=...))"
        )


def actor_obs_keys(actor: nn.Module) -> list:
    """The observation keys an actor reads."""
    keys = list(getattr(actor, "in_keys", []))
    if not keys:
        raise ValueError(f"cannot tell which keys {type(actor).__name__} reads: it has no in_keys")
    return keys


def loss_action_spec(action_spec, actor_network: nn.Module):
    """The action spec a loss reads: ``action_spec``, else the actor's ``spec``; of a
    composite spec, its action entry (None when there is no spec or no such entry)."""
    spec = action_spec if action_spec is not None else getattr(actor_network, "spec", None)
    return leaf_spec(spec, "action")


def action_bounds(spec, bounds: tuple | None = None, default: tuple | None = None):
    """``(low, high)`` as float32 tensors: ``bounds`` if given, else the bounds of a bounded
    ``spec``, else ``default``; None when none of them gives any."""
    if bounds is None and spec is not None and getattr(spec, "low", None) is not None:
        bounds = (spec.low, spec.high)
    if bounds is None:
        bounds = default
    if bounds is None:
        return None
    return tuple(torch.as_tensor(b, dtype=torch.float32).clone() for b in bounds)
