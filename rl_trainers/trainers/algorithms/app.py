"""The Hydra application shared by every ``sota-implementations/<algo>_trainer/train.py``.

``train.py`` is a dozen lines::

    from rl_trainers import _lazy_dynamo
    _lazy_dynamo.install()  # before tensordict loads: torch._dynamo stays unloaded

    from rl_trainers.trainers.algorithms.app import CONFIG_DIR, run, user_errors
    import hydra

    @hydra.main(config_path=CONFIG_DIR, config_name="ppo_trainer", version_base=None)
    def main(cfg):
        with user_errors():
            return run(cfg)

    if __name__ == "__main__":
        with composition_errors():  # from .compose_errors: Hydra's mistakes in one line
            main()

``run`` validates the config, builds the algorithm trainer (seeding first), trains,
evaluates, and writes ``summary.json`` next to the resolved config in Hydra's run directory.

Under ``torchrun --nproc_per_node=N`` (``WORLD_SIZE > 1``) ``run`` first initialises
``torch.distributed`` and trains data-parallel (docs/distributed.md): every rank uses rank 0's
run directory; only rank 0 logs, evaluates, prints and writes ``summary.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from .configs import ENV_PRESET_ACTIONS, GROUP_OPTIONS, ROOT_SCHEMAS
from .errors import ConfigError, JobFailed, config_warnings_as_lines, report_and_exit

# PyOpenGL, which MuJoCo's renderers import, logs its library probing at INFO: Hydra's
# console handler would print it in every MuJoCo run
logging.getLogger("OpenGL").setLevel(logging.WARNING)
# alembic (imported by Optuna's storages) logs each of its plugins at INFO when the Optuna
# sweeper starts: a screenful of "setup plugin" lines before the first trial
logging.getLogger("alembic").setLevel(logging.WARNING)
# torchsnapshot (CKPT_BACKEND=torchsnapshot) logs a table of its scheduler's stages at INFO:
# about 15 lines at every checkpoint save
logging.getLogger("torchsnapshot").setLevel(logging.WARNING)

#: The directory of the YAML recipes (``configs/`` at the top of the repository).
CONFIG_DIR = str(Path(__file__).resolve().parents[3] / "configs")


def _user_error_types() -> tuple[type[BaseException], ...]:
    """:class:`ConfigError`, and the errors of the modules that raise the others if those
    modules are loaded (else nothing raised them; a config error prints without loading
    torch)."""
    found: list[type[BaseException]] = [ConfigError]
    for module, names in (
        ("rl_trainers.trainers.checkpoint", ("CheckpointError",)),
        ("rl_trainers.trainers.trainer", ("NonFiniteLossError",)),
        ("rl_trainers.collectors.collectors", ("NonFiniteBatchError", "EnvError")),
        ("rl_trainers.collectors.watchdog", ("EnvStepTimeout",)),
        ("rl_trainers.collectors.multi", ("CollectorWorkerError",)),
        ("rl_trainers.record.loggers.guard", ("LoggerBackendError",)),
        ("rl_trainers.trainers.distributed", ("RankLostError",)),
    ):
        if module in sys.modules:
            found.extend(getattr(sys.modules[module], name) for name in names)
    return tuple(found)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`ConfigError` (or a bad checkpoint) into a short message and exit status 2.

    In a job of a sweep (``-m``) the job prints its ``Error:`` line and fails with
    :class:`JobFailed` instead of ending the process: the sweep's other jobs run on (those
    a launcher runs in parallel too), an Optuna study records a failed trial, and the sweep
    ends with that line and status 2 (or, with the Optuna sweeper, goes on while fewer than
    ``hydra.sweeper.max_failure_rate`` of a batch failed).
    With ``HYDRA_FULL_ERROR=1`` the exception propagates with its full traceback.
    A :class:`~.errors.ConfigWarning` is printed as one ``Warning:`` line.
    Every line printed meanwhile is copied to the run's log file (:func:`run_log`).
    """
    with run_log():
        try:
            with config_warnings_as_lines():
                yield
        except _user_error_types() as err:
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            line = getattr(err, "summary", None) or str(err)  # a worker's: without its traceback
            if _in_sweep():
                # on the job's own stderr: the terminal, or the job's log file with submitit
                print(f"Error: {line}", file=sys.stderr, flush=True)
                raise JobFailed(f"Error: {line}") from None
            report_and_exit(line)


class _LineCopy:
    """A text stream that writes through to ``stream`` and copies each complete line to
    ``log``; a progress bar's redraws (``\r``) are copied once, as last drawn."""

    def __init__(self, stream: Any, log: Any) -> None:
        self._stream = stream
        self._log = log
        self._pending = ""

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._pending += text
        if "\n" in self._pending:
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._copy(line)
            self._log.flush()
        if "\r" in self._pending:  # a progress bar's redraws: keep the last one only
            self._pending = "\r" + self._last_drawn(self._pending)
        return written

    @staticmethod
    def _last_drawn(line: str) -> str:
        drawn = [part for part in line.split("\r") if part.strip()]
        return drawn[-1] if drawn else ""

    def _copy(self, line: str) -> None:
        if "\r" in line:
            line = self._last_drawn(line).rstrip()
            if not line:
                return
        self._log.write(line + "\n")

    def end(self) -> None:
        """Copy an unfinished last line (a progress bar left on screen)."""
        if self._pending.strip():
            self._copy(self._pending)
            self._log.flush()
        self._pending = ""

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno...
        return getattr(self._stream, name)


@contextlib.contextmanager
def run_log() -> Iterator[None]:
    """Copy what the run prints (its start line first, warnings, progress, errors, the
    summary) to Hydra's job log in the run directory (``train.log``), which otherwise
    holds Hydra's own log records only: none in most runs.

    Only inside ``@hydra.main`` with Hydra's job logging on (the file exists), on the
    first data-parallel rank; the lines still go to the terminal as before.
    """
    path = _job_log_path()
    if path is None or not path.exists() or os.environ.get("RANK", "0") not in ("", "0"):
        yield
        return
    import shlex

    with open(path, "a", encoding="utf-8") as log:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        words = " ".join(shlex.quote(w) for w in sys.argv)
        log.write(f"[{stamp}] started: python {words}\n")
        log.flush()
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _LineCopy(out, log), _LineCopy(err, log)
        try:
            yield
        finally:
            for copy in (sys.stdout, sys.stderr):
                if isinstance(copy, _LineCopy):
                    copy.end()
            sys.stdout, sys.stderr = out, err


def _job_log_path() -> Path | None:
    """Hydra's job log (``<run dir>/<job name>.log``) inside ``@hydra.main``, else None."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    return Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log"


def _in_sweep() -> bool:
    """Whether this runs as a job of a Hydra sweep (``-m``)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


# ----------------------------------------------------------------------------- torchrl names

#: The override names of torchrl's algorithm-trainer configs, as its documentation writes
#: them, and the field each one sets here.
TORCHRL_OVERRIDES = {
    "training_env.create_env_fn.base_env.env_name": "env.env_name",
    "training_env.create_env_fn.env_name": "env.env_name",
    "training_env.num_workers": "env.num_envs",
    "networks.policy_network.num_cells": "network.policy.num_cells",
    "networks.value_network.num_cells": "network.value.num_cells",
    "networks.qvalue_network.num_cells": "network.value.num_cells",
    "replay_buffer.storage.max_size": "replay_buffer.size",
    "loss.entropy_coeff": "loss.entropy_coef",
    "loss.critic_coeff": "loss.critic_coef",
    # torchrl's TD3 recipe (sota-implementations/td3): its optim node holds the delay
    "optim.policy_update_delay": "trainer.policy_delay",
    # torchrl's on-policy trainer nodes (A2CTrainerConfig...) hold the GAE discount and lambda
    "trainer.gamma": "loss.gamma",
    "trainer.lmbda": "loss.lmbda",
}


def translate_torchrl_overrides(argv: list[str]) -> list[str]:
    """``argv`` with torchrl's override names (:data:`TORCHRL_OVERRIDES`) renamed to ours,
    values untouched (sweeps too); ``train.py`` applies it before Hydra reads the command
    line, so a torchrl command such as
    ``training_env.create_env_fn.base_env.env_name=Hopper-v5`` works as it is."""
    out = []
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        target = TORCHRL_OVERRIDES.get(key)
        out.append(f"{target}={value}" if sep and target else arg)
    return out


# ----------------------------------------------------------------------------- --help


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    if origin is None:
        return getattr(tp, "__name__", str(tp))
    args = [_type_name(a) for a in typing.get_args(tp)]
    if origin in (typing.Union, types.UnionType):
        return " | ".join(args)
    return f"{getattr(origin, '__name__', str(origin))}[{', '.join(args)}]"


def _node_type(tp: Any) -> Any:
    """The dataclass inside ``Node | None``, else ``tp``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1:
        if dataclasses.is_dataclass(args[0]):
            return args[0]
    return tp


def _field_lines(node: type, prefix: str = "") -> list[str]:
    lines = []
    hints = typing.get_type_hints(node)
    for f in dataclasses.fields(node):
        if f.name.startswith("_"):
            continue
        tp = _node_type(hints.get(f.name, f.type))
        if dataclasses.is_dataclass(tp):
            lines.append(f"  {prefix}{f.name}:  {f.metadata.get('help', '')}")
            lines.extend(_field_lines(tp, prefix=f"{prefix}{f.name}."))
            continue
        name = f"{prefix}{f.name} ({_type_name(tp)})"
        lines.append(f"    {name:<42} {f.metadata.get('help', '')}")
    return lines


def _schema_has(schema: type | None, group: str) -> bool:
    """Whether ``schema`` has the node a group sets (``model/policy``: ``model.policy``)."""
    node: Any = schema
    for name in group.split("/"):
        if not dataclasses.is_dataclass(node):
            return False
        hints = typing.get_type_hints(node)
        if name not in hints:
            return False
        node = _node_type(hints[name])
    return True


def _groups_of(schema: type | None) -> dict[str, dict[str, type]]:
    """The groups registered in code whose node ``schema`` has (DQN has no ``model.policy``)."""
    if schema is None:
        return dict(GROUP_OPTIONS)
    return {g: o for g, o in GROUP_OPTIONS.items() if _schema_has(schema, g)}


def _option_field_lines(schema: type | None = None) -> list[str]:
    """Fields an option of a group adds to the group's base node (e.g. ``optimizer.betas``)."""
    lines = []
    for group, options in _groups_of(schema).items():
        for option, node in options.items():
            # the group's base node (its fields are listed above): the option's first
            # ancestor, so an option extending another (adamw: adam) lists its fields too
            root = node.__mro__[-2]
            if root is node:
                continue
            base = {f.name for f in dataclasses.fields(root)}
            extra = [
                f
                for f in dataclasses.fields(node)
                if f.name not in base and not f.name.startswith("_")
            ]
            if not extra:
                continue
            lines.append(f"  {group}={option.removesuffix('_schema')}:")
            hints = typing.get_type_hints(node)
            for f in extra:
                name = f"{group.replace('/', '.')}.{f.name} ({_type_name(hints[f.name])})"
                lines.append(f"    {name:<42} {f.metadata.get('help', '')}")
    return lines


def group_options(algorithm: str) -> dict[str, list[str]]:
    """The options of each config group a user can pick for ``algorithm`` (e.g. ``ppo``).

    Options registered in code keep their order (the default first); YAML options are sorted.
    Only what the algorithm can run is listed: its own ``experiment`` and ``hparams_search``
    presets, and the ``env`` presets whose action space (``ENV_PRESET_ACTIONS``) is the one
    its root schema's ``action_space_kind`` needs.
    """
    schema = ROOT_SCHEMAS.get(f"{algorithm}_trainer_schema")
    groups: dict[str, list[str]] = {  # ``<name>_schema``: the node of configs/<group>/<name>.yaml
        g: [o.removesuffix("_schema") for o in options] for g, options in _groups_of(schema).items()
    }
    for path in sorted(Path(CONFIG_DIR).glob("*/*.yaml")):
        options = groups.setdefault(path.parent.name, [])
        if path.stem not in options:
            options.append(path.stem)
    for group, runs in _runnable(algorithm, schema).items():
        if group in groups:
            groups[group] = [o for o in groups[group] if runs(o)]
            if not groups[group]:  # no preset for this algorithm (pg has no experiment)
                del groups[group]
    return dict(sorted(groups.items()))


def _runnable(algorithm: str, schema: type | None) -> dict[str, Callable[[str], bool]]:
    """Per group, which of its options ``algorithm`` can run: the presets named after it,
    and the env presets with the action space its schema needs (none built to tell)."""

    def own(preset: str) -> bool:
        return preset.startswith(f"{algorithm}_")

    need = getattr(schema, "action_space_kind", None)

    def env_runs(env: str) -> bool:
        return need is None or ENV_PRESET_ACTIONS.get(env, need) == need

    return {"experiment": own, "hparams_search": own, "env": env_runs}


def _hidden_envs_note(algorithm: str, schema: type) -> list[str]:
    """The line under ``env:`` in ``--help`` saying which env presets it leaves out, and why."""
    need = getattr(schema, "action_space_kind", None)
    if need is None:
        return []
    other = "discrete" if need == "continuous" else "continuous"
    return [
        f"    (envs with {other} actions are not listed: {algorithm.upper()} needs {need} ones)"
    ]


def _example_env(algorithm: str) -> str:
    return {"dqn": "acrobot", "td3": "halfcheetah", "ddpg": "mountaincar_continuous"}.get(
        algorithm, "pendulum"
    )


#: How ``--help`` names an algorithm whose upper-cased name says too little.
_TITLES = {"pg": "PG (REINFORCE, the vanilla policy gradient)"}


def help_template(algorithm: str, schema: type) -> str:
    """The ``--help`` page: groups with their options, every field with its description, and
    the composed config (``$CONFIG``, so overrides given with ``--help`` show there)."""
    name = algorithm.removesuffix("_trainer")
    groups = []
    for g, o in group_options(name).items():
        if o or g != "hparams_search":
            groups.append(f"  {'+' if g == 'hparams_search' else ''}{g}: {', '.join(o)}")
        if g == "env":
            groups.extend(_hidden_envs_note(name, schema))
    text = "\n".join(
        [
            f"{algorithm}: train {_TITLES.get(name, name.upper())} with rl_trainers.",
            "",
            f"Usage: python sota-implementations/{algorithm}/train.py [group=option] [field=value]",
            f"  e.g. env={_example_env(name)} logger=tensorboard "
            "optimizer.lr=3e-4 trainer.total_frames=50000",
            "  -m seed=0,1,2          sweep (each run in its own directory under multirun/)",
            "  -m hydra/launcher=joblib seed=0,1,2   the sweep's jobs in parallel (also",
            "                         submitit_local, submitit_slurm; pip install -e '.[sweep]')",
            "  -m +hparams_search=<preset>   an Optuna study (docs/scaling.md)",
            "  env.env_name=<id>      any gymnasium id, or 'module:Class'",
            "  --cfg job              print the composed config",
            "  torchrl's names work too: training_env.create_env_fn.base_env.env_name,",
            "  training_env.num_workers, networks.{policy,value,qvalue}_network.num_cells,",
            "  replay_buffer.storage.max_size, optim.policy_update_delay (TD3)",
            "",
            "== Config groups (group=option) ==",
            *groups,
            "",
            "== Fields (field (type) description) ==",
            *_field_lines(schema),
            "",
            "== Fields of group options (set after choosing the option) ==",
            *_option_field_lines(schema),
            "",
            "Network input/output sizes and action bounds are never configured:",
            "they are read from the environment's spaces.",
            "Set HYDRA_FULL_ERROR=1 for full tracebacks.",
            "",
            "== This recipe's values ==",
        ]
    )
    # "$${" survives OmegaConf's interpolation (as "\\${") and Hydra's string.Template ("$$").
    return text.replace("${", "$\\${") + "\n$CONFIG"


def register_help() -> None:
    """Store one ``hydra/help`` option per algorithm (selected in its primary YAML)."""
    store = ConfigStore.instance()
    for schema_name, schema in ROOT_SCHEMAS.items():
        algorithm = schema_name.removesuffix("_schema")
        node = {
            "app_name": algorithm,
            "header": "",
            "footer": "",
            "template": help_template(algorithm, schema),
        }
        store.store(group="hydra/help", name=algorithm, node=node)


def _share_config_store() -> None:
    """Let copies of Hydra's config repository share the one :class:`ConfigStore`.

    Hydra deep-copies its repository, with every node of the store (each schema and help
    page), for each config group it lists: ``--help`` made about 140 copies (20 s on two
    busy cores). The store is only read through :meth:`ConfigStore.load`, which hands out a
    copy of the node, so sharing it changes nothing else.
    """
    if "__deepcopy__" not in vars(ConfigStore):
        ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


_share_config_store()
register_help()


def _report_composition_errors_in_workers() -> contextlib.AbstractContextManager | None:
    """joblib's workers (loky processes, which import this module to run ``main``) compose
    each job's config themselves, outside the ``composition_errors`` block of ``train.py``:
    enter it for the worker's lifetime, so a mistake in a job's overrides (an Optuna search
    space naming an unknown field) is one ``Error:`` line there too."""
    import multiprocessing

    if not multiprocessing.current_process().name.startswith("LokyProcess"):
        return None
    from .compose_errors import composition_errors

    block = composition_errors(in_launcher_worker=True)
    block.__enter__()
    return block


# kept: the block ends (and Hydra's loader is restored) when it is garbage-collected
_WORKER_COMPOSITION_ERRORS = _report_composition_errors_in_workers()


# ----------------------------------------------------------------------------- running


def output_dir_of_run() -> Path:
    """Hydra's run directory when called inside ``@hydra.main``, else the working directory."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path.cwd()


def run(cfg: DictConfig, output_dir: str | os.PathLike | None = None) -> float:
    """Build the trainer the config describes, train it, evaluate it, write ``summary.json``.

    Returns the mean evaluation return (what a Hydra sweeper optimises).
    """
    from . import build_trainer

    start = time.perf_counter()
    passive_openmp_threads(cfg.trainer.get("num_threads", 0))
    phase = _Phase()
    with _stop_signals_outside_training(phase):
        distributed = _init_distributed(str(cfg.get("device") or "cpu"))
        out = Path(output_dir) if output_dir is not None else output_dir_of_run()
        if distributed:
            out = shared_run_dir(out)
        check_fresh_run_dir(cfg, out)
        trainer = build_trainer(cfg, out)
        phase.trainer = trainer
        from .common import close_trainer

        with _late_forwarded_signal_ignored(trainer):
            try:
                return _train_and_summarise(cfg, trainer, out, start, phase)
            finally:
                close_trainer(trainer)


class _Phase:
    """What the app is doing, for the line a stop signal outside training prints."""

    name = "start-up (before the first batch)"
    trainer: Any = None


class _StoppedOutsideTraining(KeyboardInterrupt):
    """SIGTERM or SIGINT while the app builds, resumes or runs the final evaluation."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _stop_signals_outside_training(phase: _Phase) -> Iterator[None]:
    """SIGTERM/SIGINT during start-up or the final evaluation end the run at once with one
    ``Stopped by ...`` line (exit status 128 + the signal); during :meth:`Trainer.train`
    the trainer's own handlers finish the batch and save a checkpoint instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: Any) -> None:
        raise _StoppedOutsideTraining(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        yield
    except _StoppedOutsideTraining as stop:
        trainer = phase.trainer
        where = getattr(trainer, "last_checkpoint", None) if trainer is not None else None
        if trainer is None or getattr(trainer, "rank", 0) == 0:
            print(
                f"Stopped by {stop} during {phase.name}; "
                + (f"checkpoint: {where}." if where else "no checkpoint was written."),
                file=sys.stderr,
                flush=True,
            )
        raise SystemExit(128 + stop.signum) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def passive_openmp_threads(num_threads: int | None) -> None:
    """Make OpenMP's threads sleep, rather than spin, while they wait (``OMP_WAIT_POLICY=
    PASSIVE``) in a run with the default thread count (``trainer.num_threads=0``), unless
    the environment sets the policy: spinning threads stall when another process takes a
    core. OpenMP reads the variable when torch loads, which ``run`` does after this."""
    if not num_threads and "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _init_distributed(device: str) -> bool:
    """``init_distributed`` (torchrun's data parallelism), without loading torch when
    nothing asks for several processes: a config error then prints without that wait."""
    try:
        several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        several = False
    if not several and "torch" not in sys.modules:
        return False  # no process group can have been initialised
    from rl_trainers.trainers.distributed import init_distributed

    return init_distributed(device)


@contextlib.contextmanager
def _late_forwarded_signal_ignored(trainer) -> Iterator[None]:
    """Data-parallel: once :meth:`Trainer.train` was interrupted, ignore the first SIGTERM
    or SIGINT; any other signal acts as it would without this handler.

    torchrun forwards a signal to each rank in turn. The ranks agree on a stop after each
    batch, so the copy reaching rank 0 can stop every rank before rank 1's copy arrives;
    that late copy, acted on by the default handler, killed rank 1 while rank 0 waited for
    it in the parameter check, and the run ended in a gloo error instead of its message.
    """
    main = threading.current_thread() is threading.main_thread()
    if trainer.world_size <= 1 or not main:
        yield
        return
    ignored: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if trainer.interrupted is not None and not ignored:
            ignored.append(signum)
            return
        signal.signal(signum, previous[signum])
        signal.raise_signal(signum)

    previous = {
        sig: signal.signal(sig, on_signal) or signal.SIG_DFL  # None: not set from Python
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def shared_run_dir(out: Path) -> Path:
    """Data-parallel: rank 0's run directory, for every rank.

    Each process composes its own Hydra config, so a ``${now:...}`` run directory can differ
    by a second between ranks; another rank's own directory is then removed if it holds
    only what Hydra wrote at startup (``.hydra/`` and ``*.log``).
    """
    import shutil

    from rl_trainers.trainers.distributed import DataParallel

    shared = Path(DataParallel().broadcast_object(str(out)))
    if shared.resolve() != out.resolve() and out.is_dir():
        entries = list(out.iterdir())
        if all(e.name == ".hydra" or (e.is_file() and e.suffix == ".log") for e in entries):
            shutil.rmtree(out, ignore_errors=True)
    return shared


def check_fresh_run_dir(cfg: DictConfig, out: Path) -> None:
    """Refuse to start a new run in a directory holding a previous run's checkpoints (its
    logs would be appended to and its checkpoints replaced), unless it is resumed."""
    loop = cfg.trainer
    if loop.get("resume") or loop.get("resume_from"):
        return
    previous = sorted((out / "checkpoints").glob("trainer*"))
    if previous:
        raise ConfigError(
            "hydra.run.dir",
            str(out),
            f"it holds a previous run (checkpoints/{previous[-1].name}), which a new run "
            "would overwrite: add trainer.resume=true to continue that run, or choose "
            "another hydra.run.dir",
        )


def _train_and_summarise(
    cfg: DictConfig, trainer, out: Path, start: float, phase: _Phase | None = None
) -> float:
    import torch

    from .common import resume_checkpoint

    lead = trainer.rank == 0  # data-parallel: only rank 0 prints, evaluates and summarises
    ckpt = resume_checkpoint(cfg, out)
    if ckpt is not None:
        ckpt = load_resume_checkpoint(cfg, trainer, ckpt, out)
        if lead:
            print(f"Resumed from {ckpt} at frame {trainer.collected_frames}.", file=sys.stderr)
            if trainer.collected_frames >= trainer.total_frames:
                print(
                    f"Nothing left to train: the checkpoint holds {trainer.collected_frames} "
                    f"frames, trainer.total_frames={trainer.total_frames}; only the final "
                    "evaluation runs (raise trainer.total_frames to train further).",
                    file=sys.stderr,
                )
    # fps is this session's throughput: frames collected by this process (not those of the
    # sessions before a resume) over this process's building, loading and training time
    first_frame = int(trainer.collected_frames)
    trainer.train()
    if trainer.world_size > 1:
        check_ranks_in_sync(trainer)
    if trainer.interrupted is not None:
        where = trainer.last_checkpoint or "(no checkpoint: saving is disabled)"
        dropped = ""
        if trainer.stop_timed_out:
            dropped = (
                f" (the batch in progress did not end within trainer.stop_grace_s="
                f"{trainer.stop_grace_s:g} s and was dropped)"
            )
        if lead:
            print(
                f"Stopped by {trainer.interrupted} at frame {trainer.collected_frames}"
                f"{dropped}; checkpoint: {where}. Continue with: {resume_command(out)}",
                file=sys.stderr,
            )
        code = getattr(signal.Signals, trainer.interrupted, None)
        raise SystemExit(128 + int(code) if code is not None else 1)
    wall_time = time.perf_counter() - start
    session_frames = int(trainer.collected_frames) - first_frame
    if not lead:
        return float("nan")
    if trainer.finished_early is not None:
        print(
            f"Training ended at frame {trainer.collected_frames}: {trainer.finished_early}.",
            file=sys.stderr,
        )
    if phase is not None:
        phase.name = "the final evaluation (training is complete)"
    returns = trainer.evaluate_final()
    summary = {
        "algorithm": cfg.algorithm,
        "env": cfg.env.env_name,
        "seed": cfg.seed,
        "frames": int(trainer.collected_frames),
        "session_frames": session_frames,
        "resumed_from_frame": first_frame,
        "wall_time_s": round(wall_time, 3),
        "fps": round(session_frames / max(wall_time, 1e-9), 1),
        "num_threads": torch.get_num_threads(),
        "eval_return_mean": float(sum(returns) / len(returns)),
        "eval_return_std": float(_std(returns)),
        "eval_episodes": len(returns),
        "finished_early": trainer.finished_early,
        "output_dir": str(out),
    }
    if trainer.world_size > 1:  # data-parallel: frames and fps count every rank's frames
        summary["world_size"] = trainer.world_size
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return summary["eval_return_mean"]


def load_resume_checkpoint(cfg: DictConfig, trainer, ckpt: Path, out: Path) -> Path:
    """Load ``ckpt`` into ``trainer``; returns the checkpoint loaded.

    With ``trainer.resume=true`` (single process), a newest checkpoint that cannot be read
    (truncated or corrupted: a crash or a full disk while it was copied...) is skipped for
    the newest readable rotated one, with one ``Warning:`` line naming both. A checkpoint
    that reads but does not fit the run still fails (as does ``trainer.resume_from``).
    """
    from rl_trainers.trainers.checkpoint import (
        CheckpointError,
        list_checkpoints,
        load_checkpoint,
        unreadable,
    )
    from rl_trainers.trainers.distributed import is_distributed

    if cfg.trainer.get("resume_from") or is_distributed():
        trainer.load_from_file(ckpt)
        return ckpt
    older = [p for _, p in reversed(list_checkpoints(out / "checkpoints" / "trainer.pt"))]
    candidates = [ckpt, *(p for p in older if p != ckpt)]
    bad: list[tuple[Path, CheckpointError]] = []
    for path in candidates:
        try:
            state = load_checkpoint(path)
        except CheckpointError as err:
            if not unreadable(err):
                raise
            bad.append((path, err))
            continue
        trainer.load_state_dict(state, source=f"Checkpoint {path}")
        trainer.last_checkpoint = Path(path)
        if bad:
            skipped = ", ".join(str(p) for p, _ in bad)
            print(
                f"Warning: trainer.resume=true: skipped {skipped} (truncated or corrupted); "
                f"resuming from {path}, the newest readable checkpoint.",
                file=sys.stderr,
            )
        return Path(path)
    raise bad[0][1]


def check_ranks_in_sync(trainer) -> None:
    """Data-parallel: raise if the ranks' loss modules (parameters and buffers) differ; rank
    0 prints the common SHA-256 to stderr (``parameters sha256 <hex> on all N ranks``)."""
    from rl_trainers.trainers.distributed import parameters_digest

    digests = trainer._data_parallel.gather_objects(parameters_digest(trainer.loss_module))
    if len(set(digests)) != 1:
        raise RuntimeError(
            "data-parallel ranks ended with different parameters: "
            + ", ".join(f"rank {r}: {d[:12]}" for r, d in enumerate(digests))
        )
    if trainer.rank == 0:
        print(f"parameters sha256 {digests[0]} on all {len(digests)} ranks", file=sys.stderr)


def resume_command(out: Path) -> str:
    """The command line that continues this run: the script and the run's own overrides
    (inside ``@hydra.main``), then ``trainer.resume=true hydra.run.dir=<out>``.

    A job of a sweep (``-m``) gets the sweep's command line instead, with
    ``trainer.resume=true hydra.sweep.dir=<sweep dir>``: it resumes the interrupted job,
    and runs the jobs that had not started yet.
    """
    import shlex

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rl_trainers.trainers.distributed import get_world_size

    world = get_world_size()
    launcher = ["python"] if world == 1 else ["torchrun", f"--nproc_per_node={world}"]

    words = ["trainer.resume=true", f"hydra.run.dir={out}"]
    if not HydraConfig.initialized():
        return " ".join(shlex.quote(w) for w in words)
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        sweep_dir = Path(hydra_cfg.runtime.cwd) / str(hydra_cfg.sweep.dir)
        skip = ("trainer.resume", "trainer.resume_from", "hydra.sweep.dir")
        own = [
            a
            for a in sys.argv[1:]
            if a not in ("-m", "--multirun") and a.lstrip("+~").partition("=")[0] not in skip
        ]
        words = [*launcher, sys.argv[0], "-m", *own, "trainer.resume=true"]
        words.append(f"hydra.sweep.dir={sweep_dir}")
        return " ".join(shlex.quote(w) for w in words)
    own = [
        o
        for o in hydra_cfg.overrides.task
        if o.lstrip("+~").partition("=")[0] not in ("trainer.resume", "trainer.resume_from")
    ]
    words = [*launcher, sys.argv[0], *own, *words]
    return " ".join(shlex.quote(w) for w in words)


def _std(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5


def resolved_config(cfg: DictConfig) -> dict:
    """The config as plain containers with interpolations resolved (for hparams logging)."""
    from .common import plain_config

    return plain_config(cfg)
