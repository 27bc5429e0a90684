"""The single-process data collector.

:class:`SyncDataCollector` plays a policy in an environment and yields ``[*env.batch_size, T]``
TensorDicts (time last, ``T = frames_per_batch // env.batch_size.numel()``). The env is not
reset between batches: trajectories continue across batches and keep their
``("collector", "traj_ids")``.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, set_interaction_type

from rl_trainers import fast
from rl_trainers.collectors.utils import (
    act_on,
    lean_acting,
    split_trajectories,
    weights_state_dict,
)
from rl_trainers.envs.libs.gym_state import get_env_state, set_env_state
from rl_trainers.envs.utils import stack_steps
from rl_trainers.fast.acting import CategoricalActing, GaussianActing
from rl_trainers.modules.device import module_device

__all__ = [
    "DataCollectorBase",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "SyncDataCollector",
    "aSyncDataCollector",
]

TRAJ_KEY = ("collector", "traj_ids")


class DataCollectorBase:
    """Common interface of the collectors (iteration, weights, seeding, state)."""

    frames_per_batch: int
    total_frames: int

    def __iter__(self) -> Iterator[TensorDictBase]:
        raise NotImplementedError

    def update_policy_weights_(self, policy_weights: Any = None) -> None:
        """Make the acting policy use the trainer's latest weights."""

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        raise NotImplementedError

    def shutdown(self) -> None:
        """Release the environments (and worker processes)."""

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        """Number of batches in a run (``total_frames`` must be finite)."""
        if self.total_frames < 0:
            raise TypeError("an infinite collector (total_frames=-1) has no length")
        return -(-self.total_frames // self.frames_per_batch)

    def __enter__(self) -> DataCollectorBase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def _make_env(create_env_fn: Any, create_env_kwargs: dict[str, Any] | None = None) -> Any:
    if hasattr(create_env_fn, "step_and_maybe_reset") and not isinstance(create_env_fn, type):
        return create_env_fn
    if callable(create_env_fn):
        return create_env_fn(**(create_env_kwargs or {}))
    raise TypeError(
        f"create_env_fn must be an env or a callable returning one, got {type(create_env_fn)}"
    )


def policy_runner(
    policy: Callable | None,
    compile_policy: bool | dict[str, Any] | None,
    cudagraph_policy: bool | dict[str, Any] | None,
    device: Any = None,
) -> Callable | None:
    """What the collector calls to act: ``policy``, compiled and/or CUDA-graphed on request
    (torchrl's ``compile_policy`` / ``cudagraph_policy``; falsy values leave it alone)."""
    if cudagraph_policy:
        check_cudagraph_device(policy, device)
    if policy is None:
        return None
    runner = policy
    if compile_policy:
        from rl_trainers._utils import compile_with_warmup

        options = dict(compile_policy) if isinstance(compile_policy, Mapping) else {}
        runner = compile_with_warmup(runner, **options)
    if cudagraph_policy:
        from tensordict.nn import CudaGraphModule

        options = dict(cudagraph_policy) if isinstance(cudagraph_policy, Mapping) else {}
        runner = CudaGraphModule(runner, **options)
    return runner


def check_cudagraph_device(policy: Any, device: Any) -> None:
    """Raise unless the policy runs on a CUDA device (``cudagraph_policy`` needs one)."""
    device = torch.device(device if device is not None else module_device(policy, "cpu"))
    if device.type != "cuda" or not torch.cuda.is_available():
        raise ValueError(
            "cudagraph_policy needs the policy on a CUDA device: CUDA graphs capture GPU "
            f"kernels, and this collector's policy runs on {device}"
            f"{'' if torch.cuda.is_available() else ' (CUDA is not available)'}. "
            "Drop cudagraph_policy (or use compile_policy) on CPU."
        )


def _leaf_keys(td: TensorDictBase) -> list:
    return list(td.keys(include_nested=True, leaves_only=True))


class SyncDataCollector(DataCollectorBase):
    """Collect ``frames_per_batch`` frames per iteration from one (possibly batched) env.

    Args:
        create_env_fn: an env, or a callable returning one.
        policy: a TensorDict module writing ``"action"``; None plays random actions from
            ``env.action_spec``.
        frames_per_batch: frames per yielded batch; rounded up (with a warning) to a
            multiple of the number of sub-envs (``env.batch_size.numel()``), as torchrl does.
        total_frames: frames in a run; -1 collects forever.
        init_random_frames: the first batches, until this many frames were collected, use
            random actions; they are yielded like any other batch (so they reach the buffer).
        split_trajs: regroup each batch into zero-padded ``[num_trajs, max_len]``
            trajectories with a ``("collector", "mask")`` entry.
        device: default for the three devices below.
        storing_device: where yielded batches live.
        env_device: where the env's tensors live (informative: envs choose their device).
        policy_device: where the policy runs (inputs are moved there).
        postproc: callable applied to every batch (e.g. :class:`~rl_trainers.data.MultiStep`).
        reset_at_each_iter: reset the env at the start of every batch.
        exploration_type: interaction type the policy acts under
            (``InteractionType.RANDOM`` by default, i.e. exploring).
        replay_buffer: when given, every batch is also written to this buffer
            (``replay_buffer.extend(batch)``, as torchrl's ``extend_buffer=True``: a
            ``[num_envs, T]`` batch is ``num_envs`` trajectories in a default storage, or
            transitions in an ``ndim=2`` one); needed by :meth:`start` (asynchronous
            collection).
        reset_when_done: unused (finished sub-envs are always reset).
        create_env_kwargs: keyword arguments for ``create_env_fn`` when it is a callable.
        max_frames_per_traj: when > 0, trajectories are cut (truncated) after this many
            steps: the env is wrapped in ``TransformedEnv(env, StepCounter(max_frames_per_traj))``
            as torchrl does.
        trust_policy: accepted for torchrl compatibility (the policy is never wrapped).
        compile_policy: ``True`` or a dict of ``torch.compile`` keyword arguments (plus
            ``"warmup"``, eager calls before compiling, default 1): the collector calls the
            policy compiled (:func:`rl_trainers._utils.compile_with_warmup`); ``self.policy``
            stays the module given, so weight updates reach the compiled one.
        cudagraph_policy: ``True`` or a dict of ``tensordict.nn.CudaGraphModule`` arguments:
            capture the policy in a CUDA graph; needs a CUDA policy device (raises otherwise).
        step_timeout_s: when > 0, an env step or reset that has not returned after this
            many seconds ends the collection with :class:`~rl_trainers.collectors.watchdog.EnvStepTimeout`
            naming the env (and the sub-env, when it can be told); see
            :mod:`rl_trainers.collectors.watchdog` for how a blocked main thread is
            interrupted. None or 0 (default): no limit.
        check_finite: raise :class:`NonFiniteBatchError` when a collected batch holds NaN or
            infinite floats (one ``isfinite`` per float entry per batch), naming the entry,
            the sub-env and the frame; ``False`` lets them through.

    Example:
        >>> collector = SyncDataCollector(GymEnv("CartPole-v1", num_envs=8), policy,
        ...                               frames_per_batch=256, total_frames=10_000)
        >>> for batch in collector:  # TensorDict [8, 32]
        ...     ...
    """

    def __init__(
        self,
        create_env_fn: Any,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        init_random_frames: int | None = 0,
        split_trajs: bool = False,
        device: str | torch.device | None = None,
        storing_device: str | torch.device | None = None,
        env_device: str | torch.device | None = None,
        policy_device: str | torch.device | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        reset_at_each_iter: bool = False,
        exploration_type: InteractionType = InteractionType.RANDOM,
        replay_buffer: Any = None,
        reset_when_done: bool = True,
        create_env_kwargs: dict[str, Any] | None = None,
        max_frames_per_traj: int | None = None,
        trust_policy: bool | None = None,
        compile_policy: bool | dict[str, Any] | None = None,
        cudagraph_policy: bool | dict[str, Any] = False,
        step_timeout_s: float | None = None,
        check_finite: bool = True,
    ) -> None:
        self._policy_call = policy_runner(
            policy, compile_policy, cudagraph_policy, policy_device or device
        )
        self.env = _make_env(create_env_fn, create_env_kwargs)
        self._owns_env = self.env is not create_env_fn
        if max_frames_per_traj is not None and max_frames_per_traj > 0:
            from rl_trainers.envs.transforms import StepCounter, TransformedEnv

            self.env = TransformedEnv(self.env, StepCounter(max_steps=max_frames_per_traj))
        self.max_frames_per_traj = max_frames_per_traj
        self.policy = policy
        batch_size = torch.Size(self.env.batch_size)
        self.n_envs = max(1, batch_size.numel())
        if not isinstance(frames_per_batch, int) or frames_per_batch < 1:
            raise ValueError(f"frames_per_batch must be a positive int, got {frames_per_batch!r}")
        self.requested_frames_per_batch = frames_per_batch
        if frames_per_batch % self.n_envs:
            # torchrl's behaviour: round up to whole steps of every sub-env, with a warning
            rounded = -(-frames_per_batch // self.n_envs) * self.n_envs
            warnings.warn(
                f"frames_per_batch ({frames_per_batch}) is not exactly divisible by the number "
                f"of batched environments ({self.n_envs}); each batch holds {rounded} frames.",
                stacklevel=2,
            )
            frames_per_batch = rounded
        if total_frames is None or total_frames == 0:
            total_frames = -1
        if total_frames > 0 and total_frames < self.requested_frames_per_batch:
            raise ValueError(
                f"total_frames={total_frames} is smaller than "
                f"frames_per_batch={self.requested_frames_per_batch}"
            )
        self.frames_per_batch = frames_per_batch
        self.total_frames = int(total_frames)
        self.init_random_frames = int(init_random_frames or 0)
        self.split_trajs = split_trajs
        self.postproc = postproc
        self.reset_at_each_iter = reset_at_each_iter
        self.exploration_type = exploration_type
        self.replay_buffer = replay_buffer
        self.storing_device = _device(storing_device or device)
        self.policy_device = _device(policy_device or device)
        self.env_device = _device(env_device or device)
        self.batch_size = batch_size
        self.T = frames_per_batch // self.n_envs
        self.frames_collected = 0
        self._traj_counter = 0
        self._traj_ids = torch.zeros(batch_size, dtype=torch.long)
        self._td: TensorDictBase | None = None
        self._keys: list | None = None
        self._policy_zeros: dict | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._thread_error: BaseException | None = None
        self.check_finite = bool(check_finite)
        self.step_timeout_s = float(step_timeout_s) if step_timeout_s else None
        if self.step_timeout_s is not None and self.step_timeout_s < 0:
            raise ValueError(f"step_timeout_s must be >= 0, got {step_timeout_s!r}")
        self._watchdog = _watch_env(self.env, self.step_timeout_s)

    # ------------------------------------------------------------------ acting
    def _reset(self) -> None:
        self.reset()

    def _act(self, td: TensorDictBase, random: bool) -> TensorDictBase:
        if random or self.policy is None:
            _fast_set(td, "action", self.env.action_spec.rand())
            return td
        if self.policy_device is not None and td.device != self.policy_device:
            return act_on(self._policy_call, td, self.policy_device)
        out = self._policy_call(td)
        return td if out is None else out

    def _policy_output_zeros(self, td: TensorDictBase) -> dict:
        """Zeros for the policy's outputs other than the action (e.g. ``"action_value"``),
        shaped like one step: random warm-up batches carry them, as torchrl's do, so scripts
        can read them on any batch. Found once, by running the policy on a copy of ``td``,
        for tensordict policies whose ``out_keys`` name more than the action."""
        if self._policy_zeros is not None:
            return self._policy_zeros
        self._policy_zeros = {}
        if set(getattr(self.policy, "out_keys", None) or ()) - {"action"}:
            with torch.random.fork_rng(devices=[]):  # the probe draws no training noise
                probe = self._act(td.clone(), random=False)
            known = set(_leaf_keys(td)) | {"action"}
            self._policy_zeros = {
                k: torch.zeros_like(probe.get(k)) for k in _leaf_keys(probe) if k not in known
            }
        return self._policy_zeros

    def _rollout_batch(
        self, td: TensorDictBase, random: bool
    ) -> tuple[TensorDictBase, TensorDictBase] | None:
        """The env's own batched loop (``GymWrapper.rollout_batch``), when it has one."""
        # looked up on the class: a TransformedEnv forwards unknown attributes to its base env
        rollout_batch = getattr(type(self.env), "rollout_batch", None)
        if rollout_batch is None or not fast.ARRAY_ROLLOUT:
            return None
        policy = None if random or self.policy is None else partial(self._act, random=False)
        acting = None if policy is None else self._lean_acting(td)
        return rollout_batch(self.env, td, self.T, policy, acting)

    def _lean_acting(self, td: TensorDictBase) -> CategoricalActing | GaussianActing | None:
        """The policy's tensor-only acting path (:mod:`rl_trainers.fast.acting`),
        when the policy is called as it is (not compiled) on the env's device."""
        if self._policy_call is not self.policy:
            return None
        if self.policy_device is not None and td.device != self.policy_device:
            return None
        return lean_acting(self.policy, td)

    def _rollout_steps(
        self, td: TensorDictBase, random: bool
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """``T`` calls of ``env.step_and_maybe_reset``; returns (stacked steps, next input).

        Stacking the T step TensorDicts once at the end (one torch.stack per key) was measured
        ~15x cheaper than writing each step into a pre-allocated [*B, T] buffer, whose per-key
        Python overhead dominates for small envs such as CartPole.
        """
        steps: list[TensorDictBase] = []
        for _ in range(self.T):
            td = self._act(td, random)
            transition, td = self.env.step_and_maybe_reset(td)
            steps.append(transition)
        try:
            return stack_steps(steps, len(self.batch_size)), td
        except (RuntimeError, KeyError, ValueError) as err:
            raise RuntimeError(
                "could not stack the steps of a batch: every step must write the same keys "
                f"with the same shapes (first step keys: {_leaf_keys(steps[0])})"
            ) from err

    def rollout(self) -> TensorDictBase:
        """Collect one batch of ``frames_per_batch`` frames (``[*env.batch_size, T]``)."""
        if self._watchdog is None:
            batch = self._rollout()
        else:
            self._watchdog.arm()
            try:
                batch = self._rollout()
            finally:
                self._watchdog.disarm()
        if self.check_finite:
            check_finite_batch(batch, self.frames_collected - self.frames_per_batch)
        return batch

    def _rollout(self) -> TensorDictBase:
        if self._td is None or self.reset_at_each_iter:
            self._reset()
        random = self.frames_collected < self.init_random_frames
        td = self._td
        with torch.no_grad(), set_interaction_type(self.exploration_type):
            zeros = self._policy_output_zeros(td) if random and self.policy is not None else {}
            fast = self._rollout_batch(td, random)
            batch, self._td = fast if fast is not None else self._rollout_steps(td, random)
            present = set(_leaf_keys(batch))
            nd = len(self.batch_size)
            for key, zero in zeros.items():
                if key not in present:
                    shape = (*self.batch_size, self.T, *zero.shape[nd:])
                    batch.set(key, zero.to(batch.device).unsqueeze(nd).expand(shape).clone())
            # trajectory ids for the whole batch at once rather than at every step
            done = batch.get(("next", "done")).reshape(self.n_envs, self.T)
            ids, self._traj_ids, self._traj_counter = trajectory_ids(
                done, self._traj_ids.reshape(-1), self._traj_counter
            )
            self._traj_ids = self._traj_ids.reshape(self.batch_size)
            batch.set(TRAJ_KEY, ids.reshape(*self.batch_size, self.T).to(batch.device))
        if self.storing_device is not None and batch.device != self.storing_device:
            batch = batch.to(self.storing_device)
        self.frames_collected += self.frames_per_batch
        return batch

    def reset(self, index: Any = None, **kwargs: Any) -> None:
        """Start new episodes now, with new trajectory ids; ``kwargs`` go to ``env.reset``.

        Args:
            index: which sub-envs of a batched env to reset (torchrl's argument): an int, a
                slice, a list or a bool mask over the env's batch dims. None resets all.
        """
        if index is None or self._td is None:
            # before the first batch every sub-env starts fresh anyway
            self._td = self.env.reset(**kwargs)
            self._traj_ids = torch.arange(self._traj_counter, self._traj_counter + self.n_envs)
            self._traj_ids = self._traj_ids.reshape(self.batch_size)
            self._traj_counter += self.n_envs
            return
        if not self.batch_size:
            raise ValueError(
                "SyncDataCollector.reset(index=...) needs a batched env (a ParallelEnv, "
                "SerialEnv or GymEnv(..., num_envs=N)); this env is unbatched: call reset()"
            )
        mask = torch.zeros(self.batch_size, dtype=torch.bool)
        try:
            mask[index] = True
        except (IndexError, TypeError, RuntimeError) as err:
            raise IndexError(
                f"reset(index={index!r}) does not index the env's batch {tuple(self.batch_size)}"
            ) from err
        td = self._td.clone(recurse=False)
        td.set("_reset", mask.unsqueeze(-1).to(td.device))
        self._td = self.env.reset(td, **kwargs)
        count = int(mask.sum())
        self._traj_ids = self._traj_ids.clone()
        self._traj_ids[mask] = torch.arange(self._traj_counter, self._traj_counter + count)
        self._traj_counter += count

    def iterator(self) -> Iterator[TensorDictBase]:
        """Yield batches until ``total_frames`` frames were collected (forever if -1)."""
        while self.total_frames < 0 or self.frames_collected < self.total_frames:
            if self._stop.is_set():
                return
            batch = self.rollout()
            if self.split_trajs:
                batch = split_trajectories(batch)
            if self.postproc is not None:
                batch = self.postproc(batch)
            if self.replay_buffer is not None:
                self.replay_buffer.extend(batch)
            yield batch

    def __iter__(self) -> Iterator[TensorDictBase]:
        if self._thread is not None:
            raise RuntimeError(
                "this collector is running in the background (start()); "
                "sample from its replay buffer instead of iterating"
            )
        return self.iterator()

    def next(self) -> TensorDictBase:
        """Collect and return one batch (postprocessed like the iterator's)."""
        return next(self.iterator())

    # ------------------------------------------------------------------ async
    def start(self) -> None:
        """Collect into ``replay_buffer`` in a background thread until ``total_frames``.

        Read :attr:`frames_collected` to follow progress; stop with :meth:`async_shutdown`.
        """
        if self.replay_buffer is None:
            raise RuntimeError("start() needs the collector to be built with replay_buffer=")
        if self._thread is not None:
            raise RuntimeError("the collector is already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="collector", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for _ in self.iterator():
                if self._stop.is_set():
                    break
        except BaseException as err:  # surfaced by async_shutdown / is_running
            self._thread_error = err

    @property
    def is_running(self) -> bool:
        """Whether the background collection thread is alive (raises its error if it died)."""
        # alive first: a thread seen dead has already stored the error it died of
        alive = self._thread is not None and self._thread.is_alive()
        self._raise_thread_error()
        return alive

    def _raise_thread_error(self) -> None:
        """Raise, once, the error the background thread died of, naming its type and
        message (the original, with its traceback, is the ``__cause__``)."""
        err, self._thread_error = self._thread_error, None
        if err is not None:
            raise RuntimeError(
                f"background collection failed: {type(err).__name__}: {err}"
            ) from err

    def async_shutdown(self, timeout: float | None = 30.0) -> None:
        """Stop the background thread (after its current batch) and close the env."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.shutdown()
        self._raise_thread_error()

    # ------------------------------------------------------------------ misc
    def update_policy_weights_(
        self,
        policy_weights: Any = None,
        *,
        policy_or_weights: Any = None,
        worker_ids: Any = None,
    ) -> None:
        """Load ``policy_weights`` (a module, a state_dict or ``TensorDict.from_module``)
        into the policy; without them nothing to do: this collector acts with the trainer's
        own policy object."""
        weights = policy_weights if policy_weights is not None else policy_or_weights
        if weights is None or weights is self.policy:
            return
        if not isinstance(self.policy, torch.nn.Module):
            raise TypeError("update_policy_weights_(weights) needs an nn.Module policy")
        with torch.no_grad():
            self.policy.load_state_dict(weights_state_dict(weights))

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seed the env (takes effect at the next reset, forced before the next batch).

        Returns:
            The next free seed, for seeding something else.
        """
        out = self.env.set_seed(seed)
        self._td = None
        return seed + self.n_envs if out is None else int(out)

    def shutdown(self) -> None:
        """Close the env if the collector created it."""
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(30.0)
            self._thread = None
        if self._owns_env and not getattr(self.env, "is_closed", False):
            self.env.close()

    def state_dict(self) -> dict[str, Any]:
        """Frames collected, trajectory counter and ids, current env input and env state.

        Also the gymnasium sub-envs' internal state (``"env_internal"``, see
        :mod:`rl_trainers.envs.libs.gym_state`) and torch's global RNG state, which
        :meth:`load_state_dict` restores (the policy and random actions sample from it).
        """
        td = None if self._td is None else self._td.to_dict()
        return {
            "frames_collected": self.frames_collected,
            "traj_counter": self._traj_counter,
            "traj_ids": self._traj_ids.clone(),
            "td": td,
            "env": self.env.state_dict(),
            "env_internal": None if td is None else get_env_state(self.env),
            # the policy samples with torch's global generator: in a worker process this is
            # the only copy of it (in the trainer's process the trainer restores it again)
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(
        self, state_dict: dict[str, Any], restore_observation: bool | None = None
    ) -> None:
        """Restore what :meth:`state_dict` returned, so collection continues where it was.

        Frame and trajectory counters and the env's state (e.g. normalisation statistics)
        are restored. The gymnasium sub-envs' internal state (physics, time-limit counters,
        random generators; see :mod:`rl_trainers.envs.libs.gym_state`) is written back when
        it was captured, and then the saved observation too, so episodes continue exactly.
        ``restore_observation=None`` (default) does that when possible and otherwise warns
        and resets the env before the next batch; ``True`` restores the observation in any
        case (same live env), ``False`` always resets.
        """
        self.frames_collected = int(state_dict["frames_collected"])
        self._traj_counter = int(state_dict["traj_counter"])
        self._traj_ids = state_dict["traj_ids"].clone()
        if state_dict.get("torch_rng") is not None:
            torch.set_rng_state(state_dict["torch_rng"])
        self.env.load_state_dict(state_dict["env"])
        td = state_dict["td"]
        if restore_observation is None and td is not None:
            restore_observation = set_env_state(self.env, state_dict.get("env_internal"))
        if restore_observation and td is not None:
            self._td = TensorDict(td, batch_size=self.batch_size)
        else:
            self._td = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={type(self.env).__name__}, "
            f"frames_per_batch={self.frames_per_batch}, total_frames={self.total_frames})"
        )


def trajectory_ids(
    done: torch.Tensor, current: torch.Tensor, counter: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Trajectory ids of a batch from its done flags, numbering new episodes in step order.

    Args:
        done: ``[E, T]`` bool, ``done[e, t]``: sub-env ``e``'s episode ended at step ``t``.
        current: ``[E]`` ids of the trajectories running at the first step.
        counter: the next unused id.

    Returns:
        ``(ids [E, T], ids running after the batch [E], next unused id)``. The episodes that
        start after step ``t`` get consecutive ids, in sub-env order, before those starting
        after step ``t + 1``.
    """
    n_envs, steps = done.shape
    if not bool(done.any()):  # no episode ends (most one-step batches): ~10 ops less
        return current.unsqueeze(1).expand(n_envs, steps).clone(), current, counter
    time_major = done.t()  # [T, E]: events numbered step by step, sub-env by sub-env
    numbered = torch.cumsum(time_major.reshape(-1), 0).reshape(steps, n_envs) + (counter - 1)
    started = torch.where(time_major, numbered, -1)
    # ids only grow, so the latest episode start up to a step is a running maximum
    latest = torch.cummax(started, dim=0).values  # [T, E]: id started at or before step t
    before = torch.cat([torch.full((1, n_envs), -1, dtype=latest.dtype), latest[:-1]])
    ids = torch.where(before >= 0, before, current.unsqueeze(0)).t()
    after = torch.where(latest[-1] >= 0, latest[-1], current)
    return ids, after, counter + int(time_major.sum())


def _fast_set(td: TensorDictBase, key: str, value: torch.Tensor) -> None:
    """``td.set(key, value)`` without tensordict's per-call validation for plain TensorDicts.

    Only used for values built to the td's batch shape and device (random actions).
    """
    if type(td) is TensorDict and value.device == td.device:
        td._set_str(key, value, inplace=False, validated=True)
    else:
        td.set(key, value)


def _device(device: Any) -> torch.device | None:
    return None if device is None else torch.device(device)


class NonFiniteBatchError(FloatingPointError):
    """A collected batch holds NaN or infinite values (the env's output, or the policy's)."""


def check_finite_batch(batch: TensorDictBase, first_frame: int) -> None:
    """Raise :class:`NonFiniteBatchError` if a float entry of ``batch`` (``[*B, T]``) is not
    finite, naming the entry, the sub-env and the frame of the first bad step.

    One ``isfinite(...).all()`` per float entry: the cost of a batch, not of a step.
    ``first_frame`` is the collector's frame count at the batch's first step.
    """
    found = []  # (step, env, key, value) of each entry's first bad step
    nd = batch.batch_dims
    for key, value in batch.items(include_nested=True, leaves_only=True):
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            continue
        finite = torch.isfinite(value)
        if bool(finite.all()):
            continue
        steps = value.shape[nd - 1] if nd else 1
        bad = ~finite.reshape(-1, steps, int(finite[(0,) * nd].numel()) if nd else 1).all(-1)
        step = int(bad.any(0).nonzero()[0])
        env_idx = int(bad[:, step].nonzero()[0])
        sample = value.reshape(bad.shape[0], steps, -1)[env_idx, step]
        found.append((step, env_idx, key, sample[~torch.isfinite(sample)][0].item()))
    if not found:
        return
    n_envs = batch.batch_size[:-1].numel() if nd else 1
    step, env_idx, key, sample = min(found, key=lambda f: (f[0], f[1]))
    name = key if isinstance(key, str) else "/".join(key)
    where = f"sub-env {env_idx} of {n_envs}" if n_envs > 1 else "the env"
    raise NonFiniteBatchError(
        f"the collected batch holds {sample} in {name!r} from {where} at frame "
        f"{first_frame + step * n_envs + env_idx} (step {step} of the batch): the "
        "environment (or the policy) produced a non-finite value; set "
        "collector.check_finite=false to let such values through"
    )


class EnvError(RuntimeError):
    """An env's ``step`` or ``reset`` raised; the message names the env and the error (the
    original exception, with its traceback, is the ``__cause__``)."""


def _watch_env(env: Any, timeout_s: float | None) -> Any:
    """Wrap the ``step`` and ``reset`` of ``env``'s innermost vector env (a gymnasium one,
    when there is one) so that an exception they raise becomes an :class:`EnvError` naming
    the env, and, with ``timeout_s``, return a
    :class:`~rl_trainers.collectors.watchdog.Watchdog` they beat (once per batch when no
    vector env is found)."""
    from rl_trainers.collectors.watchdog import EnvStepTimeout, Watchdog

    label = _env_label(env)
    vector = _vector_env(env)
    watchdog = None
    if timeout_s:

        def timed_out(elapsed: float) -> BaseException:
            which = _blocked_sub_envs(vector)
            return EnvStepTimeout(
                f"env {label}{which} did not return from step/reset within "
                f"collector.step_timeout_s={timeout_s:g} s"
            )

        watchdog = Watchdog(timeout_s, timed_out)
    if vector is not None:
        # the methods as they were before any collector wrapped them (one wrapper at most)
        originals = vector.__dict__.setdefault(
            "_rl_trainers_unwatched",
            {
                n: getattr(vector, n)
                for n in ("step", "reset")
                if callable(getattr(vector, n, None))
            },
        )
        for name, original in originals.items():
            setattr(vector, name, _watched(original, name, label, watchdog))
    return watchdog


def _watched(method: Callable, name: str, label: str, watchdog: Any) -> Callable:
    from rl_trainers.collectors.watchdog import EnvStepTimeout

    def call(*args: Any, **kwargs: Any) -> Any:
        if watchdog is not None:
            watchdog.beat()
        try:
            out = method(*args, **kwargs)
        except EnvStepTimeout:
            raise
        except Exception as err:
            raise EnvError(f"env {label} raised in {name}: {type(err).__name__}: {err}") from err
        if watchdog is not None:
            watchdog.beat()
        return out

    return call


def _env_label(env: Any) -> str:
    base = getattr(env, "base_env", env)
    name = getattr(base, "env_name", None) or getattr(env, "env_name", None)
    if not name:  # a ParallelEnv: what its sub-envs are built from
        name = _factory_env_name(getattr(base, "_vector_args", (None,))[0])
    return repr(name) if name else type(base).__name__


def _factory_env_name(factories: Any) -> str | None:
    """The ``env_name`` a (list of) env factories builds, when one of them tells it."""
    f = factories[0] if isinstance(factories, list | tuple) and factories else factories
    for _ in range(6):
        if f is None:
            return None
        cfg = getattr(f, "env_cfg", None)
        name = getattr(f, "env_name", None) or (
            cfg.get("env_name") if isinstance(cfg, dict) else None
        )
        if isinstance(name, str):
            return name
        keywords = getattr(f, "keywords", None)  # functools.partial
        if isinstance(keywords, dict) and isinstance(keywords.get("env_name"), str):
            return keywords["env_name"]
        f = getattr(f, "factory", None) or getattr(f, "func", None)
    return None


def _vector_env(env: Any) -> Any:
    base = getattr(env, "base_env", env)
    vector = getattr(base, "_env", None)
    return vector if vector is not None and hasattr(vector, "step") else None


def _blocked_sub_envs(vector: Any) -> str:
    """`` (sub-env i of n)`` for the sub-envs that did not answer, when that can be told:
    gymnasium's AsyncVectorEnv (its workers' pipes) or SyncVectorEnv (the loop index of the
    main thread's step)."""
    import sys

    if vector is None:
        return ""
    n = getattr(vector, "num_envs", None)
    pipes = getattr(vector, "parent_pipes", None)
    try:
        if pipes is not None:
            silent = [i for i, pipe in enumerate(pipes) if not pipe.poll()]
            if silent:
                return f" (sub-env {', '.join(map(str, silent))} of {n})"
            return ""
        frame = sys._current_frames().get(threading.main_thread().ident)
        while frame is not None:
            if frame.f_locals.get("self") is vector and isinstance(frame.f_locals.get("i"), int):
                return f" (sub-env {frame.f_locals['i']} of {n})"
            frame = frame.f_back
    except Exception:  # best effort: the message names the env anyway
        return ""
    return ""


# torchrl's module path ``torchrl.collectors.collectors.MultiSyncDataCollector``; multi.py
# imports this module, so the names are bound last
from rl_trainers.collectors.multi import (  # noqa: E402
    MultiaSyncDataCollector,
    MultiSyncDataCollector,
    aSyncDataCollector,
)
