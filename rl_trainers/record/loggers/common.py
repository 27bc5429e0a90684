"""The :class:`Logger` template and helpers shared by every logging backend."""

from __future__ import annotations

import abc
import argparse
import contextlib
import io
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from tensordict import TensorDictBase
from torch import Tensor

__all__ = ["Logger", "flatten_hparams", "video_to_frames", "encode_gif", "preserve_rng_state"]

_HPARAM_SCALARS = (bool, int, float, str)


def _to_container(cfg: Any) -> Any:
    """Turns an OmegaConf config into plain Python containers; leaves anything else alone."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a core dependency
        return cfg
    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


def hparams_to_dict(cfg: Mapping[str, Any] | Any) -> dict[str, Any]:
    """Returns ``cfg`` (a mapping, an OmegaConf ``DictConfig`` or an ``argparse.Namespace``)
    as a nested plain dict.

    Args:
        cfg: the hyper-parameters.

    Raises:
        TypeError: if ``cfg`` is none of these.
    """
    if isinstance(cfg, argparse.Namespace):  # torchrl's helper scripts build their cfg so
        cfg = vars(cfg)
    container = _to_container(cfg)
    if not isinstance(container, Mapping):
        raise TypeError(
            "log_hparams expects a dict, an OmegaConf DictConfig or an argparse.Namespace, "
            f"got {type(cfg).__name__}."
        )
    return dict(container)


def _iter_flat(prefix: str, value: Any, sep: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        if not value and prefix:
            yield prefix, "{}"
        for key, sub in value.items():
            name = f"{prefix}{sep}{key}" if prefix else str(key)
            yield from _iter_flat(name, sub, sep)
        return
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    if value is None or not isinstance(value, _HPARAM_SCALARS):
        value = str(value)
    yield prefix, value


def flatten_hparams(cfg: Mapping[str, Any] | Any, sep: str = ".") -> dict[str, Any]:
    """Flattens nested hyper-parameters into ``{"a.b.c": value}`` with scalar values.

    Values that are not bool/int/float/str (lists, None, objects) become their ``str``.

    Args:
        cfg: a dict or an OmegaConf ``DictConfig``, possibly nested.
        sep: the separator placed between nested keys.

    Examples:
        >>> flatten_hparams({"optim": {"lr": 0.1}, "seed": 0})
        {'optim.lr': 0.1, 'seed': 0}
    """
    return dict(_iter_flat("", hparams_to_dict(cfg), sep))


def to_python_scalar(value: Any) -> float | int | bool:
    """Converts a one-element tensor/array or a Python number to a Python scalar."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"log_scalar expects a single value, got a tensor of shape {tuple(value.shape)}."
            )
        return value.item()
    if isinstance(value, np.ndarray | np.generic):
        if np.size(value) != 1:
            raise ValueError(
                f"log_scalar expects a single value, got an array of shape {np.shape(value)}."
            )
        return np.asarray(value).item()
    if isinstance(value, bool | int | float):
        return value
    raise TypeError(f"log_scalar expects a number or a one-element tensor, got {type(value)}.")


def _tile(videos: Tensor) -> Tensor:
    """Tiles ``[B, T, C, H, W]`` into one ``[T, C, rows*H, cols*W]`` video (a near-square grid)."""
    batch, time, channels, height, width = videos.shape
    cols = math.ceil(math.sqrt(batch))
    rows = math.ceil(batch / cols)
    pad = rows * cols - batch
    if pad:
        videos = torch.cat([videos, videos.new_zeros(pad, time, channels, height, width)])
    grid = videos.reshape(rows, cols, time, channels, height, width)
    grid = grid.permute(2, 3, 0, 4, 1, 5)  # T, C, rows, H, cols, W
    return grid.reshape(time, channels, rows * height, cols * width)


def video_to_uint8(video: Tensor | np.ndarray) -> Tensor:
    """Validates a video and returns it as a uint8 ``[T, C, H, W]`` tensor with C in {1, 3, 4}.

    Args:
        video: ``[T, C, H, W]`` or ``[B, T, C, H, W]``; uint8, or float in ``[0, 1]``.
            Batched videos are tiled into a grid.

    Raises:
        ValueError: for any other number of dimensions or channels.
    """
    video = torch.as_tensor(video).detach().cpu()
    if video.ndim == 5:
        video = _tile(video)
    if video.ndim != 4:
        raise ValueError(
            "A video must be [T, C, H, W] or [B, T, C, H, W], "
            f"got a tensor of shape {tuple(video.shape)}."
        )
    if video.shape[1] not in (1, 3, 4):
        raise ValueError(
            f"A video must have 1, 3 or 4 channels in dim -3, got shape {tuple(video.shape)}."
        )
    if video.dtype != torch.uint8:
        if video.is_floating_point():
            video = (video.clamp(0, 1) * 255).round()
        video = video.clamp(0, 255).to(torch.uint8)
    return video


def video_to_frames(video: Tensor | np.ndarray) -> np.ndarray:
    """Returns a video as a uint8 numpy array ``[T, H, W, 3]`` ready for an encoder.

    Args:
        video: see :func:`video_to_uint8`.
    """
    frames = video_to_uint8(video)
    if frames.shape[1] == 1:
        frames = frames.expand(-1, 3, -1, -1)
    elif frames.shape[1] == 4:
        frames = frames[:, :3]
    return frames.permute(0, 2, 3, 1).contiguous().numpy()


def encode_gif(video: Tensor | np.ndarray, fps: float = 30) -> bytes:
    """Encodes a video into an animated GIF (Pillow, no ffmpeg needed).

    Args:
        video: see :func:`video_to_uint8`.
        fps: frames per second.
    """
    from PIL import Image

    frames = video_to_frames(video)
    # Pillow's default palette search (median cut) takes ~25 ms per 400x600 frame, the fast
    # octree ~5 ms, with no visible difference on rendered frames
    fast = Image.Quantize.FASTOCTREE
    images = [Image.fromarray(frame).quantize(256, method=fast) for frame in frames]
    buffer = io.BytesIO()
    duration_ms = max(int(round(1000 / max(fps, 1e-3))), 1)
    images[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=duration_ms,
        loop=0,
    )
    return buffer.getvalue()


@contextlib.contextmanager
def preserve_rng_state() -> Iterator[None]:
    """Restores the global ``random``, numpy and torch RNG states on exit.

    Backends may draw from the global generators (MLflow picks its random run names with
    ``random``); creating a logger inside this context leaves a seeded run's streams as they
    were, whatever the logger. CUDA generators are saved only if CUDA is initialised.
    """
    py_state = random.getstate()
    np_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_rng_state(torch_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


def missing_extra(package: str, extra: str) -> ImportError:
    """Builds the ImportError raised when an optional backend is not installed."""
    return ImportError(
        f"This logger needs the '{package}' package, which is not installed. "
        f'Install it with: pip install "rl_trainers[{extra}]"'
    )


class Logger(abc.ABC):
    """A template for loggers.

    A logger writes scalars, hyper-parameters, videos, histograms and strings of one
    experiment to a backend. Subclasses create their backend object in
    :meth:`_create_experiment` (available afterwards as ``self.experiment``).

    Loggers are context managers: ``with CSVLogger("run") as logger: ...`` closes the
    logger on exit. :meth:`state_dict` / :meth:`load_state_dict` carry what a resumed run
    needs to continue the same record (see each backend for what it restores).

    Args:
        exp_name: the experiment name.
        log_dir: where the backend writes (its meaning depends on the backend).
    """

    #: Create the backend object on first use of :attr:`experiment` instead of in ``__init__``.
    lazy_experiment: ClassVar[bool] = False

    def __init__(self, exp_name: str, log_dir: str | None) -> None:
        self.exp_name = exp_name
        self.log_dir = log_dir
        self._closed = False
        self._last_steps: dict[str, int] = {}
        self._experiment: Any = None
        if not self.lazy_experiment:
            self._experiment = self._open_experiment()

    @abc.abstractmethod
    def _create_experiment(self) -> Any:
        """Creates and returns the backend object."""

    def _open_experiment(self) -> Any:
        """Calls :meth:`_create_experiment` without touching the global RNG streams."""
        with preserve_rng_state():
            return self._create_experiment()

    @property
    def experiment(self) -> Any:
        """The backend object, created on first access by lazy loggers."""
        if self._experiment is None:
            self._experiment = self._open_experiment()
        return self._experiment

    @experiment.setter
    def experiment(self, value: Any) -> None:
        self._experiment = value

    @abc.abstractmethod
    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs one scalar value.

        Args:
            name: the series name; ``/`` groups series (``"train/loss"``).
            value: a number or a one-element tensor.
            step: the x-axis value; backends choose a default when ``None``.
        """

    @abc.abstractmethod
    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        """Logs hyper-parameters from a dict or an OmegaConf ``DictConfig``.

        Nested keys are flattened with ``.`` where the backend needs flat keys.
        """

    @abc.abstractmethod
    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        """Logs a video.

        Args:
            name: the video tag.
            video: uint8 (or float in ``[0, 1]``) ``[T, C, H, W]`` or ``[B, T, C, H, W]``;
                batched videos are tiled into a grid.
            step: the x-axis value.
            **kwargs: backend options, e.g. ``fps``.
        """

    @abc.abstractmethod
    def log_histogram(self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs):
        """Logs the distribution of ``data``."""

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        """Logs a string (every bundled backend does; torchrl does not require it of a
        custom logger, so the base class only raises)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_str.")

    def log_metrics(
        self,
        metrics: Mapping[str, Any] | TensorDictBase,
        step: int | None = None,
        *,
        keys_sep: str = "/",
    ) -> dict[str, Any]:
        """Logs several scalars at the same step.

        Args:
            metrics: a mapping (or a TensorDict, whose nested keys are joined with
                ``keys_sep``) from name to number or one-element tensor.
            step: the step shared by all of them.
            keys_sep: the separator of flattened TensorDict keys.

        Returns:
            The logged ``{name: value}`` with tensors turned into Python numbers.
        """
        if isinstance(metrics, TensorDictBase):
            metrics = metrics.flatten_keys(keys_sep).to_dict()
        out = {name: self._metric_value(value) for name, value in metrics.items()}
        self._log_metrics(out, step)
        return out

    def _metric_value(self, value: Any) -> Any:
        """What :meth:`log_metrics` writes for ``value``: a Python number here; backends
        that store other values (W&B) override it."""
        return to_python_scalar(value)

    def _log_metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        """Writes converted metrics; backends with a batch write override it."""
        for name, value in metrics.items():
            self.log_scalar(name, value, step=step)

    def _record_step(self, name: str, step: int | None) -> None:
        if step is not None:
            step = int(step)
            previous = self._last_steps.get(name)
            if previous is None or step > previous:
                self._last_steps[name] = step

    @property
    def last_step(self) -> int | None:
        """The largest step logged so far for any name (``None`` before any step)."""
        return max(self._last_steps.values(), default=None)

    def output_dirs(self) -> list[str]:
        """The local directories the backend is writing to now (none before it started).

        :class:`~rl_trainers.record.loggers.guard.GuardedLogger` checks they are still
        directories: a backend writing through open files into a directory that was removed
        loses its records without an error.
        """
        return []

    def flush(self) -> None:
        """Writes buffered records to the backend (calls ``experiment.flush()`` if it exists)."""
        flush = getattr(self._experiment, "flush", None)  # a backend not created yet has nothing
        if callable(flush):
            flush()

    def close(self) -> None:
        """Flushes and releases the backend. Calling it twice is harmless."""
        self._closed = True

    def __enter__(self) -> Logger:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def state_dict(self) -> dict[str, Any]:
        """Returns what a resumed run needs to continue this record.

        The base class stores the experiment name, the log directory and the last step
        logged for each name; backends add their run identifiers.
        """
        self.flush()
        return {
            "exp_name": self.exp_name,
            "log_dir": self.log_dir,
            "last_steps": dict(self._last_steps),
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores the counters saved by :meth:`state_dict`."""
        self._last_steps = {k: int(v) for k, v in state_dict.get("last_steps", {}).items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(exp_name={self.exp_name!r}, log_dir={self.log_dir!r})"
