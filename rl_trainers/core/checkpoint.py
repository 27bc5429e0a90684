"""Checkpoint files for the Trainer: backends, a safe codec and clear errors.

Two backends, chosen by the environment variable ``CKPT_BACKEND`` (read each time a
checkpoint is written or read, so it can be changed at run time):

- ``torch`` (default): one file written with :func:`torch.save`, atomically (a temporary
  file in the same directory, then :func:`os.replace`), read back with
  ``torch.load(weights_only=True)`` so loading never executes code from the file.
- ``torchsnapshot``: a directory written by ``torchsnapshot.Snapshot`` (install it with
  ``pip install torchsnapshot`` or ``pip install rl_trainers[torchsnapshot]``).

What is stored must be plain data: tensors, numbers, strings, ``None``, booleans, and
dicts/lists/tuples of those. :func:`encode` also accepts numpy arrays and TensorDicts and
stores them as tagged plain dicts that :func:`decode` turns back into the original types.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

__all__ = [
    "BACKENDS",
    "CKPT_FORMAT",
    "CKPT_VERSION",
    "CheckpointError",
    "UnreadableCheckpointError",
    "decode",
    "encode",
    "get_backend",
    "get_rng_state",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "save_checkpoint",
    "save_rotating",
    "set_rng_state",
    "unreadable",
]

CKPT_FORMAT = "rl_trainers.trainer"
CKPT_VERSION = 1
BACKENDS = ("torch", "torchsnapshot")

_ND_TAG = "__rl_trainers_ndarray__"
_TD_TAG = "__rl_trainers_tensordict__"
_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device)


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, foreign or does not match the trainer."""


class UnreadableCheckpointError(CheckpointError):
    """A checkpoint file that cannot be read back: truncated, corrupted or not a checkpoint
    file at all (as opposed to one that reads but does not fit the trainer)."""


def unreadable(err: BaseException) -> bool:
    """Whether ``err`` says a checkpoint file could not be read (truncated or corrupted)."""
    return isinstance(err, UnreadableCheckpointError)


def get_backend() -> str:
    """Return the checkpoint backend named by ``CKPT_BACKEND`` (default ``"torch"``).

    Raises:
        CheckpointError: (a ``ValueError``) for any other value.
    """
    backend = os.environ.get("CKPT_BACKEND", "torch").strip().lower() or "torch"
    if backend not in BACKENDS:
        raise CheckpointError(
            f"CKPT_BACKEND={backend!r} is not supported; choose one of {BACKENDS}."
        )
    return backend


def _import_torchsnapshot():
    try:
        import torchsnapshot
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "CKPT_BACKEND=torchsnapshot needs the torchsnapshot package, which could not be "
            f"imported ({err}). Install it with `pip install torchsnapshot` (or "
            "`pip install rl_trainers[torchsnapshot]`), or use the default backend with "
            "CKPT_BACKEND=torch."
        ) from err
    return torchsnapshot


# --------------------------------------------------------------------------- codec
def encode(obj: Any, where: str = "state") -> Any:
    """Turn ``obj`` into plain data that ``torch.load(weights_only=True)`` accepts.

    Args:
        obj: a state dict (nested containers of tensors, numbers, strings, arrays, TensorDicts).
        where: the key path of ``obj``, used in error messages.

    Raises:
        TypeError: naming the key path of a value that cannot be stored safely.
    """
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, np.generic):  # before _PLAIN: np.float64 and np.str_ are a float and a
        return obj.item()  # str too, which torch would pickle as numpy objects
    if isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, TensorDictBase):
        return {
            _TD_TAG: True,
            "batch_size": list(obj.batch_size),
            "data": encode(obj.to_dict(), where),
        }
    if isinstance(obj, Mapping):
        return {k: encode(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, torch.Size):
        return obj
    if isinstance(obj, tuple):
        return tuple(encode(v, f"{where}[{i}]") for i, v in enumerate(obj))
    if isinstance(obj, list):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return {_ND_TAG: True, "data": torch.from_numpy(np.ascontiguousarray(obj)).clone()}
    raise TypeError(
        f"Cannot store {where} of type {type(obj).__name__} in a checkpoint: only tensors, "
        "numbers, strings, None, numpy arrays, TensorDicts and dicts/lists/tuples of these "
        "are allowed (checkpoints are loaded with weights_only=True)."
    )


def decode(obj: Any) -> Any:
    """Invert :func:`encode`: restore numpy arrays and TensorDicts from their tagged form."""
    if isinstance(obj, dict):
        if obj.get(_ND_TAG) is True:
            return obj["data"].numpy()
        if obj.get(_TD_TAG) is True:
            return TensorDict(decode(obj["data"]), batch_size=list(obj["batch_size"]))
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if isinstance(obj, tuple) and not isinstance(obj, torch.Size):
        return tuple(decode(v) for v in obj)
    return obj


# --------------------------------------------------------------------------- RNG
def get_rng_state() -> dict[str, Any]:
    """Return the RNG states of torch (CPU and CUDA), numpy and random as plain data."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "random": {
            "version": int(version),
            "state": torch.tensor(internal, dtype=torch.int64),
            "gauss_next": gauss_next,
        },
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore RNG states saved by :func:`get_rng_state`."""
    torch.set_rng_state(state["torch"])
    nps = state["numpy"]
    np.random.set_state(
        (
            nps["kind"],
            nps["keys"].numpy().astype(np.uint32),
            nps["pos"],
            nps["has_gauss"],
            nps["cached_gaussian"],
        )
    )
    rs = state["random"]
    random.setstate((rs["version"], tuple(int(x) for x in rs["state"].tolist()), rs["gauss_next"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# --------------------------------------------------------------------------- files
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (a signal's, e.g. ``StoppedAtOnce``) that ``err`` stands for.

    torch's zip writer calls the file's ``write`` from C++; an exception raised there by a
    signal handler comes back as a RuntimeError ("unexpected pos ...") whose context is
    the interrupt, which must not be reported as a failed disk write."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return err
        seen.add(id(err))
        err = err.__context__
    return None


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write ``state`` to ``path`` with the backend named by ``CKPT_BACKEND``.

    Args:
        state: the trainer state (see ``Trainer.state_dict``); encoded with :func:`encode`.
        path: a file (``torch`` backend) or directory (``torchsnapshot`` backend).

    Returns:
        The path written.
    """
    backend = get_backend()
    path = Path(path)
    plain = encode(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    if backend == "torch":
        if path.is_dir():
            raise CheckpointError(
                f"Cannot write checkpoint file {path}: it is a directory (the torch backend "
                "writes one file; CKPT_BACKEND=torchsnapshot writes directories)."
            )
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(plain, f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600 files
            os.replace(tmp, path)
        except BaseException as err:
            if os.path.exists(tmp):
                os.remove(tmp)
            interrupt = _interrupt_behind(err)
            if interrupt is not None:  # a signal landed inside torch's writer
                raise interrupt from None
            if isinstance(err, RuntimeError):
                # torch's zip writer reports a failed write (a full disk...) as a
                # RuntimeError ("unexpected pos ..."), not as the OSError it was
                raise OSError(
                    f"writing {path.name} failed ({_one_line(err)}): is the disk full?"
                ) from err
            raise
        return path
    ts = _import_torchsnapshot()
    if path.exists() and not path.is_dir():
        raise CheckpointError(
            f"Cannot write checkpoint directory {path}: a file is in the way (the "
            "torchsnapshot backend writes directories; CKPT_BACKEND=torch writes files)."
        )
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    shutil.rmtree(tmp)
    ts.Snapshot.take(path=str(tmp), app_state={"trainer": ts.StateDict(**plain)})
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` and check its format marker.

    Args:
        path: the checkpoint file or directory.

    Returns:
        The decoded state dict.

    Raises:
        CheckpointError: if the path is missing, truncated, unreadable or not an
            rl_trainers trainer checkpoint; the message names the path.
    """
    backend = get_backend()
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"Checkpoint {path} does not exist.")
    if backend == "torch":
        if path.is_dir():
            raise CheckpointError(
                f"Checkpoint {path} is a directory; the torch backend reads one file "
                "(set CKPT_BACKEND=torchsnapshot to read a torchsnapshot directory)."
            )
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except MemoryError:
            raise
        except Exception as err:
            # A file that is not a zip archive (torch.save writes one) goes to torch's legacy
            # unpickler, which fails on text, YAML... with IndexError, KeyError, EOFError...
            if isinstance(err, pickle.UnpicklingError) and zipfile.is_zipfile(path):
                raise CheckpointError(
                    f"Checkpoint {path} cannot be loaded safely: it holds objects other than "
                    f"tensors and plain containers ({_one_line(err)})."
                ) from err
            raise UnreadableCheckpointError(
                f"Checkpoint {path} is truncated or corrupted, or is not a torch file "
                f"({_describe(err)})."
            ) from err
    else:
        ts = _import_torchsnapshot()
        if not path.is_dir():
            raise CheckpointError(
                f"Checkpoint {path} is a file; the torchsnapshot backend reads a directory "
                "(set CKPT_BACKEND=torch to read a torch file)."
            )
        holder = ts.StateDict()
        try:
            ts.Snapshot(path=str(path)).restore(app_state={"trainer": holder})
        except Exception as err:
            raise UnreadableCheckpointError(
                f"Checkpoint {path} is not a readable torchsnapshot directory "
                f"({type(err).__name__}: {err})."
            ) from err
        state = dict(holder)
    if not isinstance(state, dict) or state.get("format") != CKPT_FORMAT:
        found = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(
            f"Checkpoint {path} is not an rl_trainers trainer checkpoint: the format marker "
            f"'format': {CKPT_FORMAT!r} is missing (found {found})."
        )
    version = state.get("version")
    if not isinstance(version, int) or version > CKPT_VERSION:
        raise CheckpointError(
            f"Checkpoint {path} has format version {version!r}; this rl_trainers reads "
            f"versions up to {CKPT_VERSION}."
        )
    return decode(state)


# --------------------------------------------------------------------------- rotation
def _numbered_name(alias: Path, frames: int) -> str:
    suffix = alias.suffix if get_backend() == "torch" else ""
    return f"{alias.stem}_{int(frames)}{suffix}"


def list_checkpoints(alias: str | os.PathLike) -> list[tuple[int, Path]]:
    """The numbered checkpoints next to ``alias``, oldest first, as ``(frames, path)``.

    For ``alias = run/checkpoints/trainer.pt`` these are ``run/checkpoints/trainer_<frames>.pt``
    (``trainer_<frames>`` directories with ``CKPT_BACKEND=torchsnapshot``). Temporary files
    of an interrupted write start with a dot and are never listed.
    """
    alias = Path(alias)
    if not alias.parent.is_dir():
        return []
    suffix = alias.suffix if get_backend() == "torch" else ""
    prefix = f"{alias.stem}_"
    found = []
    for path in alias.parent.iterdir():
        name = path.name
        if not name.startswith(prefix) or (suffix and not name.endswith(suffix)):
            continue
        number = name[len(prefix) : len(name) - len(suffix)]
        if number.isdigit():
            found.append((int(number), path))
    return sorted(found)


def latest_checkpoint(alias: str | os.PathLike) -> Path | None:
    """The most recent checkpoint for ``alias``: the highest-numbered one, else ``alias``.

    Returns None when there is none (a fresh run directory).

    Raises:
        CheckpointError: when there is none for the backend ``CKPT_BACKEND`` names but the
            directory holds checkpoints of the other backend.
    """
    found = list_checkpoints(alias)
    if found:
        return found[-1][1]
    alias = Path(alias)
    if alias.exists():
        return alias
    _check_no_other_backend(alias)
    return None


def _check_no_other_backend(alias: Path) -> None:
    """Raise :class:`CheckpointError` if ``alias``'s directory holds checkpoints written with
    the other backend (so a run is not silently restarted because ``CKPT_BACKEND`` differs)."""
    if not alias.parent.is_dir():
        return
    backend = get_backend()
    other = "torchsnapshot" if backend == "torch" else "torch"
    prefix = f"{alias.stem}_"
    foreign = []
    for path in alias.parent.iterdir():
        name = path.name
        if name.startswith("."):
            continue
        if other == "torchsnapshot":
            is_other = path.is_dir() and name.startswith(prefix) and name[len(prefix) :].isdigit()
        else:
            suffix = alias.suffix
            number = name[len(prefix) : len(name) - len(suffix)]
            is_other = (
                path.is_file()
                and name.startswith(prefix)
                and name.endswith(suffix)
                and number.isdigit()
            )
        if is_other:
            foreign.append(name)
    if foreign:
        kind = "directories" if other == "torchsnapshot" else "files"
        raise CheckpointError(
            f"{alias.parent} holds checkpoints of the {other} backend ({kind} "
            f"{', '.join(sorted(foreign))}) but CKPT_BACKEND is {backend}: set "
            f"CKPT_BACKEND={other} to resume from them."
        )


def _describe(err: BaseException) -> str:
    """``Type: message`` on one line (``Type`` alone when there is no message)."""
    line = _one_line(err)
    name = type(err).__name__
    return name if line == name else f"{name}: {line}"


def _one_line(err: BaseException) -> str:
    """The informative line of ``err``'s message (torch's weights-only errors span many)."""
    text = str(err)
    marker = "WeightsUnpickler error:"
    if marker in text:  # torch's advice about weights_only=False is not for us
        text = text.split(marker, 1)[1]
        detail = next((line.strip() for line in text.splitlines() if line.strip()), "")
        return f"{marker} {detail}".strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _update_alias(target: Path, alias: Path) -> None:
    """Point ``alias`` at ``target`` atomically (a hard link, or a copy where links fail)."""
    if target.is_dir():
        return  # torchsnapshot directories: find the latest with latest_checkpoint()
    tmp = alias.with_name(f".{alias.name}.link.tmp")
    _remove(tmp)
    try:
        os.link(target, tmp)
    except OSError:
        shutil.copyfile(target, tmp)
    os.replace(tmp, alias)


def save_rotating(
    state: Mapping[str, Any], alias: str | os.PathLike, frames: int, keep: int
) -> Path:
    """Write ``state`` as ``<stem>_<frames><suffix>`` next to ``alias`` and keep the last ``keep``.

    Each file is written atomically, so a crash (even SIGKILL) during a write leaves the
    previous checkpoints intact; leftovers of such a write (dot-files ending in ``.tmp``)
    are removed by the next save. ``alias`` (e.g. ``checkpoints/trainer.pt``) is then
    pointed at the new file. Numbered checkpoints with more frames than ``frames`` belong
    to an abandoned continuation (the run was resumed from an older checkpoint) and are
    removed.

    Args:
        state: the trainer state.
        alias: the stable path of the latest checkpoint.
        frames: the frame count the state was taken at.
        keep: how many numbered checkpoints to keep (>= 1).

    Returns:
        The numbered checkpoint written.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1 checkpoint, got {keep}.")
    alias = Path(alias)
    alias.parent.mkdir(parents=True, exist_ok=True)
    for leftover in alias.parent.glob(f".{alias.stem}_*.tmp"):
        _remove(leftover)
    path = save_checkpoint(state, alias.parent / _numbered_name(alias, frames))
    _update_alias(path, alias)
    found = list_checkpoints(alias)
    for number, old in found:
        if number > frames:
            _remove(old)
    older = [old for number, old in found if number < frames]
    for old in older[: max(0, len(older) - (keep - 1))]:
        _remove(old)
    return path
