"""One run of the app: validate the config, build the algorithm trainer (seeding first),
train, evaluate, and write ``summary.json`` next to the resolved config in Hydra's run
directory.

Under ``torchrun --nproc_per_node=N`` (``WORLD_SIZE > 1``) :func:`run` first initialises
``torch.distributed`` and trains data-parallel (docs/distributed.md): every rank uses rank 0's
run directory; only rank 0 logs, evaluates, prints and writes ``summary.json``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import statistics
import sys
import time
from pathlib import Path

from omegaconf import DictConfig

from rl_trainers.algorithms.run_dir import check_fresh_run_dir

from .mujoco_presets import warn_default_recipe_on_mujoco
from .resume import load_resume_checkpoint, resume_command
from .rundir import (
    output_dir_of_run,
    previous_run_config_restored_on_failure,
    previous_run_overrides,
    run_dir_locked,
    shared_run_dir,
)
from .signals import Phase, late_forwarded_signal_ignored, stop_signals_outside_training

# PyOpenGL, which MuJoCo's renderers import, logs its library probing at INFO: Hydra's
# console handler would print it in every MuJoCo run
logging.getLogger("OpenGL").setLevel(logging.WARNING)
# MLflow logs the creation of its local database's tables at INFO ("Creating initial MLflow
# database tables...") on the first run of logger=mlflow in a directory
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
# alembic (imported by Optuna's storages) logs each of its plugins at INFO when the Optuna
# sweeper starts: a screenful of "setup plugin" lines before the first trial
logging.getLogger("alembic").setLevel(logging.WARNING)
# torchsnapshot (CKPT_BACKEND=torchsnapshot) logs a table of its scheduler's stages at INFO:
# about 15 lines at every checkpoint save
logging.getLogger("torchsnapshot").setLevel(logging.WARNING)
# torch's fake tensors log their cache statistics at INFO at exit, which torch's own logger
# levels hide unless a Ctrl-C interrupted torch's import before it set them: then three
# lines followed the run's stop line. A filter, which torch's level settings leave alone.
logging.getLogger("torch._subclasses.fake_tensor").addFilter(
    lambda record: record.levelno >= logging.WARNING
)


def run(cfg: DictConfig, output_dir: str | os.PathLike | None = None) -> float:
    """Build the trainer the config describes, train it, evaluate it, write ``summary.json``.

    Returns the mean evaluation return (what a Hydra sweeper optimises).
    """
    from rl_trainers.algorithms import build_trainer

    start = time.perf_counter()
    phase = Phase()
    with stop_signals_outside_training(phase), contextlib.ExitStack() as held:
        distributed = _init_distributed(str(cfg.get("device") or "cpu"))
        out = Path(output_dir) if output_dir is not None else output_dir_of_run()
        if distributed:
            out = shared_run_dir(out)
        first_rank = int(os.environ.get("RANK", "0")) == 0  # data-parallel ranks share out
        with previous_run_config_restored_on_failure(out):  # a refused launch
            if first_rank:
                held.enter_context(run_dir_locked(out))
            check_fresh_run_dir(cfg, out)
            if first_rank:
                warn_default_recipe_on_mujoco(cfg)
            trainer = build_trainer(cfg, out)
        phase.trainer = trainer
        from rl_trainers.algorithms.build import close_trainer

        with late_forwarded_signal_ignored(trainer):
            try:
                return _train_and_summarise(cfg, trainer, out, start, phase)
            finally:
                close_trainer(trainer)


def _launched_with(out: Path) -> str:
    """For a resume that does not fit: the overrides the run in ``out`` was launched with,
    which a resume repeats (empty when unknown)."""
    import shlex

    previous = previous_run_overrides(out)
    if previous is None:
        return ""
    own = [o for o in previous if o.partition("=")[0] not in ("trainer.resume", "hydra.run.dir")]
    words = " ".join(shlex.quote(o) for o in own) or "no overrides"
    return f"\n  the run there was launched with: {words} (resume with the same, plus trainer.resume=true)"


def _init_distributed(device: str) -> bool:
    """``init_distributed`` (torchrun's data parallelism), without loading torch when
    nothing asks for several processes: a config error then prints without that wait."""
    try:
        several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        several = False
    if not several and "torch" not in sys.modules:
        return False  # no process group can have been initialised
    from rl_trainers.configs.validation import resolve_device
    from rl_trainers.core.distributed import init_distributed

    return init_distributed(resolve_device(device))


def _train_and_summarise(
    cfg: DictConfig, trainer, out: Path, start: float, phase: Phase | None = None
) -> float:
    import torch

    from rl_trainers.algorithms.build import resume_checkpoint
    from rl_trainers.core.checkpoint import CheckpointError
    from rl_trainers.core.loop import StoppedAtOnce

    lead = trainer.rank == 0  # data-parallel: only rank 0 prints, evaluates and summarises
    ckpt = resume_checkpoint(cfg, out)
    if ckpt is not None:
        with previous_run_config_restored_on_failure(out):  # a checkpoint that does not fit
            try:
                ckpt = load_resume_checkpoint(cfg, trainer, ckpt, out)
            except CheckpointError as err:
                hint = _launched_with(out)
                if not hint:
                    raise
                raise type(err)(f"{err}{hint}") from None
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
    time_before = trainer.train_time_s  # the training time of the launches before this one
    try:
        trainer.train()
    except StoppedAtOnce as stop:  # a second signal: one line, not a traceback
        if lead:
            where = trainer.last_checkpoint or "none was written"
            print(
                f"Stopped at once by a second {signal.Signals(stop.signum).name} at frame "
                f"{trainer.collected_frames} (the batch in progress was dropped); last "
                f"checkpoint: {where}. Continue with: {resume_command(out)}",
                file=sys.stderr,
            )
        raise SystemExit(128 + stop.signum) from None
    # the trainer's clock, which total_train_time_s reads too: equal for a run launched once
    train_time = trainer.train_time_s - time_before
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
        "train_time_s": round(train_time, 3),
        "total_train_time_s": round(trainer.train_time_s, 3),
        "fps": round(session_frames / max(wall_time, 1e-9), 1),
        "num_threads": torch.get_num_threads(),
        # correctly rounded (math.fsum): ten returns of 1.1 average to 1.1, as rl-trainers eval
        # reports them too
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_std": statistics.pstdev(returns),
        "eval_episodes": len(returns),
        "eval_returns": [round(float(r), 3) for r in returns],
        "finished_early": trainer.finished_early,
        "output_dir": str(out),
    }
    if trainer.world_size > 1:  # data-parallel: frames and fps count every rank's frames
        summary["world_size"] = trainer.world_size
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return summary["eval_return_mean"]


def check_ranks_in_sync(trainer) -> None:
    """Data-parallel: raise if the ranks' loss modules (parameters and buffers) differ; rank
    0 prints the common SHA-256 to stderr (``parameters sha256 <hex> on all N ranks``)."""
    from rl_trainers.core.distributed import parameters_digest

    digests = trainer._data_parallel.gather_objects(parameters_digest(trainer.loss_module))
    if len(set(digests)) != 1:
        raise RuntimeError(
            "data-parallel ranks ended with different parameters: "
            + ", ".join(f"rank {r}: {d[:12]}" for r, d in enumerate(digests))
        )
    if trainer.rank == 0:
        print(f"parameters sha256 {digests[0]} on all {len(digests)} ranks", file=sys.stderr)
