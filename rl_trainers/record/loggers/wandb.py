"""A logger writing to Weights & Biases (online, or offline with no account needed)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .common import Logger, encode_gif, hparams_to_dict, missing_extra, to_python_scalar

__all__ = ["WandbLogger"]

# Quiet, prompt-free defaults; a user's own environment settings win.
_OFFLINE_ENV = {
    "WANDB_SILENT": "true",
    "WANDB_CONSOLE": "off",
    "WANDB_DISABLE_GIT": "true",
    "WANDB_DISABLE_CODE": "true",
}


class WandbLogger(Logger):
    """Wrapper for the wandb logger.

    With ``offline=True`` the run is written under ``<save_dir>/wandb/offline-run-*`` and
    never contacts a server nor asks to log in; upload it later with ``wandb sync``.
    Videos are encoded as GIFs with Pillow (no moviepy needed).

    The W&B run is started on the first write (or first use of :attr:`experiment`,
    :attr:`run_dir` or :meth:`state_dict`); hyper-parameters logged before that go into its
    config when it starts. ``wandb.init`` draws no number from the global RNGs, and is
    called with their states preserved.

    To resume a run, pass the ``id`` of the previous run (``logger.state_dict()["id"]``),
    or call :meth:`load_state_dict`, which re-attaches to the saved run if it differs.
    Called before any write (as a resumed training run does), no other run is started; the
    config logged so far goes to the resumed run. An offline run this logger had already
    started with a fresh id and no data is finished and its directory removed.

    Args:
        exp_name: the run name.
        offline: run in offline mode.
        save_dir: the directory wandb writes into (``log_dir`` is accepted as an alias).
        id: the run id, to resume an existing run.
        project: the W&B project; defaults to ``"rl_trainers"``.
        video_fps: default frames per second of videos.
        **kwargs: forwarded to ``wandb.init`` (e.g. ``entity``, ``group``, ``tags``,
            ``config``).
    """

    lazy_experiment = True

    def __init__(
        self,
        exp_name: str,
        offline: bool = False,
        save_dir: str | None = None,
        id: str | None = None,  # noqa: A002 - torchrl's name
        project: str | None = None,
        *,
        video_fps: int = 32,
        **kwargs: Any,
    ) -> None:
        log_dir = kwargs.pop("log_dir", None)
        if save_dir is None:
            save_dir = log_dir
        self.offline = offline
        self.save_dir = save_dir
        self.id = id
        self.project = project if project is not None else "rl_trainers"
        self.video_fps = video_fps
        self._init_kwargs = kwargs
        self._config: dict[str, Any] = {}  # every hyper-parameter given to this logger
        self._fresh_id = False  # the started run got its id from wandb (not given)
        self._wrote_data = False  # something was logged to the started run
        self._open_failed = False  # the last attempt to start the run raised
        try:
            import wandb  # noqa: F401 - fail now, not at the first write
        except ImportError as err:
            raise missing_extra("wandb", "wandb") from err
        super().__init__(exp_name=exp_name, log_dir=save_dir)

    def _create_experiment(self):
        self._open_failed = True  # until wandb.init returns
        try:
            import wandb
        except ImportError as err:
            raise missing_extra("wandb", "wandb") from err
        if self.offline:
            for key, value in _OFFLINE_ENV.items():
                os.environ.setdefault(key, value)
        kwargs = dict(self._init_kwargs)
        if self.save_dir is not None:
            os.makedirs(self.save_dir, exist_ok=True)
            kwargs.setdefault("dir", self.save_dir)
        if self.id is not None:
            kwargs.setdefault("resume", "allow")
        kwargs.setdefault("reinit", "create_new")
        if self.offline:
            kwargs["mode"] = "offline"
        run = wandb.init(project=self.project, name=self.exp_name, id=self.id, **kwargs)
        self._open_failed = False
        self._fresh_id = self.id is None
        self._wrote_data = False
        self.id = run.id
        if self._config:
            run.config.update(self._config, allow_val_change=True)
        return run

    @property
    def run_dir(self) -> str:
        """The local directory of the run (``<save_dir>/wandb/offline-run-<time>-<id>`` offline)."""
        return str(Path(self.experiment.dir).parent)

    def output_dirs(self) -> list[str]:
        """The local directory of the started run (the W&B service writes its files)."""
        if self._experiment is None:
            return []
        return [str(Path(self._experiment.dir).parent)]

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs ``{name: value}``; W&B ignores steps lower than one already logged.

        A tensor or array of several values (torchrl's SAC, TD3 and DDPG scripts log the
        returns of the episodes a batch finished this way) and ``None`` (their
        ``time/speed`` before tqdm has measured a rate) go to W&B as torchrl's logger sends
        them: W&B keeps up to 32 values as a list, more as a histogram, and ``None`` as null.
        """
        self._log({name: _wandb_value(value)}, step)
        self._record_step(name, step)

    def _metric_value(self, value: Any) -> Any:
        """As :meth:`log_scalar`: several values and ``None`` go to W&B as they are."""
        return _wandb_value(value)

    def _log_metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        """Logs several scalars in one W&B history row (see ``Logger.log_metrics``)."""
        self._log(metrics, step)
        for name in metrics:
            self._record_step(name, step)

    def _log(self, data: dict[str, Any], step: int | None) -> None:
        if step is None:
            self.experiment.log(data)
        else:
            self.experiment.log(data, step=int(step))
        self._wrote_data = True

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        """Logs a video as an animated GIF; ``fps`` overrides the default frame rate.

        torchrl's ``format`` keyword (``"mp4"`` needs moviepy) is accepted and ignored: the
        video is always encoded as a GIF with Pillow. Other keywords go to ``wandb.Video``
        (e.g. ``caption``).
        """
        import wandb

        fps = kwargs.pop("fps", self.video_fps)
        kwargs.pop("format", None)
        media_dir = self.save_dir if self.save_dir is not None else tempfile.gettempdir()
        os.makedirs(media_dir, exist_ok=True)  # the run (which creates save_dir) may not exist yet
        with tempfile.NamedTemporaryFile(suffix=".gif", dir=media_dir, delete=False) as f:
            f.write(encode_gif(video, fps=fps))
            path = f.name
        try:
            # the GIF carries its frame rate; wandb.Video's fps only applies to arrays
            self._log({name: wandb.Video(path, format="gif", **kwargs)}, step)
        finally:
            os.unlink(path)
        self._record_step(name, step)

    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        """Updates the run config with the (nested, resolved) hyper-parameters.

        Before the run is started they are kept and become its config when it starts.
        """
        config = hparams_to_dict(cfg)
        self._config.update(config)
        if self._experiment is not None:
            self._experiment.config.update(config, allow_val_change=True)

    def log_histogram(
        self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs
    ) -> None:
        """Logs a ``wandb.Histogram``; ``bins`` (default 64) sets the number of bins."""
        import wandb

        values = torch.as_tensor(data).detach().cpu().flatten().double().numpy()
        bins = kwargs.pop("bins", 64)
        self._log({name: wandb.Histogram(np.asarray(values), num_bins=bins)}, step)
        self._record_step(name, step)

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        """Logs a string value."""
        self._log({name: str(value)}, step)
        self._record_step(name, step)

    def close(self) -> None:
        """Finishes the run (writes the summary); a logger given nothing starts no run, nor
        does one whose run failed to start (trying again would hide that first error)."""
        started = self._experiment is not None
        if not self._closed and (started or (self._config and not self._open_failed)):
            self.experiment.finish()
        super().close()

    def state_dict(self) -> dict[str, Any]:
        """The base state plus the run ``id`` and ``project`` (starts the run if needed)."""
        state = super().state_dict()
        if self._experiment is None:
            self.experiment = self._open_experiment()
        state.update(id=self.id, project=self.project)
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores counters and, if the saved run differs, resumes that run instead.

        The saved run is started again (``resume="allow"``) on the next write.
        """
        super().load_state_dict(state_dict)
        saved_id = state_dict.get("id")
        if saved_id is None or saved_id == self.id:
            return
        run = self._experiment
        if run is not None:
            junk = self.offline and self._fresh_id and not self._wrote_data
            run_dir = Path(run.dir).parent
            run.finish()
            if junk:
                _remove_offline_run(run_dir)
            self._experiment = None
        self.id = saved_id
        self.project = state_dict.get("project", self.project)
        self._closed = False


def _remove_offline_run(run_dir: Path) -> None:
    """Deletes an offline run directory, and the ``latest-run`` link if it points there."""
    shutil.rmtree(run_dir, ignore_errors=True)
    latest = run_dir.parent / "latest-run"
    if latest.is_symlink() and not latest.exists():
        latest.unlink()


def _wandb_value(value: Any) -> Any:
    """One number as a Python scalar; several as a numpy array, which W&B stores itself."""
    if value is None:
        return None
    if isinstance(value, Tensor) and value.numel() != 1:
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.size != 1:
        return value
    return to_python_scalar(value)
