"""Where a run writes: Hydra's run directory, shared by every data-parallel rank."""

from __future__ import annotations

from pathlib import Path


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
