"""Loggers: each backend's output is read back through that backend's own reader."""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import random
import re
import struct
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from rl_trainers.record.loggers import (
    LOGGER_TYPES,
    CSVLogger,
    Logger,
    flatten_hparams,
    generate_exp_name,
    get_logger,
)
from rl_trainers.record.loggers import csv as csv_module
from rl_trainers.record.loggers.common import encode_gif, video_to_uint8


def _video(t=4, c=3, h=8, w=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (t, c, h, w), dtype=torch.uint8, generator=g)


def _rows(path):
    with open(path, newline="") as f:
        return [row for row in csv.reader(f) if row]


# --------------------------------------------------------------------------- helpers
def test_flatten_hparams_dict_and_dictconfig():
    cfg = {"optim": {"lr": 3e-4, "betas": [0.9, 0.99]}, "seed": 1, "env": {"name": "x"}}
    expected = {"optim.lr": 3e-4, "optim.betas": "[0.9, 0.99]", "seed": 1, "env.name": "x"}
    assert flatten_hparams(cfg) == expected
    dc = OmegaConf.create({"a": {"b": 2, "c": "${a.b}"}, "d": None})
    assert flatten_hparams(dc) == {"a.b": 2, "a.c": 2, "d": "None"}
    with pytest.raises(
        TypeError, match="a dict, an OmegaConf DictConfig or an argparse.Namespace, got list"
    ):
        flatten_hparams([1, 2])


def test_video_to_uint8_float_and_batched_grid():
    video = torch.zeros(2, 1, 2, 2)
    video[1] = 1.0
    out = video_to_uint8(video)
    assert out.dtype == torch.uint8 and out[0].max() == 0 and out[1].min() == 255
    # 3 videos of 2x2 tile into a 2x2 grid (4x4), the 4th cell black.
    batch = torch.stack([torch.full((2, 3, 2, 2), v, dtype=torch.uint8) for v in (10, 20, 30)])
    grid = video_to_uint8(batch)
    assert grid.shape == (2, 3, 4, 4)
    assert grid[0, 0, 0, 0] == 10 and grid[0, 0, 0, 2] == 20
    assert grid[0, 0, 2, 0] == 30 and grid[0, 0, 2, 2] == 0
    with pytest.raises(ValueError, match=r"\[T, C, H, W\]"):
        video_to_uint8(torch.zeros(3, 4, 4))
    with pytest.raises(ValueError, match="channels"):
        video_to_uint8(torch.zeros(2, 5, 4, 4))


def test_encode_gif_round_trip():
    from PIL import Image, ImageSequence

    video = _video(t=3, h=5, w=7)
    image = Image.open(io.BytesIO(encode_gif(video, fps=10)))
    frames = list(ImageSequence.Iterator(image))
    assert len(frames) == 3 and image.size == (7, 5)


def test_logger_is_abstract():
    with pytest.raises(TypeError):
        Logger("x", "y")


def test_hparams_from_an_argparse_namespace(tmp_path):
    """torchrl's helper scripts configure runs with an ``argparse.Namespace``."""
    import argparse

    with CSVLogger("exp", log_dir=str(tmp_path)) as logger:
        logger.log_hparams(argparse.Namespace(lr=0.1, num_cells=[64, 64], seed=None))
    saved = yaml.safe_load((tmp_path / "exp" / "hparams.yaml").read_text())
    assert saved == {"lr": 0.1, "num_cells": [64, 64], "seed": None}
    assert flatten_hparams(argparse.Namespace(lr=0.1)) == {"lr": 0.1}


def test_custom_logger_with_torchrl_abstract_methods():
    """A subclass defining torchrl's abstract set (no ``log_str``) can be created, and
    ``log_metrics`` takes torchrl's TensorDict / ``keys_sep`` form and returns the values."""
    from tensordict import TensorDict

    class ListLogger(Logger):
        def _create_experiment(self):
            return []

        def log_scalar(self, name, value, step=None):
            self.experiment.append((name, value, step))

        def log_video(self, name, video, step=None, **kwargs):
            pass

        def log_hparams(self, cfg):
            pass

        def __repr__(self):
            return "ListLogger"

        def log_histogram(self, name, data, **kwargs):
            pass

    logger = ListLogger("exp", None)
    td = TensorDict({"train": {"loss": torch.tensor(0.5)}, "r": torch.tensor([2.0])}, [])
    out = logger.log_metrics(td, step=4, keys_sep=".")
    assert out == {"train.loss": 0.5, "r": 2.0}
    assert sorted(logger.experiment) == [("r", 2.0, 4), ("train.loss", 0.5, 4)]
    with pytest.raises(NotImplementedError, match="ListLogger does not implement log_str"):
        logger.log_str("note", "x")


# --------------------------------------------------------------------------- csv
def test_csv_logger_layout(tmp_path):
    with CSVLogger("exp", log_dir=str(tmp_path)) as logger:
        assert logger.experiment.log_dir == str(tmp_path / "exp")
        for step in (0, 10, 20):
            logger.log_scalar("train/reward", step / 10, step=step)
        logger.log_scalar("loss", torch.tensor(0.25))
        logger.log_scalar("loss", torch.tensor([0.5]))
        logger.log_str("notes", 'a, "quoted"\nline', step=3)
        logger.log_hparams(OmegaConf.create({"optim": {"lr": 0.1}, "seed": 3}))
        logger.log_video("eval/video", _video(), step=7)
        logger.log_video("gif_video", _video(), step=1, format="gif")
        logger.log_histogram("weights", torch.arange(5.0), step=2)
        with pytest.raises(ValueError, match="single value"):
            logger.log_scalar("bad", torch.ones(3))
    root = tmp_path / "exp"
    assert _rows(root / "scalars" / "train" / "reward.csv") == [
        ["0", "0.0"],
        ["10", "1.0"],
        ["20", "2.0"],
    ]
    assert _rows(root / "scalars" / "loss.csv") == [["0", "0.25"], ["1", "0.5"]]
    assert _rows(root / "texts" / "notes.csv") == [["3", 'a, "quoted"\nline']]
    assert yaml.safe_load((root / "hparams.yaml").read_text()) == {
        "optim": {"lr": 0.1},
        "seed": 3,
    }
    assert torch.equal(torch.load(root / "videos" / "eval" / "video_7.pt"), _video())
    assert (root / "videos" / "gif_video_1.gif").read_bytes()[:3] == b"GIF"
    assert torch.equal(torch.load(root / "histograms" / "weights_2.pt"), torch.arange(5.0))


def test_csv_logger_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="video_format"):
        CSVLogger("e", log_dir=str(tmp_path), video_format="avi")
    logger = CSVLogger("e", log_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Invalid series name"):
        logger.log_scalar("../escape", 1.0, step=0)
    logger.close()


def test_csv_rows_are_in_the_files_before_close(tmp_path):
    # torchrl's CSV logger writes each row through: a script (or a user tailing the file)
    # reads what was logged while the logger is still open
    logger = CSVLogger("e", log_dir=str(tmp_path))
    logger.log_scalar("train/reward", 1.5, step=10)
    logger.log_scalar("train/reward", 2.5, step=20)
    logger.log_str("note", "hello")
    path = tmp_path / "e" / "scalars" / "train" / "reward.csv"
    assert _rows(path) == [["10", "1.5"], ["20", "2.5"]]
    assert (tmp_path / "e" / "texts" / "note.csv").read_text().strip().endswith("hello")
    logger.close()


def test_csv_logger_keeps_files_open(tmp_path, monkeypatch):
    opened = []
    real_open = open

    def counting_open(*args, **kwargs):
        opened.append(args[0])
        return real_open(*args, **kwargs)

    monkeypatch.setattr(csv_module, "open", counting_open, raising=False)
    logger = CSVLogger("e", log_dir=str(tmp_path), flush_secs=3600)
    for step in range(500):
        logger.log_scalar("a", float(step), step=step)
        logger.log_scalar("b/c", float(step), step=step)
    assert len(opened) == 2  # one handle per series, never reopened
    path = tmp_path / "e" / "scalars" / "a.csv"
    assert len(_rows(path)) < 500  # still buffered (flush_secs not elapsed)
    logger.flush()
    assert len(_rows(path)) == 500
    logger.close()


def test_csv_logger_resume_without_duplicates(tmp_path):
    logger = CSVLogger("run", log_dir=str(tmp_path))
    for step in range(5):
        logger.log_scalar("r", float(step), step=step)
    logger.log_scalar("auto", 1.0)
    state = logger.state_dict()
    assert state["last_steps"]["r"] == 4
    for step in range(5, 9):  # logged after the checkpoint, then the run dies
        logger.log_scalar("r", float(step), step=step)
        logger.log_scalar("late", 0.0, step=step)
    logger.log_scalar("auto", 2.0)
    logger.close()

    resumed = CSVLogger("run", log_dir=str(tmp_path))
    resumed.load_state_dict(state)
    for step in range(5, 7):
        resumed.log_scalar("r", 10.0 + step, step=step)
    resumed.log_scalar("auto", 3.0)  # step=None continues the row count
    resumed.close()
    scalars = tmp_path / "run" / "scalars"
    assert [int(s) for s, _ in _rows(scalars / "r.csv")] == [0, 1, 2, 3, 4, 5, 6]
    assert _rows(scalars / "r.csv")[5] == ["5", "15.0"]
    assert _rows(scalars / "late.csv") == []
    assert _rows(scalars / "auto.csv") == [["0", "1.0"], ["1", "3.0"]]


def test_csv_experiment_scalars_and_print_log_dir(tmp_path, capsys):
    """torchrl's ``logger.experiment.scalars`` (name -> [(step, value)]) and
    ``logger.print_log_dir()``."""
    logger = CSVLogger("run", log_dir=str(tmp_path))
    for step in range(4):
        logger.log_scalar("r", torch.tensor(float(step)), step=10 * step)
    logger.log_scalar("auto", 2)
    assert logger.experiment.scalars["r"] == [(0, 0.0), (10, 1.0), (20, 2.0), (30, 3.0)]
    assert logger.experiment.scalars["auto"] == [(0, 2.0)]
    state = logger.state_dict()
    logger.log_scalar("r", 4.0, step=40)
    logger.load_state_dict(state)  # resume: rows (and pairs) after the state are dropped
    assert logger.experiment.scalars["r"] == [(0, 0.0), (10, 1.0), (20, 2.0), (30, 3.0)]
    logger.truncate_after(15)
    assert logger.experiment.scalars["r"] == [(0, 0.0), (10, 1.0)]
    logger.print_log_dir()
    assert capsys.readouterr().out.strip() == f"Log dir: {tmp_path / 'run'}"
    logger.close()


def test_csv_truncate_after_and_reopen_appends(tmp_path):
    with CSVLogger("run", log_dir=str(tmp_path)) as logger:
        for step in range(0, 50, 10):
            logger.log_scalar("r", float(step), step=step)
            logger.log_video("v", _video(t=1), step=step)
    with CSVLogger("run", log_dir=str(tmp_path)) as logger:
        logger.truncate_after(20)
        logger.log_scalar("r", -1.0, step=30)
    rows = _rows(tmp_path / "run" / "scalars" / "r.csv")
    assert rows == [["0", "0.0"], ["10", "10.0"], ["20", "20.0"], ["30", "-1.0"]]
    videos = sorted(p.name for p in (tmp_path / "run" / "videos").iterdir())
    assert videos == ["v_0.pt", "v_10.pt", "v_20.pt"]


# --------------------------------------------------------------------------- factory
def test_get_logger_and_exp_name(tmp_path):
    logger = get_logger("csv", str(tmp_path), "exp")
    assert isinstance(logger, CSVLogger) and logger.experiment.log_dir == str(tmp_path / "exp")
    logger.close()
    assert get_logger("", str(tmp_path), "exp") is None
    with pytest.raises(ValueError) as err:
        get_logger("neptune", str(tmp_path), "exp")
    for name in LOGGER_TYPES:
        assert name in str(err.value)
    assert "neptune" in str(err.value)
    name = generate_exp_name("PPO", "cartpole")
    # torchrl's layout: model, experiment, 8 uuid characters, then the date-time
    assert re.fullmatch(r"PPO_cartpole_[0-9a-f]{8}_\d\d_\d\d_\d\d-\d\d_\d\d_\d\d", name)
    assert generate_exp_name("PPO", "cartpole") != name


def test_get_logger_unpacks_torchrl_backend_kwargs(tmp_path, monkeypatch):
    """torchrl: ``get_logger("wandb", ..., wandb_kwargs={...})`` / ``mlflow_kwargs={...}``."""
    import rl_trainers.record.loggers.utils as utils

    made = {}

    class Fake:
        def __init__(self, **kwargs):
            made.update(kwargs)

    monkeypatch.setattr("rl_trainers.record.loggers.wandb.WandbLogger", Fake)
    monkeypatch.setattr("rl_trainers.record.loggers.mlflow.MLFlowLogger", Fake)
    utils.get_logger("wandb", str(tmp_path), "exp", wandb_kwargs={"project": "p", "offline": True})
    assert made == {"exp_name": "exp", "save_dir": str(tmp_path), "project": "p", "offline": True}
    made.clear()
    utils.get_logger("mlflow", str(tmp_path), "exp", mlflow_kwargs={"tags": {"a": "b"}})
    assert made == {"exp_name": "exp", "tracking_uri": str(tmp_path), "tags": {"a": "b"}}
    logger = utils.get_logger("csv", str(tmp_path), "exp", wandb_kwargs={"project": "p"})
    assert isinstance(logger, CSVLogger)  # another backend's kwargs are ignored, as in torchrl
    logger.close()


@pytest.mark.parametrize(
    "module, cls, extra",
    [("wandb", "WandbLogger", "wandb"), ("mlflow", "MLFlowLogger", "mlflow")],
)
def test_missing_backend_names_the_extra(monkeypatch, tmp_path, module, cls, extra):
    import rl_trainers.record.loggers as loggers

    for mod in list(sys.modules):
        if mod == module or mod.startswith(module + "."):
            monkeypatch.setitem(sys.modules, mod, None)
    monkeypatch.setitem(sys.modules, module, None)
    kwargs = {"tracking_uri": str(tmp_path)} if module == "mlflow" else {"offline": True}
    with pytest.raises(ImportError, match=re.escape(f'pip install "rl_trainers[{extra}]"')):
        getattr(loggers, cls)("exp", **kwargs)


# --------------------------------------------------------------------------- tensorboard
def _accumulator(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_tensorboard_logger_read_back(tmp_path):
    from PIL import Image, ImageSequence
    from tensorboard.plugins.hparams import plugin_data_pb2

    from rl_trainers.record.loggers import TensorboardLogger

    logger = get_logger("tensorboard", str(tmp_path), "exp")
    assert isinstance(logger, TensorboardLogger)
    for step in range(5):
        logger.log_scalar("train/loss", 1.0 / (step + 1), step=step)
    logger.log_hparams({"optim": {"lr": 0.01}, "env": "CartPole-v1"})
    logger.log_video("eval/video", _video(t=3, h=8, w=6), step=4, fps=5)
    logger.log_histogram("w", torch.randn(100), step=4)
    logger.log_str("note", "hello", step=4)
    state = logger.state_dict()
    logger.close()

    acc = _accumulator(str(tmp_path / "exp"))
    tags = acc.Tags()
    assert "train/loss" in tags["scalars"] and "eval/video" in tags["images"]
    assert "w" in tags["histograms"]
    points = [(e.step, e.value) for e in acc.Scalars("train/loss")]
    assert points == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    (image,) = acc.Images("eval/video")
    assert (image.step, image.width, image.height) == (4, 6, 8)
    gif = Image.open(io.BytesIO(image.encoded_image_string))
    assert len(list(ImageSequence.Iterator(gif))) == 3
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert info.hparams["optim.lr"].number_value == pytest.approx(0.01)
    assert info.hparams["env"].string_value == "CartPole-v1"

    # Resume from the checkpoint taken at step 4 after a session that logged up to 9.
    assert state["last_steps"]["train/loss"] == 4
    second = TensorboardLogger("exp", log_dir=str(tmp_path))
    for step in range(5, 10):
        second.log_scalar("train/loss", -1.0, step=step)
    second.close()
    third = TensorboardLogger("exp", log_dir=str(tmp_path))
    third.load_state_dict(state)
    third.log_scalar("train/loss", 2.0, step=5)
    third.close()
    points = [(e.step, e.value) for e in _accumulator(str(tmp_path / "exp")).Scalars("train/loss")]
    assert [s for s, _ in points] == [0, 1, 2, 3, 4, 5]
    assert points[-1][1] == 2.0


def test_tensorboard_resume_reads_right_after_many_writers_in_one_process(tmp_path):
    """A process that made many writers (a test session, a notebook) resumes a run within
    the second of its last event file: the resumed file must still be read after it, though
    the names' counters cross a decimal digit (…9 then …10, which sort the other way)."""
    from tensorboard.summary.writer.event_file_writer import _global_uid

    from rl_trainers.record.loggers import TensorboardLogger

    scratch = tmp_path / "scratch"
    # the next writer's counter (the file name's last part) is 10**k - 1, those after 10**k...
    while len(str(_global_uid._value)) == len(str(_global_uid._value + 1)):
        TensorboardLogger("x", log_dir=str(scratch)).close()
    first = TensorboardLogger("exp", log_dir=str(tmp_path))
    for step in range(5):
        first.log_scalar("loss", 1.0, step=step)
    state = {"last_steps": {"loss": 2}}
    first.close()
    second = TensorboardLogger("exp", log_dir=str(tmp_path))
    second.load_state_dict(state)  # purges steps 3 and 4 of the first session
    second.log_scalar("loss", 2.0, step=3)
    second.close()
    points = [(e.step, e.value) for e in _accumulator(str(tmp_path / "exp")).Scalars("loss")]
    assert points == [(0, 1.0), (1, 1.0), (2, 1.0), (3, 2.0)]


# --------------------------------------------------------------------------- wandb
def _wandb_records(path):
    """Reads the records of a .wandb file (LevelDB log framing of protobuf Records)."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B" or len(data) < 4  # the service may not have written it yet
    block, pos, pending = 32768, 7, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0 or len(chunk) < length:  # the end, or a record still being written
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def _finished_wandb_records(path, timeout=60.0):
    """The records of a finished run's .wandb file. ``run.finish()`` may return before the
    W&B service has flushed the file, so it is read until it holds the ``exit`` record."""
    deadline = time.monotonic() + timeout
    while True:
        records = list(_wandb_records(path))
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{path} holds no exit record"
        time.sleep(0.2)


def _wandb_history_and_config(path):
    history, config = [], {}
    for record in _finished_wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            history.append(
                {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
            )
        elif kind == "config":
            config.update({i.key: json.loads(i.value_json) for i in record.config.update})
    return history, config


def _offline_runs(save_dir):
    """``{run file: run id}`` of the offline runs under ``<save_dir>/wandb``."""
    files = glob.glob(os.path.join(save_dir, "wandb", "offline-run-*", "run-*.wandb"))
    return {f: os.path.basename(f)[len("run-") : -len(".wandb")] for f in files}


def test_wandb_offline_read_back(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)  # no account needed offline
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc or settings either
    from rl_trainers.record.loggers import WandbLogger

    logger = get_logger(
        "wandb", str(tmp_path / "wb"), "exp", offline=True, project="tests", video_fps=4
    )
    assert isinstance(logger, WandbLogger)
    for step in range(3):
        logger.log_scalar("train/loss", float(step) / 2, step=step)
    logger.log_hparams(OmegaConf.create({"optim": {"lr": 0.5}}))
    logger.log_video("eval/video", _video(), step=3)
    logger.log_str("note", "hi", step=4)
    state = logger.state_dict()
    logger.close()
    assert state["id"] == logger.id and state["last_steps"]["train/loss"] == 2

    (run_dir,) = glob.glob(str(tmp_path / "wb" / "wandb" / "offline-run-*"))
    (run_file,) = glob.glob(os.path.join(run_dir, f"run-{logger.id}.wandb"))
    history, config = _wandb_history_and_config(run_file)
    losses = [(h["_step"], h["train/loss"]) for h in history if "train/loss" in h]
    assert losses == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert config["optim"] == {"lr": 0.5}
    (video,) = [h for h in history if "eval/video/path" in h]
    assert video["_step"] == 3 and video["eval/video/_type"] == "video-file"
    assert os.path.exists(os.path.join(run_dir, "files", video["eval/video/path"]))
    assert [h["note"] for h in history if "note" in h] == ["hi"]


def test_wandb_keeps_several_values_and_none_as_torchrl_scripts_log_them(tmp_path, monkeypatch):
    """torchrl's SAC script logs the returns of every episode a batch finished (a tensor of
    several values) and all its off-policy scripts ``time/speed`` (tqdm's rate, None before
    tqdm has measured one), with ``log_scalar`` or ``log_metrics``: W&B stores the values as
    a list and None as null, where a one-value check used to stop the run."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    logger = get_logger(
        "wandb", str(tmp_path / "wb"), "exp", wandb_kwargs={"mode": "offline", "project": "t"}
    )
    logger.log_scalar("train/reward", torch.tensor([1.5, -2.0]), step=1)
    logger.log_scalar("time/speed", None, step=1)
    logged = logger.log_metrics(
        {"train/length": np.array([3.0, 4.0]), "time/speed": None, "train/q": torch.ones(1)},
        step=2,
    )
    logger.close()
    assert logged["time/speed"] is None and logged["train/q"] == 1.0

    (run_file,) = _offline_runs(str(tmp_path / "wb"))
    history, _ = _wandb_history_and_config(run_file)
    rows = {h["_step"]: h for h in history}
    assert rows[1]["train/reward"] == [1.5, -2.0]
    assert rows[2]["train/length"] == [3.0, 4.0] and rows[2]["train/q"] == 1.0
    assert [h.get("time/speed", "absent") for h in history if "time/speed" in h] == [None, None]


def test_wandb_close_after_a_failed_start_raises_only_the_first_error(tmp_path, monkeypatch):
    """The run cannot start (its save_dir lies under a file); closing the logger given
    hyper-parameters (as the app's is), in a ``with`` block or by the trainer, tried to
    start it again, and that second error hid the first."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from rl_trainers.record.loggers import WandbLogger

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(OSError) as err:
        with WandbLogger("exp", offline=True, save_dir=str(blocker / "wb")) as logger:
            logger.log_hparams({"lr": 0.5})
            logger.log_scalar("train/loss", 1.0, step=0)
    assert str(blocker) in str(err.value)
    assert err.value.__context__ is None  # raised while handling no other error
    logger.close()  # closing again stays quiet


def test_wandb_video_as_first_write_with_torchrl_format_keyword(tmp_path, monkeypatch):
    """A video before any other write (save_dir not created yet), with torchrl's
    ``format="mp4"`` keyword, is logged as a GIF."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from rl_trainers.record.loggers import WandbLogger

    logger = WandbLogger("exp", offline=True, save_dir=str(tmp_path / "new" / "wb"))
    logger.log_video("eval/video", _video(), step=2, format="mp4")
    logger.close()
    (run_dir,) = glob.glob(str(tmp_path / "new" / "wb" / "wandb" / "offline-run-*"))
    history, _ = _wandb_history_and_config(os.path.join(run_dir, f"run-{logger.id}.wandb"))
    (video,) = [h for h in history if "eval/video/path" in h]
    assert video["_step"] == 2 and video["eval/video/path"].endswith(".gif")


# --------------------------------------------------------------------------- mlflow
def test_mlflow_read_back_and_resume(tmp_path):
    from mlflow.tracking import MlflowClient

    from rl_trainers.record.loggers import MLFlowLogger

    logger = get_logger("mlflow", str(tmp_path / "ml"), "exp", tags={"algo": "ppo"})
    assert isinstance(logger, MLFlowLogger)
    assert logger.tracking_uri.startswith("sqlite:///")
    for step in range(3):
        logger.log_scalar("train/loss", step * 1.5, step=step)
    logger.log_metrics({"a": 1.0, "b": torch.tensor(2.0)}, step=3)
    logger.log_hparams(OmegaConf.create({"optim": {"lr": 0.1}, "seed": 7}))
    logger.log_video("eval/video", _video(), step=3)
    logger.log_str("note", "hello", step=3)
    state = logger.state_dict()
    logger.close()

    resumed = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
    fresh_run = resumed.run_id
    resumed.load_state_dict(state)
    assert resumed.run_id == state["run_id"]
    resumed.log_scalar("train/loss", 9.0, step=3)
    resumed.close()

    client = MlflowClient(tracking_uri=logger.tracking_uri)
    history = client.get_metric_history(state["run_id"], "train/loss")
    assert sorted((m.step, m.value) for m in history) == [(0, 0.0), (1, 1.5), (2, 3.0), (3, 9.0)]
    run = client.get_run(state["run_id"])
    assert run.data.params == {"optim.lr": "0.1", "seed": "7"}
    assert run.data.metrics["b"] == 2.0 and run.data.tags["algo"] == "ppo"
    assert run.info.status == "FINISHED"
    videos = [a.path for a in client.list_artifacts(state["run_id"], "videos/eval")]
    assert videos == ["videos/eval/video_3.gif"]
    texts = [a.path for a in client.list_artifacts(state["run_id"], "texts")]
    assert texts == ["texts/note_3.txt"]
    assert client.get_run(fresh_run).info.lifecycle_stage == "deleted"


def test_mlflow_histogram_bins_as_number_or_rule(tmp_path):
    """``log_histogram(..., bins=)`` takes a count or a rule name (TensorBoard's ``"auto"``...)."""
    from mlflow.artifacts import download_artifacts

    from rl_trainers.record.loggers import MLFlowLogger

    logger = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
    logger.log_histogram("h", torch.arange(10.0), step=1, bins=5)
    logger.log_histogram("auto", torch.arange(10.0), step=2, bins="auto")
    logger.close()
    root = download_artifacts(
        run_id=logger.run_id,
        artifact_path="histograms",
        dst_path=str(tmp_path / "dl"),
        tracking_uri=logger.tracking_uri,
    )
    five = json.loads(Path(root, "h_1.json").read_text())
    assert five["counts"] == [2, 2, 2, 2, 2] and len(five["edges"]) == 6
    auto = json.loads(Path(root, "auto_2.json").read_text())
    assert sum(auto["counts"]) == 10


def test_mlflow_resume_leaves_one_run_with_both_sessions(tmp_path):
    """A resume builds the logger, logs the config, then loads the checkpoint's state: no
    second run appears, and the config logged before the load goes to the resumed run."""
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    from rl_trainers.record.loggers import MLFlowLogger

    first = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
    first.log_hparams({"trainer": {"total_frames": 1024}, "seed": 0})
    first.log_metrics({"train/loss": 1.0}, step=256)
    first.log_scalar("train/loss", 2.0, step=512)
    state = first.state_dict()
    first.close()

    resumed = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
    resumed.log_hparams({"trainer": {"total_frames": 2048}, "seed": 0, "new": "x"})
    resumed.load_state_dict(state)
    resumed.log_scalar("train/loss", 3.0, step=768)
    resumed.close()

    client = MlflowClient(tracking_uri=first.tracking_uri)
    runs = client.search_runs([state["experiment_id"]], run_view_type=ViewType.ALL)
    assert [r.info.run_id for r in runs] == [state["run_id"]]  # not even a deleted one
    (run,) = runs
    history = client.get_metric_history(run.info.run_id, "train/loss")
    assert sorted((m.step, m.value) for m in history) == [(256, 1.0), (512, 2.0), (768, 3.0)]
    # MLflow params are immutable: the changed value is kept as a tag.
    assert run.data.params == {"trainer.total_frames": "1024", "seed": "0", "new": "x"}
    assert run.data.tags["resumed.trainer.total_frames"] == "2048"
    assert run.info.status == "FINISHED"


def test_mlflow_run_started_before_load_is_deleted(tmp_path):
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    from rl_trainers.record.loggers import MLFlowLogger

    with MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml")) as first:
        first.log_scalar("r", 1.0, step=1)
        state = first.state_dict()
    second = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
    second.log_hparams({"lr": 0.1})
    fresh = second.run_id  # starts a run of its own
    second.load_state_dict(state)
    second.close()
    client = MlflowClient(tracking_uri=first.tracking_uri)
    active = client.search_runs([state["experiment_id"]], run_view_type=ViewType.ACTIVE_ONLY)
    assert [r.info.run_id for r in active] == [state["run_id"]]
    assert client.get_run(fresh).info.lifecycle_stage == "deleted"
    assert client.get_run(state["run_id"]).data.params == {"lr": "0.1"}


def _rng_states():
    np_state = np.random.get_state()
    return random.getstate(), np_state[1].tolist(), np_state[2:], torch.get_rng_state()


def _assert_same_rng(before, after):
    assert before[:3] == after[:3]
    assert torch.equal(before[3], after[3])


def test_mlflow_runs_get_distinct_names_without_touching_rng(tmp_path):
    """The app seeds the global RNGs before building the logger; MLflow's own run names
    come from ``random``, so every run was called the same."""
    from mlflow.tracking import MlflowClient

    from rl_trainers.record.loggers import MLFlowLogger

    names = []
    for _ in range(2):
        torch.manual_seed(0)
        np.random.seed(0)
        random.seed(0)
        before = _rng_states()
        logger = MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"))
        logger.log_hparams({"seed": 0})
        logger.log_scalar("r", 1.0, step=1)
        logger.close()
        _assert_same_rng(before, _rng_states())
        run = MlflowClient(tracking_uri=logger.tracking_uri).get_run(logger.run_id)
        names.append(run.info.run_name)
    assert names[0] != names[1]
    assert all(name.startswith("exp_") for name in names)
    with MLFlowLogger("exp", tracking_uri=str(tmp_path / "ml"), run_name="mine") as named:
        named.log_scalar("r", 1.0, step=1)
    run = MlflowClient(tracking_uri=named.tracking_uri).get_run(named.run_id)
    assert run.info.run_name == "mine"


@pytest.mark.parametrize("logger_type", LOGGER_TYPES)
def test_logger_leaves_global_rng_streams_unchanged(logger_type, tmp_path, monkeypatch):
    """A seeded run must stay reproducible whatever the logger: creating a logger, writing,
    saving its state and closing it draw nothing from the global RNGs."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kwargs = {"offline": True} if logger_type == "wandb" else {}
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    before = _rng_states()
    logger = get_logger(logger_type, str(tmp_path / "logs"), "exp", **kwargs)
    logger.log_hparams({"seed": 0})
    logger.log_scalar("r", 1.0, step=1)
    logger.state_dict()
    logger.close()
    _assert_same_rng(before, _rng_states())


def test_wandb_resume_leaves_no_extra_offline_run(tmp_path, monkeypatch):
    """Resuming must not leave an offline run with a new id (``wandb sync`` would upload it
    as a junk run); the config logged before the load goes to the resumed run."""
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from rl_trainers.record.loggers import WandbLogger

    save_dir = str(tmp_path / "wb")
    first = WandbLogger("exp", offline=True, save_dir=save_dir, project="tests")
    first.log_hparams({"trainer": {"total_frames": 1024}})
    first.log_scalar("train/loss", 1.0, step=256)
    state = first.state_dict()
    first.close()
    assert set(_offline_runs(save_dir).values()) == {state["id"]}

    resumed = WandbLogger("exp", offline=True, save_dir=save_dir, project="tests")
    resumed.log_hparams({"trainer": {"total_frames": 2048}})
    resumed.load_state_dict(state)
    resumed.log_scalar("train/loss", 2.0, step=512)
    resumed.close()

    runs = _offline_runs(save_dir)
    assert set(runs.values()) == {state["id"]} and len(runs) == 2  # one per session
    sessions = sorted(
        (_wandb_history_and_config(f) for f in runs), key=lambda s: s[0][0]["_step"]
    )  # by their first step
    losses = [
        [(h["_step"], h["train/loss"]) for h in hist if "train/loss" in h] for hist, _ in sessions
    ]
    assert losses == [[(256, 1.0)], [(512, 2.0)]]
    assert [config["trainer"] for _, config in sessions] == [
        {"total_frames": 1024},
        {"total_frames": 2048},
    ]


def test_wandb_run_started_before_load_is_removed(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from rl_trainers.record.loggers import WandbLogger

    save_dir = str(tmp_path / "wb")
    with WandbLogger("exp", offline=True, save_dir=save_dir, project="tests") as first:
        first.log_scalar("r", 1.0, step=1)
        state = first.state_dict()
    second = WandbLogger("exp", offline=True, save_dir=save_dir, project="tests")
    second.log_hparams({"lr": 0.1})
    fresh_dir = second.run_dir  # starts a run with a new id
    assert second.id != state["id"] and os.path.isdir(fresh_dir)
    second.load_state_dict(state)
    assert not os.path.exists(fresh_dir)
    second.log_scalar("r", 2.0, step=2)
    second.close()
    assert set(_offline_runs(save_dir).values()) == {state["id"]}


def test_wandb_logger_without_writes_starts_no_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from rl_trainers.record.loggers import WandbLogger

    WandbLogger("exp", offline=True, save_dir=str(tmp_path / "wb")).close()
    assert _offline_runs(str(tmp_path / "wb")) == {}
