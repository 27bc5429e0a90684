"""Multi-process collectors: one :class:`SyncDataCollector` per worker process.

Workers are started with ``fork`` on Linux (lambdas and local env factories work, start-up
is fast) and ``spawn`` elsewhere (factories and policy are sent with cloudpickle). The policy
weights live in shared memory: :meth:`update_policy_weights_` copies the trainer's weights
into them, and every worker acts with them from its next step.

Failure handling: a worker that raises sends its traceback to the parent, which shuts every
worker down and raises ``RuntimeError`` with that traceback. The parent waits with short
timeouts and checks that workers are alive, so a worker that dies silently is reported
instead of hanging. Workers ignore SIGINT; on Ctrl-C the parent's ``KeyboardInterrupt``
shuts them down. Workers also exit when their parent disappears.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import torch
import torch.multiprocessing as mp
from tensordict import TensorDictBase
from tensordict.nn import InteractionType

from rl_trainers.collectors.collectors import (
    TRAJ_KEY,
    DataCollectorBase,
    SyncDataCollector,
    _env_label,
    check_cudagraph_device,
)
from rl_trainers.collectors.utils import split_trajectories, weights_state_dict
from rl_trainers.envs.libs.gym import leave_stop_signals_to_main_process
from rl_trainers.envs.transforms.transforms import RunningStatistics, running_statistics

__all__ = ["MultiSyncDataCollector", "MultiaSyncDataCollector", "aSyncDataCollector"]

_POLL_S = 0.5


def _shared_weights(policy: Any) -> dict[str, torch.Tensor] | None:
    if not isinstance(policy, torch.nn.Module):
        return None
    return {k: v.detach().clone().share_memory_() for k, v in policy.state_dict().items()}


def _bind_weights(policy: torch.nn.Module, shared: dict[str, torch.Tensor]) -> None:
    """Make the worker's policy parameters and buffers views of the shared tensors."""
    for name, tensor in list(policy.named_parameters()) + list(policy.named_buffers()):
        if name in shared:
            tensor.data = shared[name]


def _worker(
    idx: int,
    conn: Connection,
    payload: bytes | tuple,
    shared: dict[str, torch.Tensor] | None,
    kwargs: dict[str, Any],
) -> None:
    leave_stop_signals_to_main_process()  # Ctrl-C ignored, SIGTERM unwinds (closing envs)
    # Workers are daemonic (they die with the parent) but may build a ParallelEnv, whose own
    # (daemonic) processes multiprocessing refuses to start from a daemonic process.
    mp.current_process()._config["daemon"] = False
    parent = os.getppid()
    torch.set_num_threads(1)
    collector = None
    try:
        if isinstance(payload, bytes):
            import cloudpickle

            create_env_fn, policy = cloudpickle.loads(payload)
        else:
            create_env_fn, policy = payload
        if policy is not None and shared is not None:
            _bind_weights(policy, shared)
        collector = SyncDataCollector(create_env_fn, policy, total_frames=-1, **kwargs)
        iterator = collector.iterator()
        normalizers = running_statistics(collector.env)
        conn.send(("ready", [t.frozen_copy() for t in normalizers]))
        while True:
            if not conn.poll(_POLL_S):
                if os.getppid() != parent:
                    return
                continue
            cmd, arg = conn.recv()
            if cmd == "collect":
                conn.send(("batch", next(iterator)))
            elif cmd == "seed":
                conn.send(("seed", collector.set_seed(arg)))
            elif cmd == "state_dict":
                conn.send(("state_dict", collector.state_dict()))
            elif cmd == "load_state_dict":
                collector.load_state_dict(arg)
                conn.send(("ok", None))
            elif cmd == "reset":
                collector.reset()
                conn.send(("ok", None))
            elif cmd == "statistics":
                conn.send(("statistics", [t.statistics() for t in normalizers]))
            elif cmd == "statistics_update":
                conn.send(("statistics_update", [t.statistics_update() for t in normalizers]))
            elif cmd == "load_statistics":
                for t, stats in zip(normalizers, arg, strict=True):
                    t.load_statistics_(stats)
                conn.send(("ok", None))
            elif cmd == "close":
                return
            else:
                raise ValueError(f"unknown command {cmd!r}")
    except BaseException:
        try:
            text = traceback.format_exc()
            label = None if collector is None else _env_label(collector.env)
            if label is not None and label not in text.rstrip().splitlines()[-1]:
                text = f"{text.rstrip()} (in env {label})"  # the line the parent reports
            conn.send(("error", text))
        except Exception:
            pass
    finally:
        if collector is not None:
            try:
                collector.shutdown()
                # an env instance given to the collector is this process's own copy: close
                # it too, or its sub-processes (ParallelEnv) keep the worker from exiting
                if not getattr(collector.env, "is_closed", True):
                    collector.env.close()
            except Exception:
                pass
        conn.close()


class CollectorWorkerError(RuntimeError):
    """A collector worker failed (its error is in the message), died or went silent.

    Attributes:
        detail: the worker's traceback, when it sent one.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail

    def __str__(self) -> str:
        head = super().__str__()
        return head if not self.detail else f"{head}\n{self.detail}"

    @property
    def summary(self) -> str:
        """The one-line message, without the worker's traceback."""
        return super().__str__()


def _last_line(traceback_text: str) -> str:
    """The ``Type: message`` line closing a formatted traceback."""
    lines = [line for line in traceback_text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no traceback)"


class _MultiCollectorBase(DataCollectorBase):
    def __init__(
        self,
        create_env_fn: Callable[[], Any] | list[Callable[[], Any]],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        num_workers: int | None = None,
        init_random_frames: int | None = 0,
        split_trajs: bool = False,
        device: str | torch.device | None = None,
        storing_device: str | torch.device | None = None,
        env_device: str | torch.device | None = None,
        policy_device: str | torch.device | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        reset_at_each_iter: bool = False,
        exploration_type: InteractionType = InteractionType.RANDOM,
        mp_start_method: str | None = None,
        timeout: float = 120.0,
        max_frames_per_traj: int | None = None,
        cat_results: str | int | None = None,
        trust_policy: bool | None = None,
        compile_policy: bool | dict[str, Any] | None = None,
        cudagraph_policy: bool | dict[str, Any] = False,
        step_timeout_s: float | None = None,
        check_finite: bool = True,
    ) -> None:
        if cudagraph_policy:  # fail here rather than in every worker
            check_cudagraph_device(policy, policy_device or device)
        if cat_results is None:
            cat_results = "stack"
        if not isinstance(cat_results, int) and cat_results != "stack":
            raise ValueError(
                "cat_results must be a string ('stack') or an integer representing the cat "
                f"dimension. Got {cat_results}."
            )
        if not isinstance(self, MultiSyncDataCollector) and cat_results != "stack":
            raise ValueError("cat_results can only be used with ``MultiSyncDataCollector``.")
        self.cat_results = cat_results
        if callable(create_env_fn) and not isinstance(create_env_fn, (list, tuple)):
            create_env_fn = [create_env_fn] * (num_workers or 1)
        create_env_fn = list(create_env_fn)
        if num_workers is not None and num_workers != len(create_env_fn):
            raise ValueError(
                f"num_workers={num_workers} does not match the {len(create_env_fn)} env factories"
            )
        if not create_env_fn:
            raise ValueError("need at least one env factory")
        self.num_workers = len(create_env_fn)
        if total_frames is None or total_frames == 0:
            total_frames = -1
        self.frames_per_batch = int(frames_per_batch)
        self.total_frames = int(total_frames)
        self.split_trajs = split_trajs
        self.postproc = postproc
        self.policy = policy
        self.timeout = timeout
        self.frames_collected = 0
        worker_frames = self._worker_frames(self.frames_per_batch)
        init_random = int(init_random_frames or 0)
        kwargs = {
            "frames_per_batch": worker_frames,
            "init_random_frames": -(-init_random // self.num_workers) if init_random else 0,
            "device": device,
            "storing_device": storing_device,
            "env_device": env_device,
            "policy_device": policy_device,
            "reset_at_each_iter": reset_at_each_iter,
            "exploration_type": exploration_type,
            "max_frames_per_traj": max_frames_per_traj,
            # each worker compiles (or graphs) its own copy of the policy
            "compile_policy": compile_policy,
            "cudagraph_policy": cudagraph_policy,
            # each worker watches its own env steps and checks its own batches
            "step_timeout_s": step_timeout_s,
            "check_finite": check_finite,
        }
        method = mp_start_method or ("fork" if sys.platform.startswith("linux") else "spawn")
        ctx = mp.get_context(method)
        self._shared = _shared_weights(policy)
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._closed = False
        try:
            for i, fn in enumerate(create_env_fn):
                payload: bytes | tuple = (fn, policy)
                if method != "fork":
                    import cloudpickle

                    payload = cloudpickle.dumps((fn, policy))
                parent_conn, child_conn = ctx.Pipe()
                proc = ctx.Process(
                    target=_worker,
                    args=(i, child_conn, payload, self._shared, kwargs),
                    name=f"collector-worker-{i}",
                    daemon=True,
                )
                proc.start()
                child_conn.close()
                self._procs.append(proc)
                self._conns.append(parent_conn)
            hubs = [self._recv(i, expect="ready") for i in range(self.num_workers)]
        except BaseException:
            self.shutdown()
            raise

        #: the workers' running normalisers (``VecNorm``, ``RewardNorm``) share one set of
        #: statistics, held here (frozen copies in this process): see ``_share_statistics``
        self.running_statistics: list[RunningStatistics] = hubs[0]

    def _worker_frames(self, frames_per_batch: int) -> int:
        return frames_per_batch

    def _share_statistics(self, workers: Sequence[int]) -> None:
        """Give the running normalisers of every worker one set of statistics, as one
        normaliser over all the workers' envs would have (as ranks do in data-parallel
        training): ``workers`` (those that just delivered a batch) send what they saw, the
        copies in :attr:`running_statistics` merge it (``VecNorm``: the mean of the workers'
        decayed sums; ``RewardNorm``: every return, merged exactly), and those workers load
        the result. An async collector shares with the worker that delivered; the others
        share when they deliver theirs."""
        if not self.running_statistics:
            return
        for i in workers:
            self._send(i, "statistics_update")
        updates = [self._recv(i, expect="statistics_update") for i in workers]
        for j, hub in enumerate(self.running_statistics):
            hub.merge_updates_({i: u[j] for i, u in zip(workers, updates, strict=True)})
        stats = [hub.statistics() for hub in self.running_statistics]
        for i in workers:
            self._send(i, "load_statistics", stats)
        for i in workers:
            self._recv(i, expect="ok")

    # ---------------------------------------------------------------- messaging
    def _recv(self, i: int, expect: str) -> Any:
        conn, proc = self._conns[i], self._procs[i]
        waited = 0.0
        while not conn.poll(_POLL_S):
            waited += _POLL_S
            if not proc.is_alive():
                if conn.poll(0):
                    break
                self._fail(f"collector worker {i} died (exit code {proc.exitcode})")
            if waited >= self.timeout:
                self._fail(f"collector worker {i} sent nothing for {self.timeout:.0f} s")
        try:
            kind, value = conn.recv()
        except (EOFError, OSError):
            proc.join(1.0)
            self._fail(f"collector worker {i} died (exit code {proc.exitcode})")
        if kind == "error":
            self._fail(f"collector worker {i} failed: {_last_line(value)}", detail=value)
        if kind != expect:
            self._fail(f"collector worker {i} sent {kind!r}, expected {expect!r}")
        return value

    def _send(self, i: int, cmd: str, arg: Any = None) -> None:
        try:
            self._conns[i].send((cmd, arg))
        except (BrokenPipeError, OSError):
            self._recv(i, expect="__never__")  # surfaces the worker's error
            raise

    def _fail(self, message: str, detail: str | None = None) -> None:
        self.shutdown()
        raise CollectorWorkerError(message, detail)

    def _relabel(self, batch: TensorDictBase, worker: int) -> TensorDictBase:
        ids = batch.get(TRAJ_KEY)
        batch.set(TRAJ_KEY, ids * self.num_workers + worker)
        return batch

    def _finish(self, batch: TensorDictBase) -> TensorDictBase:
        if self.split_trajs:
            batch = split_trajectories(batch)
        if self.postproc is not None:
            batch = self.postproc(batch)
        return batch

    # ---------------------------------------------------------------- public
    def update_policy_weights_(
        self,
        policy_weights: Any = None,
        *,
        policy_or_weights: Any = None,
        worker_ids: Any = None,
    ) -> None:
        """Copy the policy's current weights (or ``policy_weights``: a module, a state_dict
        or ``TensorDict.from_module(policy)``) into the workers' copy."""
        if self._shared is None:
            return
        weights = policy_weights if policy_weights is not None else policy_or_weights
        weights = weights_state_dict(self.policy if weights is None else weights)
        matched = [key for key in weights if key in self._shared]
        if weights and not matched:
            raise KeyError(
                f"none of the given weights ({sorted(weights)[:3]}...) name a parameter of the "
                f"collector's policy ({sorted(self._shared)[:3]}...)"
            )
        with torch.no_grad():
            for key in matched:
                self._shared[key].copy_(weights[key])

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seed worker ``i``'s env with the seed following worker ``i - 1``'s; returns the next."""
        self._drain()
        for i in range(self.num_workers):
            self._send(i, "seed", seed)
            seed = self._recv(i, expect="seed")
        return seed

    def state_dict(self) -> dict[str, Any]:
        self._drain()
        workers = []
        for i in range(self.num_workers):
            self._send(i, "state_dict")
            workers.append(self._recv(i, expect="state_dict"))
        return {"frames_collected": self.frames_collected, "workers": workers}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._drain()
        self.frames_collected = int(state_dict["frames_collected"])
        for i, sd in enumerate(state_dict["workers"]):
            self._send(i, "load_state_dict", sd)
            self._recv(i, expect="ok")
        if self.running_statistics:  # the shared statistics are those the workers saved
            self._send(0, "statistics")
            for hub, stats in zip(self.running_statistics, self._recv(0, expect="statistics")):
                hub.load_statistics_(stats)

    def reset(self, reset_idx: Sequence[bool] | None = None) -> None:
        """Reset the envs of the workers flagged in ``reset_idx`` (all when None): they start
        new episodes, with new trajectory ids. Batches already requested from them (async
        collectors) are dropped."""
        flags = [True] * self.num_workers if reset_idx is None else [bool(f) for f in reset_idx]
        if len(flags) != self.num_workers:
            raise ValueError(
                f"reset_idx has {len(flags)} flags for {self.num_workers} collector workers"
            )
        self._drain()
        for i in (i for i, flag in enumerate(flags) if flag):
            self._send(i, "reset")
            self._recv(i, expect="ok")

    def _drain(self) -> None:
        """Wait for batches requested but not consumed (async collectors)."""

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every worker: ask nicely, then terminate, then kill."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        for conn in self._conns:
            try:
                conn.send(("close", None))
            except Exception:
                pass
        for proc in self._procs:
            proc.join(timeout)
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(2.0)
            if proc.is_alive():
                proc.kill()
                proc.join(2.0)
        for conn in self._conns:
            conn.close()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for monitoring and tests)."""
        return [p.pid for p in self._procs]

    def __del__(self) -> None:
        try:
            self.shutdown(timeout=1.0)
        except Exception:
            pass


class MultiSyncDataCollector(_MultiCollectorBase):
    """Run one :class:`SyncDataCollector` per worker process; every iteration gathers one batch
    from each worker and concatenates them along the first (env) dimension.

    Each worker collects ``frames_per_batch // num_workers`` frames, so an iteration yields
    ``frames_per_batch`` frames shaped ``[num_workers * envs_per_worker, T]``. Trajectory ids
    are made unique across workers (``worker_id + num_workers * local_id``).

    Args:
        create_env_fn: a list of env factories, one per worker (``[make_env] * n``), or one
            factory together with ``num_workers``.
        policy: as :class:`SyncDataCollector` (an ``nn.Module`` for weight updates).
        frames_per_batch: frames per yielded batch; rounded up (with a warning) to a multiple
            of ``num_workers``, as torchrl does.
        total_frames: frames in a run; -1 for ever.
        num_workers: number of workers when ``create_env_fn`` is a single callable.
        mp_start_method: "fork" (default on Linux) or "spawn".
        cat_results: ``"stack"`` (default; unbatched workers give ``[num_workers, T]``,
            batched ones are concatenated along the env dimension) or the dimension along
            which the workers' batches are concatenated (``-1``: time, e.g. ``[W * T]``).
        max_frames_per_traj: as :class:`SyncDataCollector`.
        timeout: seconds without any message from a busy worker before giving up.
        **kwargs: as :class:`SyncDataCollector` (init_random_frames, split_trajs, devices,
            postproc, reset_at_each_iter, exploration_type, trust_policy, compile_policy and
            cudagraph_policy, the last two applied in each worker).
    """

    def _worker_frames(self, frames_per_batch: int) -> int:
        if frames_per_batch % self.num_workers:
            # torchrl's behaviour: every worker collects the rounded-up share, with a warning
            per_worker = -(-frames_per_batch // self.num_workers)
            warnings.warn(
                f"frames_per_batch {frames_per_batch} is not exactly divisible by the number "
                f"of collector workers {self.num_workers}; each batch holds "
                f"{per_worker * self.num_workers} frames.",
                stacklevel=3,
            )
            return per_worker
        return frames_per_batch // self.num_workers

    def __iter__(self) -> Iterator[TensorDictBase]:
        try:
            while self.total_frames < 0 or self.frames_collected < self.total_frames:
                for i in range(self.num_workers):
                    self._send(i, "collect")
                batches = [
                    self._relabel(self._recv(i, expect="batch"), i) for i in range(self.num_workers)
                ]
                self._share_statistics(range(self.num_workers))
                if self.cat_results != "stack":
                    batch = torch.cat(batches, self.cat_results)
                elif batches[0].batch_dims == 1:
                    batch = torch.stack(batches, 0)
                else:
                    batch = torch.cat(batches, 0)
                self.frames_collected += batch.numel()  # more if workers rounded theirs up
                yield self._finish(batch)
        except KeyboardInterrupt:
            self.shutdown()
            raise


class MultiaSyncDataCollector(_MultiCollectorBase):
    """Run one :class:`SyncDataCollector` per worker process and yield whichever worker's
    batch is ready first (each of ``frames_per_batch`` frames).

    Workers keep collecting their next batch while the trainer uses the current one, so the
    data can lag one weight update behind. Arguments as :class:`MultiSyncDataCollector`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pending: set[int] = set()
        super().__init__(*args, **kwargs)

    def _drain(self) -> None:
        for i in sorted(self._pending):
            self._recv(i, expect="batch")
        self._pending.clear()

    def __iter__(self) -> Iterator[TensorDictBase]:
        try:
            while self.total_frames < 0 or self.frames_collected < self.total_frames:
                for i in range(self.num_workers):
                    if i not in self._pending:
                        self._send(i, "collect")
                        self._pending.add(i)
                ready = wait([self._conns[i] for i in self._pending], timeout=self.timeout)
                if not ready:
                    for i in self._pending:
                        if not self._procs[i].is_alive():
                            self._recv(i, expect="batch")
                    continue
                i = self._conns.index(ready[0])
                batch = self._relabel(self._recv(i, expect="batch"), i)
                self._pending.discard(i)
                self._share_statistics([i])
                self.frames_collected += batch.numel()
                remaining = self.total_frames < 0 or self.frames_collected < self.total_frames
                if remaining:
                    self._send(i, "collect")
                    self._pending.add(i)
                yield self._finish(batch)
        except KeyboardInterrupt:
            self.shutdown()
            raise


class aSyncDataCollector(MultiaSyncDataCollector):  # noqa: N801 - torchrl's name
    """One :class:`SyncDataCollector` in a worker process, collecting the next batch while
    the trainer uses the current one (a :class:`MultiaSyncDataCollector` with one worker).

    Args:
        create_env_fn: an env factory (or env).
        policy: as :class:`SyncDataCollector`.
        **kwargs: as :class:`MultiaSyncDataCollector` (``frames_per_batch``,
            ``total_frames``, ``init_random_frames``, ...), without ``num_workers``.
    """

    def __init__(
        self,
        create_env_fn: Callable[[], Any] | Any,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        **kwargs: Any,
    ) -> None:
        if "num_workers" in kwargs:
            raise TypeError(
                "aSyncDataCollector runs one worker; use MultiaSyncDataCollector for several"
            )
        super().__init__([create_env_fn], policy, **kwargs)
