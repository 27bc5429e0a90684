"""``TensorDictPrimer``: extra entries (e.g. recurrent states) that an env's resets create.

A primer declares entries the env itself does not produce but the policy reads, such as the
hidden state of an :class:`~rl_trainers.modules.LSTMModule`. It

- adds their specs to ``env.observation_spec`` (so collectors and ``env.fake_tensordict()``
  know about them),
- writes them at every reset (zeros by default, or random / a default value), only in the
  sub-envs flagged by a ``"_reset"`` entry on partial resets,
- carries them across steps: a ``("next", key)`` written by the policy is kept in the step
  output (so ``step_mdp`` moves it to the next policy input); otherwise the current value is
  copied forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_trainers.envs.specs import Composite, TensorSpec
from rl_trainers.envs.transforms.transforms import Transform, _reset_mask

__all__ = ["TensorDictPrimer"]

Key = str | tuple[str, ...]


def _as_tuple(key: Key) -> tuple[str, ...]:
    return key if isinstance(key, tuple) else (key,)


class TensorDictPrimer(Transform):
    """Add entries to every reset output and carry them across steps (torchrl's).

    Args:
        primers: a dict (or Composite) from key to spec; may also be given as keyword
            arguments (``TensorDictPrimer(hidden=Unbounded((1, 64)))``), not both.
        random: fill with ``spec.rand()`` at reset (exclusive with ``default_value``).
        default_value: a number, a callable returning a tensor, or a dict from key to
            either; zeros if None.
        reset_key: accepted for torchrl compatibility (the ``"_reset"`` entry is used).
        expand_specs: True: the specs are unbatched and get the env's batch dims in front;
            False: the specs already hold them; None (default): expand the specs whose
            shape does not start with the env's batch size.
        single_default_value: accepted for torchrl compatibility.
        call_before_env_reset: accepted at False (the primer runs on the reset output).
        **kwargs: key-spec pairs.

    Example:
        >>> env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())  # doctest: +SKIP
        >>> env.append_transform(TensorDictPrimer(hidden=Unbounded((1, 64))))  # doctest: +SKIP
        >>> env.reset()["hidden"].shape  # doctest: +SKIP
        torch.Size([1, 64])
    """

    def __init__(
        self,
        primers: dict[Key, TensorSpec] | Composite | None = None,
        random: bool | None = None,
        default_value: float | Callable | dict | None = None,
        reset_key: Key | None = None,
        expand_specs: bool | None = None,
        single_default_value: bool = False,
        call_before_env_reset: bool = False,
        **kwargs: TensorSpec,
    ) -> None:
        if primers is not None and kwargs:
            raise ValueError(
                "TensorDictPrimer: give the primers either as a dict/Composite or as keyword "
                f"arguments, not both (got {primers!r} and {list(kwargs)})."
            )
        specs = primers if primers is not None else kwargs
        if isinstance(specs, Composite):
            specs = {k: specs[k] for k in specs.keys(True, True)}
        if not isinstance(specs, dict):
            raise TypeError(
                f"TensorDictPrimer: primers must be a dict or Composite, got {type(specs)}."
            )
        for key, spec in specs.items():
            if not isinstance(spec, TensorSpec):
                raise TypeError(
                    f"TensorDictPrimer: the spec of {key!r} must be a TensorSpec, got "
                    f"{type(spec).__name__}."
                )
        if random and default_value is not None:
            raise ValueError(
                "Setting random to True and providing a default_value are incompatible."
            )
        if call_before_env_reset:
            raise NotImplementedError(
                "TensorDictPrimer(call_before_env_reset=True) is not supported: the primer "
                "fills its entries in the reset output."
            )
        self._primers: dict[tuple[str, ...], TensorSpec] = {
            _as_tuple(k): v for k, v in specs.items()
        }
        keys = [k[0] if len(k) == 1 else k for k in self._primers]
        super().__init__(in_keys=[], out_keys=[])
        self.out_keys = keys
        self.random = bool(random)
        self.default_value = default_value
        self.reset_key = reset_key
        self.expand_specs = expand_specs
        self.single_default_value = single_default_value

    # --- specs -------------------------------------------------------------------------------
    @property
    def primers(self) -> Composite:
        """The primers' specs (as given, before batch expansion)."""
        return Composite({k: v.clone() for k, v in self._primers.items()})

    def _batched_spec(self, spec: TensorSpec, batch_size: torch.Size) -> TensorSpec:
        n = len(batch_size)
        if self.expand_specs is False or not n:
            return spec.clone()
        if self.expand_specs is None and tuple(spec.shape[:n]) == tuple(batch_size):
            return spec.clone()
        return spec.expand(*batch_size, *spec.shape)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        bs = observation_spec.shape
        for key, spec in self._primers.items():
            batched = self._batched_spec(spec, bs)
            if tuple(batched.shape[: len(bs)]) != tuple(bs):
                raise RuntimeError(
                    f"TensorDictPrimer: the spec of {key!r} has shape {tuple(spec.shape)}, which "
                    f"does not start with the env batch size {tuple(bs)}; pass "
                    "expand_specs=True to expand it."
                )
            observation_spec[key] = batched.to(observation_spec.device or spec.device)
        return observation_spec

    # --- values ------------------------------------------------------------------------------
    def _default_for(self, key: tuple[str, ...]) -> Any:
        value = self.default_value
        if isinstance(value, dict):
            value = value.get(key, value.get(key[0] if len(key) == 1 else key))
        return value

    def _fresh(self, key: tuple[str, ...], batch_size: torch.Size, device: Any) -> torch.Tensor:
        spec = self._batched_spec(self._primers[key], batch_size)
        shape = spec.shape[len(batch_size) :]
        if self.random:
            out = spec.rand()
        else:
            default = self._default_for(key)
            if default is None:
                out = spec.zero()
            elif callable(default):
                out = torch.as_tensor(default(), dtype=spec.dtype).expand(spec.shape).clone()
            else:
                out = torch.full(spec.shape, default, dtype=spec.dtype)
        out = out.reshape(*batch_size, *shape)
        return out.to(device) if device is not None else out

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        bs, device = tensordict_reset.batch_size, tensordict_reset.device
        for key in self._primers:
            fresh = self._fresh(key, bs, device)
            old = tensordict.get(key, None) if tensordict is not None else None
            mask = _reset_mask(tensordict, fresh)
            if mask is not None and old is not None and old.shape == fresh.shape:
                fresh = torch.where(mask, fresh, old)
            tensordict_reset.set(key, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self._primers:
            if next_tensordict.get(key, None) is not None:
                continue
            # what the policy wrote under "next" (e.g. an LSTM's new state), else carry over
            value = tensordict.get(("next", *key), None)
            if value is None:
                value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"TensorDictPrimer: {key!r} is missing from the step input; reset the env "
                    "(the primer writes it at reset) before stepping."
                )
            next_tensordict.set(key, value)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Fill the primer entries missing from ``tensordict`` (a policy input)."""
        for key in self._primers:
            if tensordict.get(key, None) is None:
                tensordict.set(key, self._fresh(key, tensordict.batch_size, tensordict.device))
        return tensordict

    def __repr__(self) -> str:
        specs = ", ".join(f"{k if len(k) > 1 else k[0]!r}: {v!r}" for k, v in self._primers.items())
        extra = ", random=True" if self.random else ""
        if self.default_value is not None:
            extra += f", default_value={self.default_value!r}"
        return f"TensorDictPrimer(primers={{{specs}}}{extra})"
