"""A logger writing TensorBoard event files through ``torch.utils.tensorboard``."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor

from .common import (
    Logger,
    encode_gif,
    flatten_hparams,
    missing_extra,
    to_python_scalar,
    video_to_uint8,
)

__all__ = ["TensorboardLogger"]


def _after_existing_event_files(run_dir: str) -> None:
    """Waits, when ``run_dir`` holds an event file of the current second, for the next one.

    TensorBoard reads a directory's event files in name order, and a name is
    ``events.out.tfevents.<seconds>.<host>.<pid>.<counter>``: files of one second sort by
    pid and counter as text (counter 10 before 9), so a resumed session's file, whose purge
    must come after the events it hides, could be read first. A file of a later second
    sorts after them all; the wait (under a second) only happens when a writer reopens the
    directory within the second its last file was made."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return
    prefix = "events.out.tfevents."
    stamps = [name[len(prefix) :].split(".", 1)[0] for name in names if name.startswith(prefix)]
    seconds = [int(stamp) for stamp in stamps if stamp.isdigit()]
    if seconds:
        wait = max(seconds) + 1 - time.time()
        if 0 < wait <= 1:
            time.sleep(wait)


class TensorboardLogger(Logger):
    """Wrapper for the TensorBoard logger (events under ``<log_dir>/<exp_name>``).

    Videos are encoded as animated GIFs with Pillow, so no moviepy is needed.

    To resume a run, build the logger on the same ``log_dir``/``exp_name`` and either pass
    ``purge_step`` (the first step to be written again) or call :meth:`load_state_dict`
    with the state saved in the checkpoint: TensorBoard then hides the events of the
    previous session whose step is at or past the purge step.

    Args:
        exp_name: the experiment name (a sub-directory of ``log_dir``).
        log_dir: the root directory; defaults to ``"tb_logs"``.
        purge_step: see above; ``None`` purges nothing.
        video_fps: default frames per second of videos.
        **kwargs: forwarded to ``SummaryWriter`` (e.g. ``flush_secs``, ``max_queue``).
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str = "tb_logs",
        *,
        purge_step: int | None = None,
        video_fps: int = 30,
        **kwargs: Any,
    ) -> None:
        self._purge_step = purge_step
        self._writer_kwargs = kwargs
        self.video_fps = video_fps
        super().__init__(exp_name=exp_name, log_dir=str(log_dir))

    def _create_experiment(self):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # tensorboard missing
            raise missing_extra("tensorboard", "tensorboard") from err
        run_dir = os.path.join(self.log_dir, self.exp_name)
        _after_existing_event_files(run_dir)
        return SummaryWriter(
            log_dir=run_dir,
            purge_step=self._purge_step,
            **self._writer_kwargs,
        )

    @property
    def run_dir(self) -> str:
        """The directory holding the event files."""
        return self.experiment.log_dir

    def output_dirs(self) -> list[str]:
        """The directory of the event files."""
        return [] if self._experiment is None else [self._experiment.log_dir]

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Adds a scalar event."""
        self.experiment.add_scalar(name, to_python_scalar(value), global_step=step)
        self._record_step(name, step)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        """Adds a video (an animated GIF image summary, as ``SummaryWriter.add_video``).

        Args:
            name: the tag.
            video: ``[T, C, H, W]`` or ``[B, T, C, H, W]``, uint8 or float in ``[0, 1]``.
            step: the global step.
            **kwargs: ``fps`` overrides the default frame rate.
        """
        from tensorboard.compat.proto.summary_pb2 import Summary

        fps = kwargs.pop("fps", self.video_fps)
        frames = video_to_uint8(video)
        _, _, height, width = frames.shape
        image = Summary.Image(
            height=height,
            width=width,
            colorspace=3,  # the GIF encoder writes RGB frames
            encoded_image_string=encode_gif(frames, fps=fps),
        )
        summary = Summary(value=[Summary.Value(tag=name, image=image)])
        self.experiment._get_file_writer().add_summary(summary, step)
        self._record_step(name, step)

    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        """Writes the flattened hyper-parameters to the HParams plugin of this run."""
        from torch.utils.tensorboard.summary import hparams

        params = flatten_hparams(cfg)
        experiment, session_start, session_end = hparams(params, {})
        writer = self.experiment._get_file_writer()
        for summary in (experiment, session_start, session_end):
            writer.add_summary(summary)

    def log_histogram(
        self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs
    ) -> None:
        """Adds a histogram; ``kwargs`` go to ``SummaryWriter.add_histogram`` (e.g. ``bins``)."""
        self.experiment.add_histogram(name, data, global_step=step, **kwargs)
        self._record_step(name, step)

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        """Adds a text event."""
        self.experiment.add_text(name, str(value), global_step=step)
        self._record_step(name, step)

    def flush(self) -> None:
        """Writes pending events to disk."""
        self.experiment.flush()

    def close(self) -> None:
        """Flushes and closes the event file."""
        if not self._closed:
            self.experiment.close()
        super().close()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores the step counters and purges events logged after the saved state.

        The writer is reopened with ``purge_step = last_step + 1`` so that events of the
        interrupted session past the checkpoint are hidden by TensorBoard.
        """
        super().load_state_dict(state_dict)
        last = self.last_step
        self.experiment.close()
        self._purge_step = None if last is None else last + 1
        self.experiment = self._open_experiment()
        self._closed = False
