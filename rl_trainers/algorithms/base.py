"""AlgorithmTrainer: what every algorithm trainer adds to the shared loop, and how it is built.

An algorithm trainer (PPOTrainer, SACTrainer, ...) subclasses :class:`AlgorithmTrainer`
and writes only its own hooks and networks; episode-return logging, the learning-rate
schedule, evaluation, and building the env, optimizer, collector and logger from a config
live here once.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from tensordict import TensorDictBase

from rl_trainers.algorithms.build import (
    LogEpisodeReturn,
    build,
    build_collector,
    check_output_dir,
    compile_loss,
    evaluate_episodes,
    orthogonal_init_,
    plain_config,
    register_run_state,
    resolve_logger,
    set_num_threads,
    train_env_overrides,
)
from rl_trainers.algorithms.eval_video import (
    EpisodeVideo,
    check_renders,
    check_video_config,
    eval_env_overrides,
    rendering_setup,
    video_fps,
)
from rl_trainers.core.distributed import (
    get_rank,
    get_world_size,
    rank_seed,
)
from rl_trainers.core.loop import Trainer
from rl_trainers.envs.transforms.transforms import running_statistics
from rl_trainers.errors import ComponentError, ConfigError

#: Evaluations are seeded with ``cfg.seed + EVAL_SEED_OFFSET``.
EVAL_SEED_OFFSET = 10_000


class AlgorithmTrainer(Trainer):
    """A :class:`Trainer` with episode-return logging, an optional lr schedule and evaluation.

    Args:
        frames_per_batch: frames in each collected batch (sets the evaluation period).
        lr_scheduler: stepped once per batch at ``post_steps`` (checkpointed).
        eval_env: env for evaluations (also used by :meth:`evaluate_final`).
        eval_episodes: episodes per evaluation.
        eval_interval: evaluate every this many frames during training (0: never).
        eval_deterministic: act with the policy's mode (else sample) when evaluating.
        eval_seed: if set, every evaluation (periodic and final) first seeds the evaluation
            env and a forked torch RNG with it, so its result depends only on the policy
            (and the copied normaliser statistics): not on earlier evaluations, on whether
            the run was resumed, nor on the training RNG streams (which it leaves untouched).
        eval_video: every evaluation logs its first episode (sub-env 0's) as a video,
            ``eval/video`` at the step of the frames collected so far; needs a ``logger``
            and an ``eval_env`` made with ``render_mode="rgb_array"`` (see
            :mod:`~rl_trainers.algorithms.eval_video`).
        eval_video_fps: the video's frame rate (None: the env's ``render_fps`` over its
            frame skip, else 30).
        eval_video_max_frames: the longest video, in frames.
        eval_stop_at_return: end training (as complete, :meth:`Trainer.finish`) after the
            first periodic evaluation whose mean return is at least this.
        eval_policy: the policy evaluations act with (None: ``loss_module.actor_network``).
        train_logs: log the return (and length) of the training episodes that ended in each
            batch (``train/episode_return``, read from a ``RewardSum``) and the algorithm's
            own ``train/`` values; False for torchrl's form, which logs its own set.
        **trainer_kwargs: the :class:`Trainer` arguments.
    """

    def __init__(
        self,
        *,
        frames_per_batch: int,
        lr_scheduler=None,
        eval_env=None,
        eval_episodes: int = 10,
        eval_interval: int = 0,
        eval_deterministic: bool = True,
        eval_seed: int | None = None,
        eval_video: bool = False,
        eval_video_fps: int | None = None,
        eval_video_max_frames: int = 1000,
        eval_stop_at_return: float | None = None,
        eval_policy=None,
        train_logs: bool = True,
        **trainer_kwargs: Any,
    ) -> None:
        super().__init__(**trainer_kwargs)
        self.eval_policy = eval_policy
        self.frames_per_batch = frames_per_batch
        self.eval_env = eval_env
        self.eval_episodes = eval_episodes
        self.eval_deterministic = eval_deterministic
        self.eval_seed = eval_seed
        self.eval_stop_at_return = eval_stop_at_return
        self.eval_video = None
        self._eval_video_step: int | None = None
        if eval_video:
            if eval_env is None or self.logger is None:
                raise ValueError(
                    "eval_video=True needs an eval_env (made with render_mode='rgb_array') "
                    "and a logger to send the videos to."
                )
            self.eval_video = EpisodeVideo(
                eval_env, self.logger, fps=eval_video_fps, max_frames=eval_video_max_frames
            )
        self.train_logs = train_logs
        if train_logs:
            LogEpisodeReturn().register(self)
        if lr_scheduler is not None:
            self.register_module("lr_scheduler", lr_scheduler)
            self.lr_scheduler = lr_scheduler
            self.register_op("post_steps", self._step_lr_schedule)
        if eval_env is not None and eval_interval > 0:
            # frames of all ranks per batch (data-parallel: only rank 0 has an eval_env)
            every = max(1, eval_interval // (frames_per_batch * self.world_size))
            self.register_op("post_steps_log", self._evaluate, every=every)
            self.log_always.update(("eval/return_mean", "eval/return_std"))
        if self._data_parallel is not None:
            env = getattr(self.collector, "env", None)
            self._vecnorms = _vecnorms(env)
            self._reward_norms = _reward_norms(env)
            if self._vecnorms or self._reward_norms:
                self.register_op("post_steps", self._average_normalizer_stats)

    def _average_normalizer_stats(self) -> None:
        """Data-parallel: give every rank's observation normalisers (``VecNorm``) the mean of
        the ranks' decayed sums, and every rank's reward normalisers (``RewardNorm``) the
        statistics of all ranks' returns (exact: counts, means and variances merged, not
        averaged), so every rank normalises the next batch alike. Each rank keeps its own
        sub-envs' running returns."""
        dp = self._data_parallel
        if self._vecnorms:
            dp.average_(b for t in self._vecnorms for b in t.buffers())
        if self._reward_norms:
            pending = torch.stack([t.pending_statistics() for t in self._reward_norms])
            for norm, total in zip(self._reward_norms, dp.sum(pending), strict=True):
                norm.merge_statistics_(total)

    def _step_lr_schedule(self) -> None:
        """Step the learning-rate schedule, once per batch.

        During a warm-up without updates (the random frames of DQN and SAC) the schedule
        advances before the optimizer's first step. That is intended (the schedule counts
        batches), so PyTorch's warning about the order is muted here.
        """
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before"
            )
            self.lr_scheduler.step()

    @classmethod
    def eval_policy_of(cls, cfg: DictConfig, loss, env):
        """The policy evaluations of a trainer built from ``cfg`` act with, given its loss
        module (what :func:`~rl_trainers.load_policy` rebuilds a trained policy with)."""
        return loss.actor_network

    #: Where the policy of the best periodic evaluation is kept (next to the checkpoints).
    BEST_POLICY_FILE = "best_policy.pt"

    def _evaluate(self, batch: TensorDictBase) -> dict[str, Any]:
        returns = torch.tensor(self.evaluate_final())
        mean = returns.mean()
        self._keep_best_policy(float(mean))
        target = self.eval_stop_at_return
        if target is not None and mean >= target:
            self.finish(f"evaluation return {mean.item():.2f} >= eval.stop_at_return={target}")
        return {"eval/return_mean": mean, "eval/return_std": returns.std(correction=0)}

    def _keep_best_policy(self, mean: float) -> None:
        """Save the policy (the loss module's weights, the exploration state and the
        evaluation env's observation statistics) to ``checkpoints/best_policy.pt`` when
        ``mean`` beats the best periodic evaluation so far (read back from that file after
        a resume)."""
        from rl_trainers.core import checkpoint as ckpt

        if self.save_trainer_file is None or self.rank != 0:
            return
        path = Path(self.save_trainer_file).parent / self.BEST_POLICY_FILE
        best = getattr(self, "_best_eval_return", None)
        if best is None and path.exists():
            try:
                best = float(ckpt.load_checkpoint(path)["eval_return_mean"])
            except (ckpt.CheckpointError, KeyError, TypeError, ValueError):
                best = None
        if best is not None and not mean > best:
            self._best_eval_return = best
            return
        self._best_eval_return = mean
        modules = {"loss_module": self.loss_module.state_dict()}
        exploration = getattr(self, "exploration", None)
        if exploration is not None and hasattr(exploration, "state_dict"):
            modules["exploration"] = exploration.state_dict()
        state = {
            "format": ckpt.CKPT_FORMAT,
            "version": ckpt.CKPT_VERSION,
            "kind": "best_policy",
            "meta": dict(self.checkpoint_metadata),
            "modules": modules,
            "env": self.eval_env.state_dict() if self.eval_env is not None else {},
            "frames": int(self.collected_frames),
            "eval_return_mean": mean,
        }
        with _checkpoint_backend("torch"):  # one small file, whatever CKPT_BACKEND says
            ckpt.save_checkpoint(state, path)

    def evaluate_final(self) -> list[float]:
        """Returns of ``eval_episodes`` episodes on the evaluation env.

        An observation normaliser in the evaluation env first takes the training env's
        statistics, frozen, so the policy sees what it was trained on. With ``eval_seed``
        the evaluation env is seeded with it (the first reset uses the seed) and the policy
        samples from a torch RNG seeded with it inside ``torch.random.fork_rng``, so every
        evaluation of the same weights gives the same returns, and the training's RNG
        states are the same after it as before.
        """
        copy_normalizer_stats(self.collector, self.eval_env)
        if self.eval_seed is None:
            return self._run_evaluation()
        cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.eval_seed)
            self.eval_env.set_seed(self.eval_seed)
            return self._run_evaluation()

    def _run_evaluation(self) -> list[float]:
        step = int(self.collected_frames)
        # the final evaluation right after a periodic one at the same frame count plays the
        # same episode with the same weights: one video per step
        video = self.eval_video if self._eval_video_step != step else None
        returns = evaluate_episodes(
            self.eval_env,
            self.loss_module.actor_network if self.eval_policy is None else self.eval_policy,
            self.eval_episodes,
            deterministic=self.eval_deterministic,
            video=video,
        )
        if video is not None:
            video.dump(step=step)
            self._eval_video_step = step
        return returns


@contextlib.contextmanager
def _checkpoint_backend(backend: str):
    """``CKPT_BACKEND`` set to ``backend`` for the block."""
    import os

    before = os.environ.get("CKPT_BACKEND")
    os.environ["CKPT_BACKEND"] = backend
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CKPT_BACKEND", None)
        else:
            os.environ["CKPT_BACKEND"] = before


def copy_normalizer_stats(collector, target_env) -> None:
    """Give ``target_env``'s observation normalisers the statistics of the training env's
    (``collector``'s env, or a multi-process collector's shared ones), frozen."""
    from rl_trainers.envs import VecNorm

    sources = getattr(collector, "running_statistics", None)
    if sources is None:
        sources = running_statistics(getattr(collector, "env", None))
    targets = [t for t in running_statistics(target_env) if isinstance(t, VecNorm)]
    for src, dst in zip([t for t in sources if isinstance(t, VecNorm)], targets):
        dst.load_state_dict(src.state_dict())
        dst.freeze()


def _vecnorms(env) -> list:
    from rl_trainers.envs import VecNorm

    return [t for t in running_statistics(env) if isinstance(t, VecNorm)]


def _reward_norms(env) -> list:
    from rl_trainers.envs import RewardNorm

    return [t for t in running_statistics(env) if isinstance(t, RewardNorm)]


@dataclass
class RunEnvs:
    """The training env (seeded) and the evaluation env (seeded apart, unscaled rewards)."""

    env: Any
    eval_env: Any


def check_network_fits_env(cfg: DictConfig) -> None:
    """Pixel observations need the ConvNet encoder (``network=convnet``), and it needs them."""
    from_pixels = bool(cfg.env.get("from_pixels", False))
    has_encoder = cfg.network.get("encoder") is not None
    if from_pixels and not has_encoder:
        raise ConfigError(
            "env.from_pixels",
            True,
            "frames need a convolutional encoder: add network=convnet",
        )
    if has_encoder and not from_pixels:
        raise ConfigError(
            "network",
            "convnet",
            "its ConvNet encoder reads rendered frames: add env.from_pixels=true "
            "(or use network=mlp)",
        )


def build_model(cfg: DictConfig, name: str, env) -> torch.nn.Module:
    """The ``model.<name>`` node built for ``env``'s specs with the ``network`` node.

    A policy kind that cannot produce the env's actions (``model/policy=categorical`` on a
    continuous env) is a short :class:`ConfigError` naming what fits.
    """
    from rl_trainers.modules import PolicyKindError

    check_action_bounds(cfg, name, env)
    try:
        return build(
            cfg.model,
            name,
            observation_spec=env.observation_spec,
            action_spec=env.action_spec,
            network=cfg.network,
            _recursive_=False,
        )
    except ComponentError as err:
        if isinstance(err.cause, PolicyKindError):
            kind = err.cause
            raise ConfigError(
                f"model.{name}",
                kind.kind,
                f"{cfg.env.env_name} has {kind.actions} actions; use model/{name}={kind.fits}",
            ) from None
        raise ComponentError(f"model.{name}", err.cause) from err.cause


#: The app's builders of policies that squash actions into the env's bounds.
_SQUASHING_BUILDERS = {
    "rl_trainers.modules.make_policy_model": "auto",
    "rl_trainers.modules.make_tanh_normal_model": "tanh_normal",
    "rl_trainers.modules.make_deterministic_model": "deterministic",
}


def check_action_bounds(cfg: DictConfig, name: str, env) -> None:
    """A :class:`ConfigError` for a policy squashing actions into the env's bounds (TanhNormal,
    the tanh of TD3's and DDPG's actor) when those bounds are finite in some action
    dimensions and not in others: squashed into an infinite range, its actions are NaN."""
    node = cfg.model.get(name) if isinstance(cfg.get("model"), DictConfig) else None
    target = node.get("_target_") if isinstance(node, DictConfig) else None
    kind = _SQUASHING_BUILDERS.get(str(target))
    if kind is None or (kind == "tanh_normal" and node.get("use_sde", False)):
        return
    spec = env.action_spec
    low, high = getattr(spec, "low", None), getattr(spec, "high", None)
    if not isinstance(low, torch.Tensor) or not isinstance(high, torch.Tensor):
        return
    finite = torch.isfinite(low) & torch.isfinite(high)
    if bool(finite.all()) or not bool(finite.any()):
        return
    space = getattr(getattr(env, "base_env", env), "single_action_space", spec)
    if kind == "deterministic" or str(cfg.get("algorithm")) == "sac":
        instead = ""
    else:
        instead = (
            ", or use model/policy=normal (an unsquashed Gaussian whose actions the env "
            "clips to its bounds)"
        )
    raise ConfigError(
        "env.env_name",
        cfg.env.env_name,
        f"its action space {space} is bounded in some dimensions and not in others, and the "
        f"{kind} policy (model.{name}) squashes actions into the bounds, which must then be "
        "finite in every dimension: give the env finite bounds in each (e.g. a large one "
        f"where it has none) or in none{instead}",
    )


def build_actor_critic(cfg: DictConfig, env) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The ``model.policy`` and ``model.critic`` nodes built for ``env`` (policy first), with
    orthogonal weights when ``network.orthogonal_init`` is set."""
    actor = build_model(cfg, "policy", env)
    critic = build_model(cfg, "critic", env)
    if cfg.network.orthogonal_init:
        orthogonal_init_(actor, output_gain=0.01)
        orthogonal_init_(critic, output_gain=1.0)
    return actor, critic


def require_continuous_actions(algorithm: str, cfg: DictConfig, env) -> None:
    """Stop with a ConfigError naming the discrete-action trainers if ``env``'s actions are
    discrete (SAC, TD3, DDPG)."""
    from rl_trainers.modules import spec_kind

    if spec_kind(env.action_spec) in ("one_hot", "categorical"):
        raise ConfigError(
            "env.env_name",
            cfg.env.env_name,
            f"{algorithm} needs an environment with continuous (Box) actions; train discrete "
            "ones with ppo, dqn, a2c or pg (rl-trainers ppo ..., or "
            "sota-implementations/ppo_trainer/train.py)",
        )


#: The gymnasium action spaces each algorithm acts in, and what acts in each.
ALGORITHM_ACTION_SPACES: dict[str, str] = {
    "ppo": "Discrete (a categorical policy) and Box (a tanh_normal policy)",
    "a2c": "Discrete (a categorical policy) and Box (a tanh_normal policy)",
    "pg": "Discrete (a categorical policy) and Box (a tanh_normal policy)",
    "sac": "Box (a tanh_normal policy)",
    "td3": "Box (a deterministic policy)",
    "ddpg": "Box (a deterministic policy)",
    "dqn": "Discrete (one Q-value per action)",
}


def unsupported_action_space(cfg: DictConfig, space: Any) -> ConfigError:
    """The error for an env whose action space (``MultiDiscrete``, ``MultiBinary``, ``Text``,
    ``Tuple``...) no policy of the algorithm acts in."""
    algorithm = str(cfg.algorithm)
    return ConfigError(
        "env.env_name",
        cfg.env.env_name,
        f"its action space {space} is not supported: {algorithm.upper()} acts in "
        f"{ALGORITHM_ACTION_SPACES[algorithm]} spaces; {_action_space_advice(algorithm, space)}",
    )


def _action_space_advice(algorithm: str, space: Any) -> str:
    """What to do with an env acting in ``space``, which ``algorithm`` does not act in."""
    from gymnasium import spaces

    continuous = "Discrete" not in ALGORITHM_ACTION_SPACES[algorithm]
    if isinstance(space, spaces.MultiDiscrete | spaces.MultiBinary):
        advice = (
            "wrap the env (a gymnasium.ActionWrapper in its module) to act in one "
            "Discrete(n) over every combination of its actions (np.unravel_index maps an "
            "index back)"
        )
        return advice + ", and train it with ppo, dqn, a2c or pg" if continuous else advice
    return (
        "wrap the env (a gymnasium.ActionWrapper in its module) to act in one Box "
        "(continuous actions) or one Discrete space"
    )


def build_train_env(cfg: DictConfig):
    """The training env; an action space no policy acts in is a :class:`ConfigError`."""
    from rl_trainers.envs.libs.gym import UnsupportedActionSpaceError
    from rl_trainers.modules import spec_kind

    try:
        env = build(cfg, "env", **train_env_overrides(cfg))
    except ComponentError as err:
        if isinstance(err.cause, UnsupportedActionSpaceError):
            raise unsupported_action_space(cfg, err.cause.space) from None
        raise
    try:
        spec_kind(env.action_spec)  # refuses the multi-action specs (MultiDiscrete...)
    except ValueError:
        space = getattr(getattr(env, "base_env", env), "single_action_space", env.action_spec)
        env.close()
        raise unsupported_action_space(cfg, space) from None
    return env


def prepare_run(cfg: DictConfig, output_dir: Path) -> RunEnvs:
    """The first steps of every build: check the run directory, seed, set threads and the
    allocator, make envs.

    Seeding happens here, before any network is built. In data-parallel training rank ``r``
    seeds with ``seed + r * RANK_SEED_OFFSET`` (rank 0 as a single process; the others'
    initial weights are replaced by rank 0's) and only rank 0 builds the evaluation env.
    """
    from rl_trainers.algorithms.components import seed_everything
    from rl_trainers.algorithms.malloc import keep_freed_memory

    check_output_dir(output_dir, cfg)
    check_network_fits_env(cfg)
    check_video_config(cfg)
    seed = rank_seed(cfg.seed)
    seed_everything(seed)
    set_num_threads(cfg.trainer.num_threads)
    if cfg.trainer.keep_freed_memory:
        keep_freed_memory()
    env = build_train_env(cfg)
    env.set_seed(seed)
    if get_rank() != 0:  # only rank 0 evaluates
        return RunEnvs(env, None)
    video = bool(cfg.eval.get("video", False))
    with rendering_setup(video):  # only the evaluation env renders, and only for videos
        eval_env = build(
            cfg,
            "env",
            num_envs=cfg.eval.episodes,
            reward_scale=1.0,
            normalize_rewards=False,
            **eval_env_overrides(cfg),
        )
        if video:
            check_renders(eval_env, cfg.env.env_name)
    eval_env.set_seed(evaluation_seed(cfg))
    return RunEnvs(env, eval_env)


def evaluation_seed(cfg: DictConfig) -> int:
    """The seed of every evaluation: ``seed + 10000`` (apart from the training env's seeds)."""
    return int(cfg.seed) + EVAL_SEED_OFFSET


class SchedulerList:
    """Several lr schedules stepped together (one per optimizer), checkpointed as one."""

    def __init__(self, schedulers: list) -> None:
        self.schedulers = list(schedulers)

    def step(self) -> None:
        for scheduler in self.schedulers:
            scheduler.step()

    def state_dict(self) -> dict[str, Any]:
        return {"schedulers": [s.state_dict() for s in self.schedulers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for scheduler, state in zip(self.schedulers, state_dict["schedulers"], strict=True):
            scheduler.load_state_dict(state)


def finish_build(
    trainer_class: type[AlgorithmTrainer],
    cfg: DictConfig,
    output_dir: Path,
    envs: RunEnvs,
    loss,
    *,
    policy=None,
    eval_policy=None,
    param_groups: dict[str, list[torch.nn.Parameter]] | None = None,
    **algorithm_kwargs: Any,
) -> AlgorithmTrainer:
    """The last steps of every build: optimizer(s), lr schedule, collector, logger, trainer.

    Args:
        trainer_class: the algorithm trainer to construct.
        cfg: the composed root config.
        output_dir: the run directory (logs and checkpoints go under it).
        envs: from :func:`prepare_run`.
        loss: the loss module.
        policy: the collector's exploration policy (e.g. the actor followed by an
            epsilon-greedy or noise module); None: ``loss.actor_network``.
        eval_policy: the policy evaluations act with (deterministically: exploration
            modules are inactive then); None: ``loss.actor_network``.
        param_groups: one optimizer per entry (name -> parameters), each built from the
            ``optimizer`` node and passed to the trainer as ``optimizers`` (a dict; its
            ``optimizer`` argument is then None), each with its own lr schedule; None: one
            optimizer over ``loss.parameters()``.
        **algorithm_kwargs: the algorithm's own constructor arguments.
    """
    if str(cfg.device) != "cpu":  # networks, losses and their optimisers on the accelerator
        for module in (loss, policy, eval_policy):
            if isinstance(module, torch.nn.Module):
                module.to(cfg.device)
    if cfg.trainer.compile:
        compile_loss(loss, cfg.trainer.compile_mode, cfg.device)
    frames_per_batch = cfg.collector.frames_per_batch
    rank, world_size = get_rank(), get_world_size()
    # batches of each rank: total_frames counts the frames of every rank
    num_batches = -(-cfg.trainer.total_frames // (frames_per_batch * world_size))
    if param_groups is None:
        optimizer = build(cfg, "optimizer", params=list(loss.parameters()))
        optimizers = {"optimizer": optimizer}
    else:
        optimizer = None
        optimizers = {
            name: build(cfg, "optimizer", params=list(p)) for name, p in param_groups.items()
        }
        algorithm_kwargs["optimizers"] = optimizers
    scheduler = None
    if cfg.lr_scheduler.kind != "constant":
        schedulers = [
            build(cfg, "lr_scheduler", optimizer=opt, total_steps=num_batches)
            for opt in optimizers.values()
        ]
        scheduler = schedulers[0] if len(schedulers) == 1 else SchedulerList(schedulers)
    collector = build_collector(cfg, envs.env, loss.actor_network if policy is None else policy)
    logger = None
    if rank == 0:  # data-parallel: rank 0 logs
        logger = resolve_logger(cfg, output_dir)
        logger.log_hparams(plain_config(cfg))
    has_eval_env = envs.eval_env is not None
    loop = cfg.trainer
    trainer = trainer_class(
        collector=collector,
        total_frames=loop.total_frames,
        loss_module=loss,
        optimizer=optimizer,
        frames_per_batch=frames_per_batch,
        lr_scheduler=scheduler,
        eval_env=envs.eval_env,
        eval_episodes=cfg.eval.episodes,
        eval_interval=cfg.eval.interval,
        eval_deterministic=cfg.eval.deterministic,
        eval_seed=evaluation_seed(cfg),
        eval_video=has_eval_env and bool(cfg.eval.get("video", False)),
        eval_video_fps=video_fps(cfg, envs.eval_env) if has_eval_env else None,
        eval_video_max_frames=cfg.eval.get("video_max_frames", 1000),
        eval_stop_at_return=cfg.eval.get("stop_at_return"),
        eval_policy=eval_policy,
        logger=logger,
        clip_grad_norm=loop.clip_grad_norm,
        clip_norm=loop.clip_norm,
        progress_bar=loop.progress_bar,
        log_interval=loop.log_interval,
        save_trainer_interval=loop.save_trainer_interval or loop.total_frames,
        # data-parallel: every rank saves its own state, rank r > 0 under checkpoints/rank<r>/
        save_trainer_file=output_dir / "checkpoints" / "trainer.pt",
        keep_checkpoints=loop.keep_checkpoints,
        **algorithm_kwargs,
    )
    trainer.stop_grace_s = loop.get("stop_grace_s", trainer.stop_grace_s)
    register_run_state(trainer, cfg, logger, envs.eval_env)
    return trainer
