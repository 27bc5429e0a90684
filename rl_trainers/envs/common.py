"""``EnvBase``: the TensorDict interface every environment (and TransformedEnv) exposes.

Subclasses implement ``_reset(tensordict) -> TensorDict`` (observations and done flags) and
``_step(tensordict) -> TensorDict`` (the ``"next"`` entries: observations, reward, done flags),
and fill the four full specs in ``__init__``. Everything else (``step``,
``step_and_maybe_reset``, ``rollout``, ``rand_step``, ``fake_tensordict``) is built here.

Partial resets: ``reset(td)`` with a boolean ``"_reset"`` entry of shape ``[*B, 1]`` resets
only the flagged sub-environments; the other entries of the output keep the input values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_trainers.envs.specs import Categorical, Composite, TensorSpec, Unbounded, unbatched
from rl_trainers.envs.utils import DONE_KEYS, fast_set, step_mdp

__all__ = ["EnvBase", "complete_done_flags", "make_done_spec"]


#: Entries of a reset's input that its output does not carry over.
_NOT_KEPT_AT_RESET = ("_reset", "next", "action")


def make_done_spec(batch_size: torch.Size, device: Any = None) -> Composite:
    """Composite of ``done``/``terminated``/``truncated`` bool flags of shape ``[*B, 1]``."""
    shape = (*batch_size, 1)
    return Composite(
        {k: Categorical(2, shape=shape, dtype=torch.bool, device=device) for k in DONE_KEYS},
        shape=batch_size,
        device=device,
    )


def complete_done_flags(tensordict: TensorDictBase, reset: bool = False) -> TensorDictBase:
    """Add the done flags a custom env's ``_step``/``_reset`` left out (torchrl's rules).

    A reset output gets False flags; a step output with only ``"done"`` gets
    ``terminated = done`` and ``truncated = False``; one with only ``terminated``/``truncated``
    gets ``done`` as their union. Outputs holding all three (gym envs) are returned as they are.
    """
    keys = tensordict.keys()
    if "done" in keys and "terminated" in keys and "truncated" in keys:
        return tensordict
    if reset:
        shape = (*tensordict.batch_size, 1)
        for key in DONE_KEYS:
            if key not in keys:
                tensordict.set(key, torch.zeros(shape, dtype=torch.bool, device=tensordict.device))
        return tensordict
    done = tensordict.get("done", None)
    if done is None:
        flags = [tensordict.get(k) for k in ("terminated", "truncated") if k in keys]
        if not flags:
            raise KeyError(
                "the env's _step() output has no done flag: write 'done' (and optionally "
                "'terminated'/'truncated'), shaped like the reward."
            )
        done = flags[0] if len(flags) == 1 else flags[0] | flags[1]
        tensordict.set("done", done)
    done = done.bool()
    if "terminated" not in keys:
        tensordict.set("terminated", done.clone())
    if "truncated" not in keys:
        tensordict.set("truncated", torch.zeros_like(done))
    return tensordict


class EnvBase:
    """Abstract TensorDict environment.

    Args:
        device: device of the produced tensors.
        batch_size: batch size of the env (``()`` for a single env).
    """

    #: Whether inputs must have the env's ``batch_size``. A stateless env that reads its state
    #: from the input (torchrl's Pendulum tutorial) sets False: its batch is the input's.
    batch_locked: bool = True

    def __init__(
        self,
        device: Any = "cpu",
        batch_size: torch.Size | tuple | None = (),
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
        spec_locked: bool = True,
    ) -> None:
        self.device = torch.device(device if device is not None else "cpu")
        self.batch_size = torch.Size(batch_size if batch_size is not None else ())
        self.full_observation_spec = Composite(shape=self.batch_size, device=self.device)
        self.full_state_spec = Composite(shape=self.batch_size, device=self.device)
        self.full_action_spec = Composite(shape=self.batch_size, device=self.device)
        self.full_reward_spec = Composite(
            reward=Unbounded(shape=(*self.batch_size, 1), device=self.device),
            shape=self.batch_size,
            device=self.device,
        )
        self.full_done_spec = make_done_spec(self.batch_size, self.device)
        self.is_closed = False

    # --- specs -------------------------------------------------------------------------------
    @property
    def observation_spec(self) -> Composite:
        """Composite of all observation entries."""
        return self.full_observation_spec

    @observation_spec.setter
    def observation_spec(self, value: Composite) -> None:
        self.full_observation_spec = value

    @property
    def action_spec(self) -> TensorSpec:
        """Spec of the ``"action"`` entry."""
        return self.full_action_spec["action"]

    @action_spec.setter
    def action_spec(self, value: TensorSpec) -> None:
        self.full_action_spec["action"] = value

    @property
    def reward_spec(self) -> TensorSpec:
        """Spec of the ``"reward"`` entry."""
        return self.full_reward_spec["reward"]

    @reward_spec.setter
    def reward_spec(self, value: TensorSpec) -> None:
        self.full_reward_spec["reward"] = value

    @property
    def done_spec(self) -> Composite:
        """Composite of ``done``, ``terminated`` and ``truncated``."""
        return self.full_done_spec

    @done_spec.setter
    def done_spec(self, value: TensorSpec | Composite) -> None:
        # a leaf spec describes each flag; flags the env does not write are filled by step()
        spec = value if isinstance(value, Composite) else Composite(done=value)
        first = spec[next(iter(spec.keys()))]
        for key in DONE_KEYS:
            if key not in spec.keys():
                spec[key] = first.clone()
        self.full_done_spec = spec

    @property
    def state_spec(self) -> Composite:
        """Non-action inputs of ``step`` (empty for gym envs; custom envs may set it)."""
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, value: Composite) -> None:
        self.full_state_spec = value

    @property
    def input_spec(self) -> Composite:
        """Everything ``step`` reads."""
        return Composite(
            full_state_spec=self.full_state_spec,
            full_action_spec=self.full_action_spec,
            shape=self.batch_size,
        )

    @property
    def output_spec(self) -> Composite:
        """Everything ``step`` writes."""
        return Composite(
            full_observation_spec=self.full_observation_spec,
            full_reward_spec=self.full_reward_spec,
            full_done_spec=self.full_done_spec,
            shape=self.batch_size,
        )

    @property
    def specs(self) -> Composite:
        """``input_spec`` and ``output_spec`` in one Composite (torchrl's ``env.specs``)."""
        return Composite(
            output_spec=self.output_spec, input_spec=self.input_spec, shape=self.batch_size
        )

    def apply(self, fn: Any) -> EnvBase:
        """Call ``fn`` on the env's modules (transforms, for a TransformedEnv) and on the
        env, as ``nn.Module.apply`` does for torchrl's envs (e.g. ``env.apply(dump_video)``)."""
        fn(self)
        return self

    @property
    def action_key(self) -> str:
        """Name of the action entry."""
        return "action"

    @property
    def reward_key(self) -> str:
        """Name of the reward entry."""
        return "reward"

    @property
    def done_keys(self) -> list[str]:
        """Names of the done entries."""
        return list(DONE_KEYS)

    @property
    def reward_keys(self) -> list[str]:
        """Names of the reward entries."""
        return list(self.full_reward_spec.keys(True, True))

    @property
    def action_keys(self) -> list[str]:
        """Names of the action entries."""
        return list(self.full_action_spec.keys(True, True))

    # --- specs of one sub-env (torchrl's ``*_spec_unbatched``) --------------------------------
    @property
    def full_observation_spec_unbatched(self) -> Composite:
        """``full_observation_spec`` without the env's batch dims."""
        return unbatched(self.full_observation_spec, len(self.batch_size))

    @property
    def observation_spec_unbatched(self) -> Composite:
        """``observation_spec`` without the env's batch dims."""
        return self.full_observation_spec_unbatched

    @property
    def full_action_spec_unbatched(self) -> Composite:
        """``full_action_spec`` without the env's batch dims."""
        return unbatched(self.full_action_spec, len(self.batch_size))

    @property
    def action_spec_unbatched(self) -> TensorSpec:
        """``action_spec`` of one sub-env, e.g. for ``TanhNormal`` bounds:
        ``env.action_spec_unbatched.space.low``."""
        return unbatched(self.action_spec, len(self.batch_size))

    @property
    def full_reward_spec_unbatched(self) -> Composite:
        """``full_reward_spec`` without the env's batch dims."""
        return unbatched(self.full_reward_spec, len(self.batch_size))

    @property
    def reward_spec_unbatched(self) -> TensorSpec:
        """``reward_spec`` without the env's batch dims."""
        return unbatched(self.reward_spec, len(self.batch_size))

    @property
    def full_done_spec_unbatched(self) -> Composite:
        """``full_done_spec`` without the env's batch dims."""
        return unbatched(self.full_done_spec, len(self.batch_size))

    @property
    def done_spec_unbatched(self) -> Composite:
        """``done_spec`` without the env's batch dims."""
        return self.full_done_spec_unbatched

    # torchrl's former names of the same specs (its older scripts read them)
    single_full_observation_spec = full_observation_spec_unbatched
    single_observation_spec = observation_spec_unbatched
    single_full_action_spec = full_action_spec_unbatched
    single_action_spec = action_spec_unbatched
    single_full_reward_spec = full_reward_spec_unbatched
    single_reward_spec = reward_spec_unbatched
    single_full_done_spec = full_done_spec_unbatched
    single_done_spec = done_spec_unbatched

    @property
    def shape(self) -> torch.Size:
        """The env's batch size (torchrl's alias)."""
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """Number of batch dimensions."""
        return len(self.batch_size)

    @property
    def numel(self) -> int:
        """Number of sub-environments."""
        return self.batch_size.numel()

    # --- to implement ------------------------------------------------------------------------
    def _reset(self, tensordict: TensorDictBase | None) -> TensorDictBase:
        raise NotImplementedError

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError

    def _set_seed(self, seed: int | None) -> None:
        raise NotImplementedError

    # --- public API --------------------------------------------------------------------------
    def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Reset the env (or the sub-envs flagged by a ``"_reset"`` entry).

        Args:
            tensordict: optional input; its ``"_reset"`` entry selects sub-envs to reset.
            **kwargs: ignored (torchrl compatibility).

        Returns:
            A TensorDict with the observations and ``done/terminated/truncated`` flags: the
            input itself, updated, when it holds no ``"_reset"``, ``"next"`` or ``"action"``
            entry (torchrl's ``env.reset(td) is td``), else a new one.
        """
        out = complete_done_flags(self._reset(tensordict), reset=True)
        if tensordict is not None:
            # keep non-overwritten entries of the input (e.g. collector ids), drop the mask
            keys = tensordict.keys()
            if not any(k in keys for k in _NOT_KEPT_AT_RESET) and (
                tensordict.batch_size == out.batch_size
            ):
                return tensordict.update(out)
            for key, value in tensordict.items():
                if key not in out.keys() and key not in _NOT_KEPT_AT_RESET:
                    out.set(key, value)
        return out

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Apply ``tensordict["action"]`` and write the results under ``"next"``.

        Args:
            tensordict: input holding ``"action"``.

        Returns:
            The same TensorDict with a ``"next"`` sub-TensorDict.
        """
        next_td = complete_done_flags(self._step(tensordict))
        preset = tensordict.get("next", None)
        if preset is not None:
            # entries the policy wrote under "next" (an RNN's new state) stay, as in torchrl
            for key, value in preset.items():
                if key not in next_td.keys():
                    next_td.set(key, value)
        fast_set(tensordict, "next", next_td)
        return tensordict

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Step, then build the next policy input, resetting finished (sub-)envs.

        Args:
            tensordict: input holding ``"action"``.

        Returns:
            ``(transition, next_input)``: ``transition["next"]`` holds the true final
            observation of finished episodes, ``next_input`` holds their reset observation.
        """
        tensordict = self.step(tensordict)
        next_input = step_mdp(tensordict, reward_keys=self.reward_keys)
        return tensordict, self.maybe_reset(next_input)

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Whether a (sub-)env of ``tensordict`` (a policy input, e.g. from ``step_mdp``) is
        done; if so its ``"_reset"`` entry is set to the done flags (torchrl's)."""
        done = tensordict.get("done", None)
        if done is None or not bool(done.any()):
            return False
        tensordict.set("_reset", done.clone())
        return True

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Reset the (sub-)envs ``tensordict`` marks done; the others keep their entries.

        Returns ``tensordict`` itself when nothing is done, else the output of a partial
        :meth:`reset`.
        """
        if self.any_done(tensordict):
            tensordict = self.reset(tensordict)
        return tensordict

    def rollout(
        self,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        callback: Callable[[EnvBase, TensorDictBase], Any] | None = None,
        auto_reset: bool = True,
        break_when_any_done: bool | None = None,
        tensordict: TensorDictBase | None = None,
        auto_cast_to_device: bool = False,
        return_contiguous: bool = True,
        set_truncated: bool = False,
        trust_policy: bool = False,
        break_when_all_done: bool | None = None,
    ) -> TensorDictBase:
        """Play up to ``max_steps`` steps and stack the transitions along a last (time) dim.

        Args:
            max_steps: number of steps.
            policy: ``td -> td`` writing ``"action"``; random actions from the spec if None.
            callback: called as ``callback(env, td)`` after each step.
            auto_reset: reset before the first step (else ``tensordict`` is the first input,
                its done (sub-)envs reset first, as :meth:`maybe_reset` does).
            break_when_any_done: stop after the first step where any (sub-)env is done;
                otherwise finished sub-envs are reset and the rollout continues. Default
                True, unless ``break_when_all_done=True`` (then False).
            tensordict: first input (required if ``auto_reset=False``).
            auto_cast_to_device: unused (single device).
            return_contiguous: unused (always stacked).
            set_truncated: mark the last step ``("next", "truncated")`` and ``done``, so the
                rollout reads as a cut trajectory (value estimators bootstrap there).
            trust_policy: unused (torchrl compatibility).
            break_when_all_done: stop once every sub-env has been done (torchrl's partial
                steps): a finished sub-env's later entries repeat its last transition (its
                ``("next", "done")`` stays True), so the rollout holds each sub-env's first
                episode. Exclusive with ``break_when_any_done=True``.

        Returns:
            A TensorDict of batch size ``(*env.batch_size, T)``.
        """
        if break_when_any_done is None:
            break_when_any_done = not break_when_all_done
        if break_when_all_done and break_when_any_done:
            raise TypeError(
                "Cannot have both break_when_all_done and break_when_any_done True at the "
                "same time."
            )
        if auto_reset:
            td = self.reset(tensordict)
        else:
            if tensordict is None:
                raise ValueError("rollout(auto_reset=False) needs a `tensordict` to start from.")
            td = self.maybe_reset(tensordict)  # e.g. the last step of a previous rollout
        if break_when_all_done:
            return self._rollout_until_all_done(td, int(max_steps), policy, callback, set_truncated)
        steps = []
        for _ in range(int(max_steps)):
            if policy is None:
                td = self.rand_action(td)
            else:
                td = policy(td)
            if break_when_any_done:
                td = self.step(td)
                steps.append(td)
                if callback is not None:
                    callback(self, td)
                if bool(td.get(("next", "done")).any()):
                    break
                td = step_mdp(td, reward_keys=self.reward_keys)
            else:
                td, nxt = self.step_and_maybe_reset(td)
                steps.append(td)
                if callback is not None:
                    callback(self, td)
                td = nxt
        if not steps:
            raise ValueError(f"rollout needs max_steps >= 1, got {max_steps}.")
        return self._stack_rollout(steps, set_truncated)

    def _stack_rollout(self, steps: list[TensorDictBase], set_truncated: bool) -> TensorDictBase:
        # time goes after the input's batch dims (the env's, unless it is not batch-locked)
        out = torch.stack(steps, dim=steps[0].batch_dims)
        if set_truncated:
            last = out[..., -1]
            for key in ("truncated", "done"):
                last.set_(("next", key), torch.ones_like(last.get(("next", key))))
        return out

    def _rollout_until_all_done(
        self,
        td: TensorDictBase,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None,
        callback: Callable[[EnvBase, TensorDictBase], Any] | None,
        set_truncated: bool,
    ) -> TensorDictBase:
        """``rollout(break_when_all_done=True)``: step until every sub-env was done once.

        Sub-envs that finished keep being stepped (and reset) so that batched gym envs, which
        step all their sub-envs at once, stay consistent, but what the rollout records for
        them after their done step is a copy of that step, as torchrl's partial steps give.
        """
        if max_steps < 1:
            raise ValueError(f"rollout needs max_steps >= 1, got {max_steps}.")
        steps: list[TensorDictBase] = []
        running = None  # [*B] bool: sub-envs whose first episode is still going
        for i in range(max_steps):
            if policy is None:
                td = self.rand_action(td)
            else:
                td = policy(td)
            last = i == max_steps - 1
            if last:
                transition, nxt = self.step(td), None
            else:
                transition, nxt = self.step_and_maybe_reset(td)
            record = transition.exclude("_reset", "_step")
            if running is not None:
                mask = running.reshape(record.batch_size)
                record = torch.where(mask, record, steps[-1])
            steps.append(record)
            if callback is not None:
                callback(self, transition)
            done = transition.get(("next", "done")).reshape(self.batch_size)
            running = ~done if running is None else running & ~done
            if last or not bool(running.any()):
                break
            td = nxt
        return self._stack_rollout(steps, set_truncated)

    def append_transform(self, transform: Any) -> EnvBase:
        """``TransformedEnv(self, transform)``: this env with a transform appended.

        Example:
            >>> env = GymEnv("Pendulum-v1").append_transform(StepCounter(200))  # doctest: +SKIP
        """
        from rl_trainers.envs.transforms import TransformedEnv

        return TransformedEnv(self, transform)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Write a random action from the action spec into ``tensordict`` (new if None).

        A non batch-locked env (``batch_locked = False``) draws one action per item of the
        given TensorDict's batch, whatever the env's own ``batch_size``.
        """
        if tensordict is None:
            tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        shape = () if self.batch_locked else tensordict.batch_size[self.batch_dims :]
        tensordict.set("action", self.action_spec.rand(shape))
        return tensordict

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Step with a random action."""
        return self.step(self.rand_action(tensordict))

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seed the environment's resets and action sampling.

        Args:
            seed: the seed (applied at the next reset).
            static_seed: unused (torchrl compatibility).

        Returns:
            The next unused seed (``seed + number of sub-envs``), to seed something else.
        """
        self._set_seed(seed)
        if seed is None:
            return None
        return int(seed) + max(1, self.numel)

    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled transition with every key the env reads and writes."""
        obs = self.full_observation_spec.zero()
        done = self.full_done_spec.zero()
        td = obs.clone()
        td.update(done)
        td.update(self.full_action_spec.zero())
        nxt = obs.clone()
        nxt.update(self.full_reward_spec.zero())
        nxt.update(done.clone())
        td.set("next", nxt)
        return td

    def state_dict(self) -> dict[str, Any]:
        """Env state to checkpoint (empty for raw envs; transforms add statistics)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load what ``state_dict`` returned."""

    def close(self) -> None:
        """Release resources."""
        self.is_closed = True

    def to(self, device: Any) -> EnvBase:
        """Only CPU envs are supported; returns self for ``cpu``."""
        if torch.device(device) != self.device:
            raise ValueError(
                f"{type(self).__name__} runs on {self.device}, cannot move to {device}."
            )
        return self

    def __del__(self) -> None:
        try:
            if not getattr(self, "is_closed", True):
                self.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(batch_size={tuple(self.batch_size)}, device={self.device},\n"
            f"  observation_spec={self.observation_spec!r},\n  action_spec={self.action_spec!r})"
        )
