"""Where a run writes: Hydra's run directory, shared by every data-parallel rank; and the
previous run's config there, kept when a launch is refused."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf


def output_dir_of_run() -> Path:
    """Hydra's run directory when called inside ``@hydra.main``, else the working directory."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path.cwd()


def shared_run_dir(out: Path) -> Path:
    """Data-parallel: rank 0's run directory, for every rank.

    Each process composes its own Hydra config, so a ``${now:...}`` run directory can differ
    by a second between ranks; another rank's own directory is then removed if it holds
    only what Hydra wrote at startup (``.hydra/`` and ``*.log``).
    """
    import shutil

    from rl_trainers.core.distributed import DataParallel

    shared = Path(DataParallel().broadcast_object(str(out)))
    if shared.resolve() != out.resolve() and out.is_dir():
        entries = list(out.iterdir())
        if all(e.name == ".hydra" or (e.is_file() and e.suffix == ".log") for e in entries):
            shutil.rmtree(out, ignore_errors=True)
    return shared


#: The file a training run holds locked in its run directory while it uses it.
LOCK_FILE = ".lock"


@contextlib.contextmanager
def run_dir_locked(out: Path) -> Iterator[None]:
    """While a run uses ``out``: an exclusive lock on ``out/.lock``, so a second launch on the
    same directory (a second terminal, a requeued job while the first still runs) is refused
    instead of training alongside it into the same checkpoints and logs. The system drops the
    lock when the process ends, however it ends (``kill -9`` too). Without ``fcntl``
    (Windows), where the file cannot be written (the run's own checks report that) or where
    the filesystem has no locks (some NFS mounts), no lock is taken."""
    import os
    import socket

    from rl_trainers.errors import ConfigError

    try:
        import fcntl

        out.mkdir(parents=True, exist_ok=True)
        handle = open(out / LOCK_FILE, "a+")  # noqa: SIM115 - held until the run ends
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise ConfigError(
                "hydra.run.dir",
                str(out),
                f"a run is training in it ({holder}): wait for it to end, or stop it (SIGTERM "
                "or Ctrl-C saves a checkpoint) and resume with trainer.resume=true",
            ) from None
        except OSError:
            locked = False
        if locked:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            handle.flush()
        yield
    finally:
        handle.close()


#: The ``.hydra/`` files of the previous runs in the directories this process's jobs will
#: use, read before Hydra writes the new job's config over them: run directory -> name ->
#: bytes.
_PREVIOUS_RUN_CONFIG: dict[Path, dict[str, bytes]] = {}
#: The paths (relative) in each such run directory before this launch.
_PREVIOUS_RUN_PATHS: dict[Path, set[Path]] = {}


class KeepPreviousRunConfig(Callback):
    """Hydra writes a job's config into ``<run dir>/.hydra/`` before the app checks the
    directory; a launch the app then refuses (a previous run's checkpoints there, a resume
    whose checkpoint does not fit) would leave that run with another run's config, which
    ``rl-trainers eval`` and ``load_policy`` read. This callback (in every recipe's
    ``hydra.callbacks``) reads a previous run's ``.hydra/`` files first, and
    :func:`previous_run_config_restored_on_failure` puts them back."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _keep(config, "hydra.run.dir", jobs=False)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _keep(config, "hydra.sweep.dir", jobs=True)  # a resumed sweep's job directories


class SweepStart(Callback):
    """Hydra resolves ``hydra.sweep.dir`` once for the sweep (where it writes
    ``multirun.yaml``) and again for each job, from the job's own config. The recipes'
    sweep directory names the env (``multirun/<algorithm>/<env_name>/<time>``), so a sweep
    over the env (``-m env=pendulum,acrobot``, ``experiment=...``) scattered its jobs over one
    directory per env, none of them the sweep's. This callback (in every recipe's
    ``hydra.callbacks``) resolves the sweep directory once, from the sweep's config, and
    gives it to every job as a Hydra override: all jobs land in ``<sweep dir>/<job number>``
    beside ``multirun.yaml``; a sweep over envs is named ``env_sweep`` in place of the env
    (``multirun/ppo/env_sweep/<time>``). A ``hydra.sweep.dir=...`` given on the command line
    is left as written.

    It also warns, once, of an Optuna study that minimises: the plugin's default direction,
    where every job returns its final mean return (:func:`warn_minimised_return`)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        check_basic_sweeps(config)
        pin_sweep_dir(config)
        warn_minimised_return(config)


def check_basic_sweeps(config: DictConfig) -> None:
    """``interval()`` (or a ``tag()``) given to Hydra's basic sweeper, which takes lists,
    ``range()``, ``choice()`` and ``glob()``: one ``Error:`` line saying what to write, before
    the sweep starts (Hydra stopped with a traceback)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType, ValueType

    target = str(OmegaConf.select(config, "hydra.sweeper._target_", default="") or "")
    if not target.endswith(".BasicSweeper"):
        return
    words = _raw_list(config, "hydra.overrides.task")
    try:
        parsed = OverridesParser.create().parse_overrides(words)
    except Exception:  # noqa: BLE001 - Hydra reports a bad override itself
        return
    for override in parsed:
        if override.type == OverrideType.CHANGE and override.value_type == ValueType.INTERVAL_SWEEP:
            from rl_trainers.errors import ConfigError

            from .errors import report_and_exit

            key = override.get_key_element()
            report_and_exit(
                str(
                    ConfigError(
                        key,
                        (override.input_line or "").partition("=")[2],
                        "interval() is a range for the Optuna sweeper: add hydra/sweeper=optuna "
                        "hydra.sweeper.direction=maximize (docs/scaling.md), or list the values "
                        "for Hydra's basic sweeper "
                        f"({key}={override.value().start},{override.value().end})",
                    )
                )
            )


def _raw_list(config: DictConfig, key: str) -> list[str]:
    """The strings of the list at ``key`` as written: an override such as
    ``optimizer.lr=${loss.gamma}`` is not resolved (nor one that cannot be)."""
    node = OmegaConf.select(config, key)
    if not isinstance(node, ListConfig):
        return []
    return [str(o) for o in OmegaConf.to_container(node, resolve=False)]


def warn_minimised_return(config: DictConfig) -> None:
    """One ``Warning:`` line for ``hydra/sweeper=optuna`` left at the plugin's
    ``direction: minimize``: each trial returns the final evaluation's mean return, so the
    study would look for the worst hyperparameters (the ``hparams_search`` presets set
    ``maximize``)."""
    import sys

    target = str(OmegaConf.select(config, "hydra.sweeper._target_", default="") or "")
    direction = OmegaConf.select(config, "hydra.sweeper.direction", default=None)
    direction = getattr(direction, "name", direction)  # the plugin's default is an Enum
    if target.endswith("OptunaSweeper") and direction == "minimize":
        print(
            "Warning: hydra.sweeper.direction=minimize: each trial returns its final mean "
            "return (eval_return_mean), so the study looks for the lowest; add "
            "hydra.sweeper.direction=maximize to look for the best",
            file=sys.stderr,
            flush=True,
        )


def pin_sweep_dir(config: DictConfig) -> None:
    """Append ``hydra.sweep.dir=<the sweep directory, resolved>`` to the Hydra overrides
    every job of the sweep is composed with (see :class:`SweepStart`)."""
    from omegaconf import read_write

    overrides = OmegaConf.select(config, "hydra.overrides.hydra")
    if not isinstance(overrides, ListConfig):
        return
    if any(
        o.lstrip("+~").partition("=")[0] == "hydra.sweep.dir"
        for o in _raw_list(config, "hydra.overrides.hydra")
    ):
        return  # the user's own
    sweep = config.hydra.sweep
    template = OmegaConf.to_container(sweep, resolve=False).get("dir")
    if isinstance(template, str) and ENV_NAME in template and _env_swept(config):
        with read_write(sweep):  # the default env's name would misname the sweep
            sweep.dir = template.replace(ENV_NAME, ENV_SWEEP_NAME)
    try:
        directory = str(
            OmegaConf.select(config, "hydra.sweep.dir", throw_on_resolution_failure=True)
        )
    except Exception:  # noqa: BLE001 - a directory only a job can resolve: left to Hydra
        return
    if any(c in directory for c in "'\\$"):
        return  # not writable as a plain quoted override
    with read_write(overrides):
        overrides.append(f"hydra.sweep.dir='{directory}'")


#: The env's name in the recipes' sweep directory, and what stands for it in a sweep over
#: envs (``multirun/ppo/env_sweep/<time>``: each job's env is in its summary.json).
ENV_NAME = "${env.env_name}"
ENV_SWEEP_NAME = "env_sweep"


def _env_swept(config: DictConfig) -> bool:
    """Whether the sweep's overrides, or its sweeper's ``params``, vary the env (``env=...``,
    ``env.env_name=...`` or ``experiment=...``, which may switch it)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    words = _raw_list(config, "hydra.overrides.task")
    params = OmegaConf.select(config, "hydra.sweeper.params")  # the sweeper's own sweeps
    if isinstance(params, DictConfig):
        raw = OmegaConf.to_container(params, resolve=False)
        words += [f"{key}={value}" for key, value in raw.items()]
    try:
        parsed = OverridesParser.create().parse_overrides(words)
    except Exception:  # noqa: BLE001 - Hydra reports a bad override itself
        return False
    return any(
        o.is_sweep_override() and o.key_or_group in ("env", "env.env_name", "experiment")
        for o in parsed
    )


def _keep(config: DictConfig, key: str, jobs: bool) -> None:
    try:
        directory = Path(str(OmegaConf.select(config, key, throw_on_resolution_failure=True)))
    except Exception:  # noqa: BLE001 - a directory only a job can resolve: nothing to keep
        return
    if not jobs:
        run_dirs = [directory]
    else:  # a sweep's job directories, from a previous launch of the sweep
        run_dirs = sorted(directory.iterdir()) if directory.is_dir() else []
    for run_dir in run_dirs:
        hydra_dir = run_dir / ".hydra"
        if (run_dir / "checkpoints").is_dir() and hydra_dir.is_dir():
            files = {p.name: p.read_bytes() for p in hydra_dir.iterdir() if p.is_file()}
            _PREVIOUS_RUN_CONFIG[run_dir.resolve()] = files
            _PREVIOUS_RUN_PATHS[run_dir.resolve()] = _paths_in(run_dir)


@contextlib.contextmanager
def previous_run_config_restored_on_failure(out: Path) -> Iterator[None]:
    """Around what may refuse a launch in ``out``: on any exception, put back the
    ``.hydra/`` files the previous run there had before this launch (see
    :class:`KeepPreviousRunConfig`)."""
    try:
        yield
    except BaseException:
        for name, data in _PREVIOUS_RUN_CONFIG.get(out.resolve(), {}).items():
            (out / ".hydra" / name).write_bytes(data)
        before = _PREVIOUS_RUN_PATHS.get(out.resolve())
        if before is not None:  # what the refused launch created (its logger's directory)
            _remove_created(out, before)
        raise


def _paths_in(run_dir: Path) -> set[Path]:
    return {p.relative_to(run_dir) for p in run_dir.rglob("*")}


def _remove_created(run_dir: Path, before: set[Path]) -> None:
    """Remove what is in ``run_dir`` and was not in ``before``, deepest first (its lock file,
    which the launch still holds, and ``train.log``, which records the refusal, stay)."""
    for relative in sorted(_paths_in(run_dir) - before, key=lambda p: len(p.parts), reverse=True):
        if relative.name in (".lock", "train.log"):
            continue
        path = run_dir / relative
        with contextlib.suppress(OSError):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()


def previous_run_overrides(out: Path) -> list[str] | None:
    """The command-line overrides the previous run in ``out`` was launched with (its
    ``.hydra/overrides.yaml`` as it was before this launch), or None if unknown."""
    saved = _PREVIOUS_RUN_CONFIG.get(out.resolve(), {}).get("overrides.yaml")
    if saved is None:
        return None
    try:
        overrides = OmegaConf.create(saved.decode())
    except Exception:  # noqa: BLE001 - an unreadable file: no hint
        return None
    return [str(o) for o in overrides] if isinstance(overrides, ListConfig) else None
