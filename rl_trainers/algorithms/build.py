"""Pieces every algorithm trainer shares: building from a config, evaluation, episode logs."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf
from tensordict import TensorDictBase

from rl_trainers.collectors.utils import act_on
from rl_trainers.configs.validation import (
    MULTI_COLLECTORS,
    check_compile_mode,
    collects_in_worker_processes,
)
from rl_trainers.core.loop import TrainerHookBase
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.errors import ComponentError, ConfigError, ConfigWarning
from rl_trainers.modules.device import module_device


def build(cfg: DictConfig, node: str, **kwargs: Any) -> Any:
    """Instantiate ``cfg[node]``; a failure caused by the config becomes a short :class:`ConfigError`.

    Args:
        cfg: the composed root config.
        node: the name of the node to build (``"env"``, ``"loss"``...).
        **kwargs: runtime arguments the node cannot hold (networks, parameters...).
    """
    try:
        return instantiate(cfg[node], **kwargs)
    except InstantiationException as err:
        cause = err.__cause__ or err
        if isinstance(cause, ConfigError):
            raise cause from None
        unusable = _unusable_target(cfg[node], cause)
        if unusable is not None:
            raise ComponentError(node, unusable) from cause
        if isinstance(cause, (ValueError, KeyError, ImportError, TypeError, OSError)):
            raise ComponentError(node, cause) from cause
        raise


def _unusable_target(node: Any, cause: BaseException) -> ImportError | None:
    """A one-line error for a ``_target_`` (a user's own builder, say) that Hydra could not
    import or that is not callable, saying what to give; None for any other failure."""
    message = " ".join(str(cause).split())
    target = node.get("_target_") if isinstance(node, DictConfig) else None
    imported = isinstance(cause, ImportError) and message.startswith(
        ("Error loading", "Error locating target")
    )
    if target is None or not (imported or message.startswith("Expected a callable target")):
        return None
    if imported:  # "Error loading 'x': ModuleNotFoundError(...) Are you sure that ...?"
        message = message.partition(": ")[2] or message
    message = message.partition(" full_key:")[0]
    return ImportError(
        f"_target_={target!r} is not a function or class that can be imported ({message}); "
        "name one as package.module.name, its module importable where the run starts "
        "(on PYTHONPATH or in the working directory)"
    )


def train_env_overrides(cfg: DictConfig) -> dict[str, Any]:
    """Arguments of the training env beyond its ``env`` node (also in collector workers).

    With ``env.normalize_rewards``, the reward normaliser discounts with the algorithm's
    ``loss.gamma`` (as rl-zoo gives ``VecNormalize`` the algorithm's gamma) unless
    ``env.reward_norm_gamma`` is set; with 0.99 for a loss without a gamma.
    """
    if not cfg.env.get("normalize_rewards", False):
        return {}
    if cfg.env.get("reward_norm_gamma") is not None:
        return {}
    loss = cfg.get("loss")
    gamma = loss.get("gamma") if isinstance(loss, DictConfig) else None
    return {"reward_norm_gamma": 0.99 if gamma is None else float(gamma)}


class EnvFromConfig:
    """Builds the training env from its config node (picklable; used in collector workers).

    Args:
        env_cfg: the ``env`` node of the composed config.
        **overrides: fields replaced (:func:`train_env_overrides`).
    """

    def __init__(self, env_cfg: DictConfig, **overrides: Any) -> None:
        self.env_cfg = {**OmegaConf.to_container(env_cfg, resolve=True), **overrides}

    def __call__(self):
        return instantiate(self.env_cfg)


def build_collector(cfg: DictConfig, env, policy):
    """The collector node with its env: ``env`` itself, or for multi-process collectors a
    factory each worker calls (``env`` is then closed: it served only to read the specs).

    Multi-process collectors are seeded with ``cfg.seed`` (worker ``i`` continues the seeds
    of worker ``i - 1``; in data-parallel training with the rank's seed, ``rank_seed``).
    """
    from rl_trainers.core.distributed import rank_seed

    total = cfg.trainer.total_frames
    if collects_in_worker_processes(cfg):
        collector = build(
            cfg,
            "collector",
            create_env_fn=EnvFromConfig(cfg.env, **train_env_overrides(cfg)),
            policy=policy,
            total_frames=total,
        )
        collector.set_seed(rank_seed(cfg.seed))
        env.close()
        return collector
    # on an accelerator the policy acts where its networks live, and batches arrive where
    # the loss runs (stacked on the CPU, moved once per batch rather than once per step)
    on_device = {}
    if str(cfg.device) != "cpu" and cfg.collector.get("device") is None:
        on_device["device"] = str(cfg.device)
    return build(
        cfg, "collector", create_env_fn=env, policy=policy, total_frames=total, **on_device
    )


class LogEpisodeReturn(TrainerHookBase):
    """Logs the return and length of the training episodes that ended in each batch.

    Reads ``("next", "episode_reward")`` (the ``RewardSum`` transform) where
    ``("next", "done")`` is set; logs nothing for a batch in which no episode ended.
    """

    def __init__(self, log_pbar: bool = True) -> None:
        self.log_pbar = log_pbar
        self._warned = False

    def register(self, trainer, name: str = "log_episode_return") -> None:
        trainer.register_op("pre_steps_log", self)

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        done = batch.get(("next", "done"))
        if not done.any():
            return None
        returns = batch.get(("next", "episode_reward"), None)
        if returns is None:  # an env built by hand, without the app's RewardSum
            if not self._warned:
                self._warned = True
                warnings.warn(
                    "train/episode_return is not logged: the batches have no "
                    "('next', 'episode_reward') entry; add the RewardSum transform to the "
                    "env (TransformedEnv(env, RewardSum())) to log it",
                    stacklevel=2,
                )
            return None
        returns = returns[done]
        out: dict[str, Any] = {"train/episode_return": returns.mean()}
        step_count = batch.get(("next", "step_count"), None)
        if step_count is not None:
            out["train/episode_length"] = step_count[done].float().mean()
        out["log_pbar"] = self.log_pbar
        return out


#: Steps after which an evaluation episode that has not ended is counted as ended (envs
#: without a time limit, e.g. CliffWalking, would otherwise never finish a stuck episode).
EVAL_MAX_EPISODE_STEPS = 10_000


def evaluate_episodes(
    env,
    policy,
    episodes: int,
    deterministic: bool = True,
    max_episode_steps: int = EVAL_MAX_EPISODE_STEPS,
    video=None,
    lengths: list[int] | None = None,
) -> list[float]:
    """Returns of ``episodes`` complete episodes of ``policy`` on the batched ``env``.

    Each sub-env contributes its episodes in turn from a fresh reset, so short episodes are
    not over-represented. Rewards are summed as the env gives them (build the evaluation
    env without reward scaling). An episode still running after ``max_episode_steps``
    steps is counted with the return it has so far (with a warning naming
    ``env.max_episode_steps``, the time limit to set for such envs).

    ``lengths``, when given, is filled with the episodes' lengths (in steps), in the order
    of the returns.

    ``video`` (an :class:`~rl_trainers.algorithms.eval_video.EpisodeVideo`)
    records sub-env 0's first episode: its ``start()`` is called after the reset, its
    ``step(ended)`` after every step.
    """
    num_envs = env.batch_size.numel() if len(env.batch_size) else 1
    per_env = -(-episodes // num_envs)
    device = module_device(policy, torch.device("cpu"))
    if device.type != "cpu":  # the env's CPU TensorDicts go to the policy and back
        policy = functools.partial(act_on, policy, device=device)
    mode = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
    returns: list[list[float]] = [[] for _ in range(num_envs)]
    steps: list[list[int]] = [[] for _ in range(num_envs)]
    running = torch.zeros(num_envs)
    lengths_now = torch.zeros(num_envs, dtype=torch.long)
    cut = 0
    td = env.reset()
    if video is not None:
        video.start()
    with torch.no_grad(), set_exploration_type(mode):
        while min(len(r) for r in returns) < per_env:
            td = policy(td)
            td, next_td = env.step_and_maybe_reset(td)
            running += td.get(("next", "reward")).reshape(num_envs)
            lengths_now += 1
            done = td.get(("next", "done")).reshape(num_envs)
            stuck = ~done & (lengths_now >= max_episode_steps)
            cut += int(stuck.sum())
            for i in (done | stuck).nonzero().flatten().tolist():
                returns[i].append(float(running[i]))
                steps[i].append(int(lengths_now[i]))
                running[i] = 0.0
                lengths_now[i] = 0
            if video is not None:
                video.step(ended=bool(done[0] or stuck[0]))
            td = next_td
    if cut:
        warnings.warn(
            f"{cut} evaluation episode(s) had not ended after {max_episode_steps} steps and "
            "were counted with their return so far; give the env a time limit "
            "(env.max_episode_steps=...).",
            ConfigWarning,
            stacklevel=2,
        )
    flat = [r for env_returns in returns for r in env_returns[:per_env]]
    if lengths is not None:
        lengths[:] = [n for env_steps in steps for n in env_steps[:per_env]][:episodes]
    return flat[:episodes]


def resolve_logger(cfg: DictConfig, output_dir: Path):
    """Build the logger node with its relative directories placed under the run directory,
    guarded against a backend failing mid-run (``logger.on_error``; CSV fallback in
    ``<run dir>/logs``)."""
    from rl_trainers.record.loggers.guard import guard_logger

    check_wandb_login(cfg)
    check_tracking_server(cfg)
    node = OmegaConf.to_container(cfg.logger, resolve=True)
    on_error = node.pop("on_error", "continue")  # the guard's setting, not the backend's
    backend = build({"logger": node}, "logger", **check_logger_dirs(cfg, output_dir))
    return guard_logger(backend, on_error, fallback_dir=output_dir / "logs")


def mlflow_tracking_uri(cfg_logger: DictConfig) -> str | None:
    """The MLflow logger's tracking location: ``logger.tracking_uri``; where it is null,
    ``MLFLOW_TRACKING_URI`` (as MLflow itself reads it), else ``mlruns``. None for the other
    loggers."""
    if "tracking_uri" not in cfg_logger:
        return None
    uri = cfg_logger.get("tracking_uri")
    if uri is None:
        uri = os.environ.get("MLFLOW_TRACKING_URI") or "mlruns"
    return str(uri)


def check_tracking_server(cfg: DictConfig, timeout: float = 5.0) -> None:
    """An ``http(s)://`` MLflow tracking URI must answer before training: MLflow's client
    retries a server that is down for minutes, then fails mid-run."""
    import socket
    from urllib.parse import urlsplit

    uri = mlflow_tracking_uri(cfg.logger)
    if uri is None or not uri.startswith(("http://", "https://")):
        return
    parts = urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as err:
        field = "logger.tracking_uri"
        if cfg.logger.get("tracking_uri") is None:
            field += " (from MLFLOW_TRACKING_URI)"
        raise ConfigError(
            field,
            uri,
            f"no server answers at {parts.hostname}:{port} ({err.strerror or err}): start "
            "it (mlflow server ...), or log to a local store, e.g. logger.tracking_uri=mlruns",
        ) from None


def check_wandb_login(cfg: DictConfig) -> None:
    """An online W&B logger needs an API key; without one the run would stop at its first
    log (W&B opens its run then). Checked before training: a :class:`ConfigError`."""
    cfg_logger = cfg.logger
    if not str(cfg_logger.get("_target_", "")).endswith("WandbLogger"):
        return
    if cfg_logger.get("offline") or os.environ.get("WANDB_MODE") in ("offline", "disabled"):
        return
    import wandb

    try:
        wandb.login(verify=False)  # a key from WANDB_API_KEY, netrc or a terminal prompt
    except wandb.errors.UsageError:
        raise ConfigError(
            "logger.offline",
            False,
            "W&B online needs an API key and none is configured: run `wandb login` or set "
            "WANDB_API_KEY, or keep logger.offline=true and upload the run later with "
            "wandb sync",
        ) from None


def check_logger_dirs(cfg: DictConfig, output_dir: Path) -> dict[str, Any]:
    """Check the logger's directories are writable (before anything is built or trained).

    Returns:
        The logger arguments with relative directories placed under ``output_dir``.
    """
    cfg_logger = cfg.logger
    overrides: dict[str, Any] = {}
    for key in ("log_dir", "save_dir"):
        if key in cfg_logger and cfg_logger[key] is not None and not os.path.isabs(cfg_logger[key]):
            overrides[key] = str(output_dir / cfg_logger[key])
    uri = mlflow_tracking_uri(cfg_logger)
    if uri is not None:
        relative = "://" not in uri and not os.path.isabs(uri)
        overrides["tracking_uri"] = str(output_dir / uri) if relative else uri
    for key, value in overrides.items():
        if key != "tracking_uri":
            check_writable(Path(value), f"logger.{key}")
    for key in ("log_dir", "save_dir"):
        if key not in overrides and cfg_logger.get(key):
            check_writable(Path(cfg_logger[key]), f"logger.{key}")
    return overrides


def check_writable(directory: Path, field: str) -> None:
    """Create ``directory`` and write a probe file; a failure is a :class:`ConfigError`.

    Args:
        directory: the directory the run will write to.
        field: the config field that chose it (named in the error).
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".write_test_{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        raise ConfigError(
            field, str(directory), f"a writable directory ({type(err).__name__}: {err})"
        ) from None


def check_output_dir(output_dir: Path, cfg: DictConfig | None = None) -> None:
    """Fail before anything is built if the run, checkpoint or logger directories are not
    writable (given ``cfg``, the logger's directories are checked too)."""
    check_writable(output_dir, "hydra.run.dir")
    check_writable(output_dir / "checkpoints", "hydra.run.dir")
    if cfg is not None and "logger" in cfg:
        check_logger_dirs(cfg, output_dir)


# ----------------------------------------------------------------------------- resume

#: Config entries that must be equal for a checkpoint to be loadable (they shape the
#: networks, the env's state or the buffer); everything else (lr, total_frames...) may change.
FINGERPRINT_FIELDS = (
    "algorithm",
    "env.env_name",
    "env.num_envs",
    "env.normalize_observations",
    "env.normalize_rewards",
    "env.from_pixels",
    "env.frame_skip",
    "env.image_size",
    "env.grayscale",
    "env.frame_stack",
    "env.transforms",
    "network",
    "model.policy._target_",
    "loss._target_",
    "optimizer._target_",
    "collector._target_",
    "collector.num_workers",
    "replay_buffer.size",
    "replay_buffer.storage",
    "replay_buffer.sampler",
)


_NOT_STRUCTURAL = frozenset({"network.orthogonal_init"})


def checkpoint_metadata(cfg: DictConfig) -> dict[str, Any]:
    """The flat ``{field: value}`` of :data:`FINGERPRINT_FIELDS` present in ``cfg``."""
    out: dict[str, Any] = {}
    for field in FINGERPRINT_FIELDS:
        value = OmegaConf.select(cfg, field, default=None)
        if value is None:
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=True)
        for key, sub in _flatten(value, field).items():
            # unset entries (None, []) count as absent, as in checkpoints made before them
            if key not in _NOT_STRUCTURAL and sub is not None and sub != ():
                out[key] = sub
    return out


def _flatten(d: Any, prefix: str) -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}"))
        return out
    if isinstance(d, list):
        return {prefix: tuple(d)}
    return {prefix: d}


def resume_checkpoint(cfg: DictConfig, output_dir: Path) -> Path | None:
    """The checkpoint ``trainer.resume_from``/``trainer.resume`` ask for, or None.

    ``resume_from`` is a file (or directory for ``CKPT_BACKEND=torchsnapshot``), relative to
    the directory the app was launched from (also with ``hydra.job.chdir=true``), the
    working directory or the run directory; ``resume=true`` takes the latest checkpoint
    in ``<run dir>/checkpoints`` and starts from scratch if there is none yet (so a requeued
    cluster job can always pass it).

    In data-parallel training every rank gets its own file (``rank_checkpoint_path``): for
    ``resume_from`` the counterpart of the given (rank 0) file, for ``resume=true`` the
    latest save that every rank holds.
    """
    from rl_trainers.core.distributed import is_distributed

    if is_distributed():
        return _rank_resume_checkpoint(cfg, output_dir)
    return _resume_checkpoint(cfg, output_dir)


def _resume_checkpoint(cfg: DictConfig, output_dir: Path) -> Path | None:
    from rl_trainers.core.checkpoint import latest_checkpoint

    loop = cfg.trainer
    if loop.get("resume_from"):
        path = Path(str(loop.resume_from)).expanduser()
        if not path.is_absolute():
            bases = [_launch_dir(), Path.cwd(), output_dir]
            path = next((b / path for b in bases if (b / path).exists()), path)
        if not path.exists():
            raise ConfigError(
                "trainer.resume_from", str(loop.resume_from), "an existing checkpoint"
            )
        return path
    if loop.get("resume"):
        found = latest_checkpoint(output_dir / "checkpoints" / "trainer.pt")
        if found is None:
            print(
                f"trainer.resume=true: no checkpoint in {output_dir / 'checkpoints'} yet, "
                "starting a new run.",
                file=sys.stderr,
            )
        return found
    return None


def _rank_resume_checkpoint(cfg: DictConfig, output_dir: Path) -> Path | None:
    """:func:`resume_checkpoint` for one rank of a data-parallel run."""
    from rl_trainers.core.checkpoint import CheckpointError, list_checkpoints
    from rl_trainers.core.distributed import DataParallel, rank_checkpoint_path

    dp = DataParallel()
    rank, world = dp.rank, dp.world_size
    loop = cfg.trainer
    how = "resume it with torchrun --nproc_per_node=<the number of processes that saved it>"
    if loop.get("resume_from"):
        path = rank_checkpoint_path(_resume_checkpoint(cfg, output_dir), rank)
        exists = dp.gather_objects(path.exists())
        if not all(exists):
            missing = [r for r, ok in enumerate(exists) if not ok]
            raise CheckpointError(
                f"trainer.resume_from={loop.resume_from} has no file for rank(s) {missing} of "
                f"this {world}-process run (rank r > 0 reads <dir>/rank<r>/<name>): {how}."
            )
        return path
    if not loop.get("resume"):
        return None
    alias = rank_checkpoint_path(output_dir / "checkpoints" / "trainer.pt", rank)
    saved = dp.gather_objects([frames for frames, _ in list_checkpoints(alias)])
    if not saved[0]:  # rank 0 has none: a new run (as without data-parallel training)
        if rank == 0:
            print(
                f"trainer.resume=true: no checkpoint in {output_dir / 'checkpoints'} yet, "
                "starting a new run.",
                file=sys.stderr,
            )
        return None
    common = set.intersection(*(set(frames) for frames in saved))
    if not common:
        raise CheckpointError(
            f"{output_dir / 'checkpoints'} holds no save that all {world} ranks of this run "
            f"have (checkpoints per rank: {[len(f) for f in saved]}): {how}."
        )
    frames = max(common)
    return dict((n, p) for n, p in list_checkpoints(alias))[frames]


def _launch_dir() -> Path:
    """The directory the app was started from (Hydra's ``runtime.cwd``), else the cwd."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.cwd)
    return Path.cwd()


class EnvStateModule:
    """Checkpoints an env's statistics and its sub-envs' internal state (an eval env's RNGs).

    Args:
        env: an rl_trainers env (``GymEnv``, ``TransformedEnv``...).
    """

    def __init__(self, env) -> None:
        self.env = env

    def state_dict(self) -> dict[str, Any]:
        from rl_trainers.envs.libs.gym_state import get_env_state

        return {"env": self.env.state_dict(), "internal": get_env_state(self.env)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        from rl_trainers.envs.libs.gym_state import set_env_state

        self.env.load_state_dict(state_dict["env"])
        # every evaluation reseeds the env (``evaluation_seed``), so a state that cannot be
        # restored (e.g. ``eval.episodes`` changed on resume) changes no result: no warning
        set_env_state(self.env, state_dict.get("internal"), warn=False)


def register_run_state(trainer, cfg: DictConfig, logger, eval_env) -> None:
    """What every algorithm trainer adds for resume: metadata, logger and eval-env state.

    Multi-process collectors also get their workers' policy weights refreshed after every
    batch's optimisation steps (``post_steps``).
    """
    collector = trainer.collector
    if type(collector).__name__ in MULTI_COLLECTORS:
        trainer.register_op("post_steps", collector.update_policy_weights_)
    trainer.checkpoint_metadata = checkpoint_metadata(cfg)
    if logger is not None and hasattr(logger, "state_dict"):
        trainer.register_module("logger", logger)
    if eval_env is not None:
        trainer.register_module("eval_env", EnvStateModule(eval_env))


def close_trainer(trainer) -> None:
    """Release what an algorithm trainer built: collector workers, envs, logger files."""
    collector = getattr(trainer, "collector", None)
    for obj in (
        collector,
        getattr(collector, "env", None),
        getattr(trainer, "eval_env", None),
    ):
        for method in ("shutdown", "close"):
            fn = getattr(obj, method, None)
            if callable(fn) and not getattr(obj, "is_closed", False):
                try:
                    fn()
                except Exception as err:  # noqa: BLE001 - best effort at the end of a run
                    print(f"warning: closing {type(obj).__name__} failed: {err}", file=sys.stderr)
                break
    logger = getattr(trainer, "logger", None)
    close = getattr(logger, "close", None)
    if callable(close):
        close()


def set_num_threads(requested: int) -> int:
    """Set torch's intra-op threads: ``requested``, or one for ``0`` (the default).

    One thread is the default for every network the recipes build. Measured on a 2-core
    machine, SAC HalfCheetah's 20k-frame benchmark (256-wide MLPs, ``train_time_s``): 120 s
    on one thread against 196 s on two whose OpenMP threads wait passively, quiet, and 114 s
    against 123 s with another run holding a core; PPO's 64-wide networks gain nothing from a
    second thread. Two spinning threads (OpenMP's own wait policy) are faster on a quiet
    machine but stall when another process takes a core (under 2 frames/s against 15 on one
    thread): ask for them (``trainer.num_threads=2``) only on cores the run has to itself.
    """
    n = requested if requested > 0 else 1
    torch.set_num_threads(n)
    return n


def compile_loss(loss: torch.nn.Module, mode: str, device: str) -> None:
    """Compile ``loss`` in place with ``torch.compile`` (its backward too, through AOTAutograd).

    The module keeps its parameters and state-dict keys, so checkpoints and the optimizer
    are unaffected; the collector's policy is the same actor object, acting eagerly.
    ``reduce-overhead`` also replays the compiled graphs with CUDA graphs, so it needs a
    CUDA device.
    """
    check_compile_mode(mode)
    if mode == "reduce-overhead" and torch.device(device).type != "cuda":
        raise ConfigError(
            "trainer.compile_mode",
            mode,
            "CUDA graphs need device=cuda; on CPU use default or max-autotune-no-cudagraphs",
        )
    loss.compile(mode=mode)


def plain_config(cfg: DictConfig) -> dict:
    """The resolved config as plain containers (for hyperparameter logging), without the
    ``trainer._config_`` link to the root config."""
    out: dict = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    loop = out.get("trainer")
    if isinstance(loop, dict):
        loop.pop("_config_", None)
    return out


def orthogonal_init_(module: torch.nn.Module, output_gain: float) -> None:
    """Orthogonal weights (gain sqrt(2) for hidden layers, ``output_gain`` for the last), zero
    biases (a layer without a bias, as a user's own network may have, keeps none)."""
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linears):
        gain = output_gain if i == len(linears) - 1 else 2**0.5
        torch.nn.init.orthogonal_(layer.weight, gain=gain)
        if layer.bias is not None:
            torch.nn.init.zeros_(layer.bias)
