"""A logger writing to an MLflow tracking store (local sqlite, file store or server)."""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .common import (
    Logger,
    encode_gif,
    flatten_hparams,
    missing_extra,
    preserve_rng_state,
    to_python_scalar,
)

__all__ = ["MLFlowLogger", "resolve_tracking_uri", "default_run_name"]

_MAX_PARAM_LEN = 6000
_BATCH = 100


def resolve_tracking_uri(tracking_uri: str | os.PathLike) -> str:
    """Turns a tracking location into an MLflow URI.

    - a URI with a scheme (``sqlite:///...``, ``http://...``, ``file:///...``) is kept;
      for ``file:`` URIs the deprecated file store is allowed (``MLFLOW_ALLOW_FILE_STORE``);
    - a plain directory path becomes ``sqlite:///<path>/mlflow.db`` (MLflow 3 no longer
      accepts plain directories as stores by default).

    Args:
        tracking_uri: a URI or a local directory path.
    """
    uri = str(tracking_uri)
    if "://" in uri or uri.startswith("databricks"):
        if uri.startswith("file:"):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        return uri
    directory = Path(uri).expanduser().absolute()
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory / 'mlflow.db'}"


def default_run_name(exp_name: str) -> str:
    """A distinct run name: ``<exp_name>_<yymmdd-HHMMSS>_<6 hex digits>``.

    The suffix comes from :func:`uuid.uuid4` (``os.urandom``), not from the global
    ``random`` generator MLflow's own name picker draws from: the app seeds that generator
    before building the logger, which gave every run the same name.
    """
    return f"{exp_name}_{time.strftime('%y%m%d-%H%M%S')}_{uuid.uuid4().hex[:6]}"


class MLFlowLogger(Logger):
    """Wrapper for the MLflow logger: one MLflow run in experiment ``exp_name``.

    Scalars become metrics (with their step), hyper-parameters become params (flattened
    with ``.``), videos (GIF), histograms (JSON) and strings become artifacts.
    ``self.experiment`` is the ``MlflowClient``; ``self.run_id`` the run.

    The run is created on the first write (or first use of :attr:`run_id` or
    :meth:`state_dict`); hyper-parameters logged before that are kept and written to the
    run when it is created or attached. It is named ``run_name``, else
    :func:`default_run_name`. Creating the run leaves the global RNG streams untouched.

    Resuming: pass ``run_id`` (``logger.state_dict()["run_id"]``) or call
    :meth:`load_state_dict`; MLflow keeps every metric point it receives, so points logged
    after the checkpoint by the interrupted session stay in the history. MLflow params
    cannot change: a param the run already holds with another value keeps it, and the new
    value is set as the tag ``resumed.<name>``.

    Args:
        exp_name: the MLflow experiment name (created if missing).
        tracking_uri: a tracking URI (``sqlite:///...``, ``file:///...``, ``http://...``)
            or a local directory (then an sqlite store ``<dir>/mlflow.db`` is used, with
            artifacts in ``<dir>/artifacts``).
        tags: tags set on the run.
        run_id: an existing run to continue.
        video_fps: default frames per second of videos.
        **kwargs: ``run_name`` names the run; ``artifact_location`` sets where a new
            experiment stores artifacts.
    """

    def __init__(
        self,
        exp_name: str,
        tracking_uri: str,
        tags: dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
        video_fps: int = 30,
        **kwargs: Any,
    ) -> None:
        self._raw_uri = str(tracking_uri)
        self.tags = dict(tags or {})
        self._run_id = run_id
        self._run_active = False  # the run in _run_id was created or attached by this logger
        self._created_run = False  # ... and created by it (so it may be deleted again)
        self._wrote_data = False  # a metric or artifact went to the run
        self._params: dict[str, str] = {}  # every hyper-parameter given to this logger
        self._run_params: dict[str, str] = {}  # the params the run holds
        self.video_fps = video_fps
        self._run_name = kwargs.pop("run_name", None)
        self._artifact_location = kwargs.pop("artifact_location", None)
        if kwargs:
            raise TypeError(f"MLFlowLogger got unexpected keyword arguments {sorted(kwargs)}.")
        super().__init__(exp_name=exp_name, log_dir=self._raw_uri)

    def _create_experiment(self):
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as err:
            raise missing_extra("mlflow", "mlflow") from err
        self.tracking_uri = resolve_tracking_uri(self._raw_uri)
        client = MlflowClient(tracking_uri=self.tracking_uri)
        artifact_location = self._artifact_location
        if artifact_location is None and self.tracking_uri.startswith("sqlite:///"):
            root = Path(self.tracking_uri[len("sqlite:///") :]).parent
            artifact_location = (root / "artifacts" / self.exp_name).as_uri()
        found = client.get_experiment_by_name(self.exp_name)
        if found is not None:
            self.experiment_id = found.experiment_id
        else:
            self.experiment_id = client.create_experiment(
                self.exp_name, artifact_location=artifact_location
            )
        return client

    @property
    def run_id(self) -> str:
        """The MLflow run id (creates the run if nothing was written yet)."""
        return self._ensure_run()

    def _ensure_run(self) -> str:
        """Creates the run, or attaches to ``_run_id``, once; writes the pending params."""
        if self._run_active:
            return self._run_id
        client = self.experiment
        tags = {str(k): str(v) for k, v in self.tags.items()}
        with preserve_rng_state():
            if self._run_id is None:
                run_name = self._run_name or default_run_name(self.exp_name)
                run = client.create_run(self.experiment_id, tags=tags, run_name=run_name)
                self._run_id = run.info.run_id
                self._created_run = True
                self._run_params = {}
            else:
                client.update_run(self._run_id, status="RUNNING")
                for key, value in tags.items():
                    client.set_tag(self._run_id, key, value)
                self._run_params = dict(client.get_run(self._run_id).data.params)
            self._run_active = True
            self._write_params(self._params)
        return self._run_id

    def _write_params(self, params: Mapping[str, str]) -> None:
        """Logs the params the run lacks; changed values become ``resumed.<name>`` tags."""
        from mlflow.entities import Param, RunTag

        new = [Param(k, v) for k, v in params.items() if k not in self._run_params]
        changed = [
            RunTag(f"resumed.{k}", v)
            for k, v in params.items()
            if k in self._run_params and self._run_params[k] != v
        ]
        for start in range(0, len(new), _BATCH):
            self.experiment.log_batch(self._run_id, params=new[start : start + _BATCH])
        for start in range(0, len(changed), _BATCH):
            self.experiment.log_batch(self._run_id, tags=changed[start : start + _BATCH])
        self._run_params.update((p.key, p.value) for p in new)

    def output_dirs(self) -> list[str]:
        """A local store's directory: a ``file:`` store's root, an sqlite file's folder."""
        uri = getattr(self, "tracking_uri", None)
        if uri is None or not self._run_active:
            return []
        if uri.startswith("sqlite:///"):
            return [str(Path(uri[len("sqlite:///") :]).parent)]
        if uri.startswith("file:"):
            from urllib.parse import unquote, urlsplit

            return [unquote(urlsplit(uri).path)]
        return []

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs a metric point (step 0 when ``None``)."""
        self.experiment.log_metric(
            self.run_id, name, float(to_python_scalar(value)), step=int(step or 0)
        )
        self._wrote_data = True
        self._record_step(name, step)

    def _log_metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        """Logs several metrics at one step with one store call (see ``Logger.log_metrics``)."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        points = [
            Metric(name, float(to_python_scalar(v)), now, int(step or 0))
            for name, v in metrics.items()
        ]
        run_id = self.run_id
        for start in range(0, len(points), _BATCH):
            self.experiment.log_batch(run_id, metrics=points[start : start + _BATCH])
        self._wrote_data = True
        for name in metrics:
            self._record_step(name, step)

    def log_hparams(self, cfg: Mapping[str, Any] | Any) -> None:
        """Logs the flattened hyper-parameters as run params (values as strings).

        Before the run exists they are kept, and written when it is created or attached.
        """
        params = {key: str(value)[:_MAX_PARAM_LEN] for key, value in flatten_hparams(cfg).items()}
        self._params.update(params)
        if self._run_active:
            self._write_params(params)

    def _log_file(self, data: bytes, file_name: str, artifact_path: str) -> None:
        run_id = self.run_id
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, file_name)
            path.write_bytes(data)
            self.experiment.log_artifact(run_id, str(path), artifact_path=artifact_path)
        self._wrote_data = True

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs) -> None:
        """Logs ``videos/<name>_<step>.gif`` as an artifact; ``fps`` may be overridden."""
        fps = kwargs.pop("fps", self.video_fps)
        folder, _, base = name.rpartition("/")
        artifact_path = "/".join(p for p in ("videos", folder) if p)
        self._log_file(encode_gif(video, fps=fps), f"{base}_{int(step or 0)}.gif", artifact_path)
        self._record_step(name, step)

    def log_histogram(
        self, name: str, data: Sequence | Tensor, step: int | None = None, **kwargs
    ) -> None:
        """Logs ``histograms/<name>_<step>.json`` with bin ``edges`` and ``counts``.

        ``bins`` (default 64) is a number of bins or a numpy rule such as ``"auto"`` (the
        values TensorBoard's ``bins`` also takes, e.g. ``"fd"``).
        """
        values = torch.as_tensor(data).detach().cpu().flatten().double().numpy()
        bins = kwargs.pop("bins", 64)
        if bins == "tensorflow":  # TensorBoard's own rule; numpy has no such name
            bins = 64
        counts, edges = np.histogram(values, bins=bins if isinstance(bins, str) else int(bins))
        payload = json.dumps({"edges": edges.tolist(), "counts": counts.tolist()})
        folder, _, base = name.rpartition("/")
        artifact_path = "/".join(p for p in ("histograms", folder) if p)
        self._log_file(payload.encode(), f"{base}_{int(step or 0)}.json", artifact_path)
        self._record_step(name, step)

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        """Logs ``texts/<name>_<step>.txt`` as an artifact."""
        self.experiment.log_text(self.run_id, str(value), f"texts/{name}_{int(step or 0)}.txt")
        self._wrote_data = True
        self._record_step(name, step)

    def close(self) -> None:
        """Marks the run as finished (a logger that was given nothing creates no run)."""
        if not self._closed and (self._run_active or self._params):
            self.experiment.set_terminated(self._ensure_run())
        super().close()

    def state_dict(self) -> dict[str, Any]:
        """The base state plus ``run_id``, ``experiment_id`` and ``tracking_uri``."""
        state = super().state_dict()
        state.update(
            run_id=self.run_id, experiment_id=self.experiment_id, tracking_uri=self.tracking_uri
        )
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores counters and continues the saved run.

        Called before any write, as a resumed training run does, it creates no other run;
        the hyper-parameters logged so far are written to the saved run. A run this logger
        already created is deleted if it received no metric or artifact, else finished.
        """
        super().load_state_dict(state_dict)
        saved = state_dict.get("run_id")
        if saved is None or saved == self._run_id:
            return
        if self._run_active:
            if self._created_run and not self._wrote_data:
                self.experiment.delete_run(self._run_id)
            else:
                self.experiment.set_terminated(self._run_id)
        self._run_id = saved
        self._run_active = self._created_run = self._wrote_data = False
        self._closed = False
        self._ensure_run()
