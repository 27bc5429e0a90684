"""Data-parallel training across the processes ``torchrun`` starts (see docs/distributed.md).

Every process (rank) collects its own data from its own envs, seeded apart
(:func:`rank_seed`), and computes its own loss; :class:`DataParallel` averages the
gradients across ranks before every optimizer step, so the parameters, broadcast from
rank 0 at the start of training, stay identical on every rank. The :class:`Trainer
<rl_trainers.core.loop.Trainer>` uses it when ``torch.distributed`` is initialised
with more than one process: it sums the frames of all ranks (``total_frames`` is the budget
of the whole job) and makes every rank stop after the same batch.

A single process (no ``WORLD_SIZE`` in the environment, or ``WORLD_SIZE=1``) never
initialises ``torch.distributed`` and runs exactly as before.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = [
    "RANK_SEED_OFFSET",
    "DataParallel",
    "RankLostError",
    "get_rank",
    "get_world_size",
    "init_distributed",
    "is_distributed",
    "rank_checkpoint_path",
    "rank_seed",
]

#: Rank ``r`` seeds torch, numpy, random and its envs with ``seed + r * RANK_SEED_OFFSET``
#: (rank 0 with ``seed`` itself, as a single-process run), far apart from the consecutive
#: seeds of a rank's sub-envs and collector workers and from the evaluation's ``seed + 10000``.
RANK_SEED_OFFSET = 1_000_000


def _dist():
    import torch.distributed as dist

    return dist


def launched_with_several_processes() -> bool:
    """Whether the environment (``torchrun``'s ``WORLD_SIZE``) asks for more than one process."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def init_distributed(device: str | torch.device = "cpu") -> bool:
    """Initialise ``torch.distributed`` from torchrun's variables, once per process.

    ``WORLD_SIZE``/``RANK``/``LOCAL_RANK`` (and ``MASTER_ADDR``/``MASTER_PORT``) come from
    ``torchrun``. The backend is ``nccl`` for a CUDA ``device`` (each process then uses GPU
    ``LOCAL_RANK``) and ``gloo`` otherwise. Without ``WORLD_SIZE > 1`` nothing happens.

    Returns:
        Whether this process is one of several (``torch.distributed`` is initialised).
    """
    if not launched_with_several_processes():
        return is_distributed()
    dist = _dist()
    if dist.is_initialized():
        return dist.get_world_size() > 1
    if not dist.is_available():  # pragma: no cover - torch built without distributed
        raise RuntimeError("WORLD_SIZE > 1 but this torch build has no torch.distributed.")
    backend = "nccl" if torch.device(device).type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    atexit.register(_destroy)
    return dist.get_world_size() > 1


def _destroy() -> None:
    dist = _dist()
    if dist.is_initialized():
        dist.destroy_process_group()


def is_distributed() -> bool:
    """Whether ``torch.distributed`` is initialised with more than one process."""
    dist = _dist()
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def get_rank() -> int:
    """This process's rank (0 in a single-process run)."""
    return _dist().get_rank() if is_distributed() else 0


def get_world_size() -> int:
    """The number of processes (1 in a single-process run)."""
    return _dist().get_world_size() if is_distributed() else 1


def rank_seed(seed: int, rank: int | None = None) -> int:
    """The seed of ``rank`` (default: this process's): ``seed + rank * RANK_SEED_OFFSET``."""
    rank = get_rank() if rank is None else rank
    return int(seed) + rank * RANK_SEED_OFFSET


def rank_checkpoint_path(path: str | os.PathLike, rank: int | None = None) -> Path:
    """Where ``rank`` keeps its counterpart of rank 0's checkpoint ``path``:
    ``path`` itself for rank 0, ``<path's directory>/rank<r>/<path's name>`` otherwise."""
    path = Path(path)
    rank = get_rank() if rank is None else rank
    return path if rank == 0 else path.parent / f"rank{rank}" / path.name


class RankLostError(RuntimeError):
    """A collective failed because another rank is gone (killed, crashed, its machine lost):
    this rank ends with one line instead of the backend's traceback."""


#: What gloo and NCCL say when a peer's connection is gone or a collective timed out.
_LOST_PEER = re.compile(
    r"connection (closed|reset) by peer|broken pipe|timed out|timeout|socket closed"
    r"|remote process exited|NCCL communicator was aborted",
    re.IGNORECASE,
)


def _reporting_lost_ranks(method):
    """Turn a collective's "peer gone" error into a :class:`RankLostError` of one line."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except RuntimeError as err:
            text = str(err)
            if isinstance(err, RankLostError) or not _LOST_PEER.search(text):
                raise
            # gloo: "[.../pair.cc:553] Connection closed by peer [127.0.0.1]:2472. This is
            # typically caused by a remote worker crashing..."
            reason = re.sub(r"^\[[^\]]*\]\s*", "", text.strip().splitlines()[0])
            reason = reason.split(". ")[0].rstrip(".")
            raise RankLostError(
                f"rank {self.rank} of {self.world_size} lost another rank in a collective "
                f"({method.__name__}: {reason}): that rank died or hung, and this one stops "
                "too (torchrun names the rank that failed). Every rank's last checkpoint is "
                "intact: continue with trainer.resume=true"
            ) from None

    return wrapper


class DataParallel:
    """The collective operations a data-parallel :class:`Trainer` needs, on the default group.

    Tensors that go through a collective live on CPU for ``gloo`` and on this process's GPU
    for ``nccl``.
    """

    def __init__(self) -> None:
        dist = _dist()
        if not is_distributed():
            raise RuntimeError(
                "DataParallel needs torch.distributed initialised with more than one process "
                "(launch with torchrun and call init_distributed())."
            )
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.backend = str(dist.get_backend())
        if self.backend == "nccl":
            self.device = torch.device("cuda", torch.cuda.current_device())
        else:
            self.device = torch.device("cpu")

    # ------------------------------------------------------------------ gradients
    @torch.no_grad()
    def average_gradients(self, params: Sequence[torch.Tensor], flat=None) -> None:
        """Replace every gradient by its mean over the ranks.

        With ``flat`` (a :class:`~rl_trainers.core.flat_params.FlatParameters` holding
        ``params`` and their gradients) its one gradient buffer is reduced in place; else
        the gradients are copied into one buffer per dtype and device, reduced and copied
        back. Parameters without a gradient are skipped (every rank must skip the same).
        """
        if flat is not None:
            self._average_in_place(flat.grad)
            return
        grads = [p.grad for p in params if p.grad is not None]
        if any(g.is_sparse for g in grads):
            raise NotImplementedError("data-parallel training does not average sparse grads")
        self.average_(grads)

    def _average_in_place(self, buffer: torch.Tensor) -> None:
        on_device = buffer.to(self.device)  # the buffer itself unless NCCL needs a copy
        _dist().all_reduce(on_device)
        on_device.div_(self.world_size)
        if on_device is not buffer:
            buffer.copy_(on_device)

    # ------------------------------------------------------------------ tensors
    @torch.no_grad()
    def broadcast_(self, tensors: Iterable[torch.Tensor], src: int = 0) -> None:
        """Overwrite ``tensors`` in place with rank ``src``'s values (one message per dtype)."""
        dist = _dist()
        for group in _by_dtype_and_device(_unique(tensors)):
            buffer = torch._utils._flatten_dense_tensors(group).to(self.device)
            dist.broadcast(buffer, src=src)
            for tensor, new in zip(group, torch._utils._unflatten_dense_tensors(buffer, group)):
                tensor.copy_(new)

    def broadcast_module_(self, module: nn.Module, src: int = 0) -> None:
        """Give every rank rank ``src``'s parameters and buffers of ``module``."""
        self.broadcast_(_module_tensors(module), src=src)

    @torch.no_grad()
    def average_(self, tensors: Iterable[torch.Tensor]) -> None:
        """Replace floating-point ``tensors`` in place by their mean over the ranks (one
        message per dtype and device)."""
        floats = [t for t in _unique(tensors) if t.is_floating_point()]
        for group in _by_dtype_and_device(floats):
            if len(group) == 1 and group[0].is_contiguous():
                self._average_in_place(group[0])
                continue
            buffer = torch._utils._flatten_dense_tensors(group)
            self._average_in_place(buffer)
            for tensor, new in zip(group, torch._utils._unflatten_dense_tensors(buffer, group)):
                tensor.copy_(new)

    def mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """The mean of ``tensor`` over the ranks (a new tensor on ``tensor``'s device)."""
        out = tensor.detach().to(self.device, copy=True)
        _dist().all_reduce(out)
        return out.div_(self.world_size).to(tensor.device)

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum of ``tensor`` over the ranks (a new tensor on ``tensor``'s device)."""
        out = tensor.detach().to(self.device, copy=True)
        _dist().all_reduce(out)
        return out.to(tensor.device)

    def sum_ints(self, *values: int) -> list[int]:
        """The sums of integers over the ranks, in one message."""
        t = torch.tensor(values, dtype=torch.int64, device=self.device)
        _dist().all_reduce(t)
        return [int(v) for v in t.tolist()]

    def min_max(self, value: int) -> tuple[int, int]:
        """The smallest and largest ``value`` over the ranks."""
        t = torch.tensor([value, -value], dtype=torch.int64, device=self.device)
        _dist().all_reduce(t, op=_dist().ReduceOp.MAX)
        return -int(t[1]), int(t[0])

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (picklable), in rank order."""
        out: list[Any] = [None] * self.world_size
        _dist().all_gather_object(out, obj)
        return out

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s ``obj`` on every rank."""
        box = [obj]
        _dist().broadcast_object_list(box, src=src)
        return box[0]


for _name in (
    "average_gradients",
    "broadcast_",
    "average_",
    "mean",
    "sum",
    "sum_ints",
    "min_max",
    "gather_objects",
    "broadcast_object",
):
    setattr(DataParallel, _name, _reporting_lost_ranks(getattr(DataParallel, _name)))
del _name


def parameters_digest(module: nn.Module) -> str:
    """A SHA-256 of ``module``'s parameters and buffers (names, dtypes, shapes and bytes):
    equal digests mean bitwise equal states. Buffers a submodule names in its
    ``rank_local_buffers`` (e.g. gSDE's exploration noise, drawn by each rank) are left out."""
    local = {
        f"{prefix}.{b}" if prefix else b
        for prefix, sub in module.named_modules()
        for b in getattr(sub, "rank_local_buffers", ())
    }
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        if not isinstance(tensor, torch.Tensor) or name in local:
            continue
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _unique(tensors: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    seen, out = set(), []
    for t in tensors:
        if isinstance(t, nn.parameter.UninitializedTensorMixin) or id(t) in seen:
            continue
        seen.add(id(t))
        out.append(t)
    return out


def _module_tensors(module: nn.Module) -> list[torch.Tensor]:
    return [*module.parameters(), *(b for b in module.buffers() if b is not None)]


def _by_dtype_and_device(tensors: Iterable[torch.Tensor]) -> list[list[torch.Tensor]]:
    groups: dict[tuple, list[torch.Tensor]] = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    return list(groups.values())
