"""Training from Python: ``rl_trainers.train("sac", "experiment=sac_halfcheetah", "env=hopper")``
is ``rl-trainers sac experiment=sac_halfcheetah env=hopper``, run in a child process, and
returns the finished run (its directory and ``summary.json``), ready for
:func:`~rl_trainers.load_policy`.

The run is the app's own, in a process of its own: the same recipes, checks, run directory
(``.hydra/``, logs, checkpoints, ``summary.json``), thread settings and signal handling,
none of which touch the calling interpreter (a notebook keeps its torch threads, its signal
handlers and its Hydra state). Its console output is relayed to ``sys.stdout`` and
``sys.stderr`` (so a notebook shows it). An interrupt of the caller (Ctrl-C, a notebook's
interrupt) is passed on to the run, which stops as it does on the command line (after the
batch in progress, with a checkpoint); ``train`` then raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rl_trainers.errors import TrainingError

__all__ = ["TrainedRun", "train"]


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: its directory and its ``summary.json``."""

    run_dir: Path
    summary: dict[str, Any]

    @property
    def eval_return_mean(self) -> float:
        """The mean return of the run's final evaluation."""
        return float(self.summary["eval_return_mean"])

    def load_policy(self, which: str = "latest", **kwargs: Any):
        """:func:`rl_trainers.load_policy` of this run."""
        from .policy import load_policy

        return load_policy(self.run_dir, which=which, **kwargs)


def train(
    algorithm: str,
    *overrides: str | Mapping[str, Any] | list | tuple,
    run_dir: str | os.PathLike | None = None,
    echo: bool = True,
) -> TrainedRun:
    """Train ``algorithm`` (``"ppo"``, ``"sac"``...) with the app's recipe and ``overrides``.

    Args:
        algorithm: the algorithm, as ``rl-trainers <algorithm>`` names it.
        overrides: Hydra overrides, as on the command line (``"env=hopper"``,
            ``"optimizer.lr=3e-4"``), mappings of field to value (``{"optimizer.lr": 3e-4,
            "env.normalize_observations": True}``), or lists or tuples of those, as Hydra's
            ``compose(overrides=[...])`` takes them (flattened in order).
        run_dir: the run directory (``hydra.run.dir``); default: the app's,
            ``outputs/<algorithm>/<env id>/<date>`` under the working directory. An existing
            run there is continued with ``"trainer.resume=true"``, as on the command line.
        echo: relay the run's console output (progress bar, warnings, summary).

    Returns:
        The finished run: ``run.run_dir``, ``run.summary`` (``summary.json``),
        ``run.eval_return_mean`` and ``run.load_policy()``.

    Raises:
        TypeError: an override is not a string, a mapping, or a list or tuple of them.
        TrainingError: the run stopped on an error (the message is its ``Error:`` line).
        KeyboardInterrupt: the caller was interrupted; the run stopped with a checkpoint.
    """
    words = [word for item in overrides for word in _override_words(item)]
    flags = [word for word in words if word.startswith("-")]
    if flags:  # -m, --help, --cfg: the command line's
        raise TrainingError(
            f"{flags[0]}: train() takes overrides (field=value) and trains one run; call it "
            "once per setting for a sweep",
            2,
        )
    if run_dir is not None:
        words.append(f"hydra.run.dir={os.fspath(run_dir)}")
    command = [sys.executable, "-m", "rl_trainers", algorithm, *words]
    # a session of its own: a terminal's Ctrl-C reaches this process alone, which passes it on
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **_pythonpath()},  # relayed as it comes
    )
    streams = {"stdout": sys.stdout, "stderr": sys.stderr} if echo else {}
    relays = {
        name: _Relay(getattr(child, name), streams.get(name)) for name in ("stdout", "stderr")
    }
    interrupted = False
    while True:
        try:
            # a timed wait, so that this thread runs the handler of a Ctrl-C the kernel gave
            # to a relay thread: in a wait without end it would run only when the run ended
            returncode = child.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:
            interrupted = True
            child.send_signal(signal.SIGINT)  # a second one stops the run at once
    out, err = (relays[name].text() for name in ("stdout", "stderr"))
    if interrupted:
        raise KeyboardInterrupt
    if returncode != 0:
        errors = [line for line in err.splitlines() if line.startswith("Error: ")]
        if errors:
            raise TrainingError(errors[-1].removeprefix("Error: "), returncode)
        tail = "\n".join(err.strip().splitlines()[-20:])
        raise TrainingError(f"the run failed (exit status {returncode}):\n{tail}", returncode)
    summary = _last_json_object(out)
    if summary is None:
        raise TrainingError(f"the run ended without its summary:\n{out[-2000:]}", returncode)
    return TrainedRun(Path(summary["output_dir"]), summary)


def _pythonpath() -> dict[str, str]:
    """``PYTHONPATH`` for the run: the directories the caller put on ``sys.path`` itself (a
    notebook's ``sys.path.append("..")``, a test's tmp dir), so that the run imports the
    caller's own environment and network modules as the caller does, then the caller's
    ``PYTHONPATH``. The interpreter's own directories (under its prefixes) are left out;
    the run finds them itself."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    own: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        path = Path(entry).resolve()
        if any(path == prefix or prefix in path.parents for prefix in prefixes):
            continue
        if str(path) not in own:
            own.append(str(path))
    before = os.environ.get("PYTHONPATH")
    if not own:
        return {}
    return {"PYTHONPATH": os.pathsep.join([*own, *filter(None, [before])])}


def _override_words(item: str | Mapping[str, Any] | list | tuple) -> list[str]:
    """Command-line words of one ``overrides`` item (a list or tuple flattened in order)."""
    if isinstance(item, str):
        return [item]
    if isinstance(item, Mapping):
        return [f"{key}={_hydra_value(value)}" for key, value in item.items()]
    if isinstance(item, list | tuple):
        return [word for inner in item for word in _override_words(inner)]
    raise TypeError(
        f"train() got the override {item!r} ({type(item).__name__}): give strings "
        '("field=value"), mappings of field to value, or lists or tuples of those.'
    )


def _hydra_value(value: Any) -> str:
    """A Python value as a Hydra override writes it: ``true``, ``null``, ``[64,64]``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_hydra_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and not re.fullmatch(r"[\w./@+-]*|\$\{[^}]*\}", value):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"  # a literal string
    return str(value)


def _last_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object the app prints last (``summary.json``), from its ``{`` line on."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line == "{"]
    if not starts:
        return None
    try:
        return json.loads("\n".join(lines[starts[-1] :]))
    except json.JSONDecodeError:
        return None


class _Relay:
    """Copies a child's pipe to ``stream`` (if any) as it comes, and keeps it."""

    def __init__(self, pipe: IO[bytes], stream: IO[str] | None) -> None:
        self._pipe, self._stream, self._parts = pipe, stream, []
        self._thread = threading.Thread(target=self._copy, daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := os.read(self._pipe.fileno(), 65536):
            part = decoder.decode(chunk)
            self._parts.append(part)
            if self._stream is not None:
                try:
                    self._stream.write(part)
                    self._stream.flush()
                except (AttributeError, OSError, ValueError):  # closed, or no stream at all:
                    self._stream = None  # the pipe is still drained, or the run would block
        self._pipe.close()

    def text(self) -> str:
        """Everything the pipe carried (waits for its end)."""
        self._thread.join()
        return "".join(self._parts)
