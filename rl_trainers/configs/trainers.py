"""Root config nodes: one per algorithm, composing every group, and their ``trainer`` nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .collectors import SyncDataCollectorConfig
from .common import ROOT_CONFIG_INTERPOLATION, config_field
from .data import ReplayBufferConfig
from .envs import GymEnvConfig
from .logging import LoggerConfig
from .modules import (
    ActorCriticNetworkConfig,
    ActorQValueModelConfig,
    ActorValueModelConfig,
    DeterministicActorQValueModelConfig,
    DQNModelConfig,
    MLPConfig,
)
from .objectives import (
    A2CLossConfig,
    DDPGLossConfig,
    DQNLossConfig,
    PGLossConfig,
    PPOLossConfig,
    SACLossConfig,
    TD3LossConfig,
)
from .optim import LRSchedulerConfig, OptimizerConfig


@dataclass
class EvalConfig:
    """Deterministic evaluation episodes on a separate env, optionally recorded as videos."""

    episodes: int = config_field(10, "episodes per evaluation (and in the final summary)")
    interval: int = config_field(0, "evaluate every this many frames (0: only at the end)")
    deterministic: bool = config_field(True, "act with the policy's mode, not a sample")
    video: bool = config_field(
        False, "log each evaluation's first episode as a video (eval/video) to the logger"
    )
    video_fps: int | None = config_field(
        None, "video frame rate (None: the env's render_fps / env.frame_skip, else 30)"
    )
    video_max_frames: int = config_field(
        1000, "longest video in frames (kept in memory: ~0.7 MB each at 400x600)"
    )
    stop_at_return: float | None = config_field(
        None, "end training once a periodic evaluation's mean return reaches this"
    )


@dataclass
class LoopConfig:
    """Settings of the shared training loop.

    As in torchrl, ``hydra.utils.instantiate(cfg.trainer)`` returns the algorithm trainer
    the whole composed config describes (see
    :func:`~rl_trainers.algorithms.instantiate.trainer_from_config`): ``_config_``
    hands it the root config (and resolves to itself anywhere else).
    """

    _target_: str = "rl_trainers.algorithms.instantiate.trainer_from_config"
    _config_: Any = ROOT_CONFIG_INTERPOLATION
    total_frames: int = config_field(100_000, "environment frames to train for")
    clip_grad_norm: bool = config_field(True, "clip the global gradient norm (else clamp values)")
    clip_norm: float | None = config_field(0.5, "gradient clip value (None: no clipping)")
    log_interval: int = config_field(2048, "log scalars every this many frames")
    save_trainer_interval: int = config_field(0, "checkpoint every this many frames (0: at end)")
    keep_checkpoints: int = config_field(2, "how many recent checkpoints to keep on disk")
    stop_grace_s: float | None = config_field(
        60.0,
        "seconds the batch in progress may take to end after SIGTERM/SIGINT before it is "
        "dropped and the run exits with the last checkpoint (None or 0: wait for it)",
    )
    resume: bool = config_field(False, "continue from the latest checkpoint in the run directory")
    resume_from: str | None = config_field(None, "continue from this checkpoint file")
    progress_bar: bool = config_field(True, "show a tqdm progress bar")
    compile: bool = config_field(
        False, "torch.compile the loss (forward and backward); ~40 s to compile on CPU"
    )
    compile_mode: str = config_field(
        "default", "default | reduce-overhead (CUDA graphs; device=cuda) | max-autotune"
    )
    num_threads: int = config_field(
        1, "torch intra-op threads (0: 1; more only on cores the run has to itself)"
    )
    keep_freed_memory: bool = config_field(
        True, "glibc malloc keeps freed memory for reuse (no page faults per update)"
    )


@dataclass
class PPOLoopConfig(LoopConfig):
    """PPO's loop: epochs of minibatches over each collected batch."""

    num_epochs: int = config_field(20, "passes over each collected batch")
    minibatch_size: int = config_field(256, "transitions per gradient step")
    anneal_clip_epsilon: bool = config_field(
        True, "anneal the clip range linearly to 0 (loss.loss_type=clip)"
    )
    target_kl: float | None = config_field(
        None,
        "end a batch's epochs at the first minibatch whose approximate KL to the collecting "
        "policy exceeds 1.5 * target_kl, before its step (SB3's target_kl; None: never)",
    )


@dataclass
class SACLoopConfig(LoopConfig):
    """SAC's loop: updates from the replay buffer after a warm-up."""

    total_frames: int = config_field(20_000, "environment frames to train for")
    clip_norm: float | None = config_field(None, "gradient clip value (None: no clipping)")
    log_interval: int = config_field(1000, "log scalars every this many frames")
    utd_ratio: float = config_field(1.0, "gradient updates per collected frame")
    learning_starts: int = config_field(100, "frames collected before the first update")
    tau: float = config_field(0.005, "target network soft-update rate")


@dataclass
class RootConfig:
    """The root fields of every algorithm's config, in the order ``--help`` and the saved
    ``config.yaml`` list them. Each algorithm's config subclasses it, giving its own node
    types and defaults (and adding ``replay_buffer`` where it learns from one); ``seed``,
    ``device``, ``logger`` and ``eval`` are the same everywhere and declared only here."""

    #: the env action space it can run (None: any; not a field): --help lists only those envs
    action_space_kind: ClassVar[str | None] = None

    algorithm: str = config_field("", "algorithm trainer to build")
    seed: int = config_field(0, "seeds torch, numpy, random and the envs before anything is built")
    device: str = config_field(
        "cpu",
        "device of networks, losses and updates: cpu, cuda, cuda:<i>, mps, auto (cuda if there is one; envs step on the CPU)",
    )
    env: GymEnvConfig = config_field(GymEnvConfig(), "training environment")
    network: ActorCriticNetworkConfig = config_field(
        ActorCriticNetworkConfig(), "hidden layers and encoder (group network)"
    )
    model: Any = config_field(None, "the networks the loss trains")
    collector: SyncDataCollectorConfig = config_field(SyncDataCollectorConfig(), "data collector")
    loss: Any = config_field(None, "the algorithm's loss")
    optimizer: OptimizerConfig = config_field(OptimizerConfig(), "optimizer (group option)")
    lr_scheduler: LRSchedulerConfig = config_field(LRSchedulerConfig(), "learning-rate schedule")
    logger: LoggerConfig = config_field(LoggerConfig(), "logger (group option)")
    trainer: LoopConfig = config_field(LoopConfig(), "training loop")
    eval: EvalConfig = config_field(EvalConfig(), "evaluation")


@dataclass
class PPOTrainerConfig(RootConfig):
    """Everything a PPO run needs: env, networks, collector, loss, optimizer, logger, loop."""

    algorithm: str = config_field("ppo", "algorithm trainer to build")
    env: GymEnvConfig = config_field(GymEnvConfig(), "training environment")
    network: ActorCriticNetworkConfig = config_field(
        ActorCriticNetworkConfig(), "hidden layers and encoder (group network)"
    )
    model: ActorValueModelConfig = config_field(ActorValueModelConfig(), "policy and critic")
    collector: SyncDataCollectorConfig = config_field(SyncDataCollectorConfig(), "data collector")
    loss: PPOLossConfig = config_field(PPOLossConfig(), "PPO loss")
    optimizer: OptimizerConfig = config_field(OptimizerConfig(), "optimizer (group option)")
    lr_scheduler: LRSchedulerConfig = config_field(LRSchedulerConfig(), "learning-rate schedule")
    trainer: PPOLoopConfig = config_field(PPOLoopConfig(), "training loop")


@dataclass
class SACTrainerConfig(RootConfig):
    """Everything a SAC run needs, plus its replay buffer."""

    #: a TanhNormal policy needs Box actions: --help lists only those envs
    action_space_kind: ClassVar[str | None] = "continuous"

    algorithm: str = config_field("sac", "algorithm trainer to build")
    env: GymEnvConfig = config_field(
        GymEnvConfig(env_name="Pendulum-v1", num_envs=1), "training environment"
    )
    network: ActorCriticNetworkConfig = config_field(
        ActorCriticNetworkConfig(
            policy=MLPConfig([256, 256], "relu"),
            value=MLPConfig([256, 256], "relu"),
            orthogonal_init=False,
        ),
        "hidden layers and encoder (group network)",
    )
    model: ActorQValueModelConfig = config_field(ActorQValueModelConfig(), "policy and critic")
    collector: SyncDataCollectorConfig = config_field(
        SyncDataCollectorConfig(frames_per_batch=1, init_random_frames=100), "data collector"
    )
    replay_buffer: ReplayBufferConfig = config_field(ReplayBufferConfig(), "replay buffer")
    loss: SACLossConfig = config_field(SACLossConfig(), "SAC loss")
    optimizer: OptimizerConfig = config_field(OptimizerConfig(lr=1e-3), "optimizer (group option)")
    lr_scheduler: LRSchedulerConfig = config_field(LRSchedulerConfig(), "learning-rate schedule")
    trainer: SACLoopConfig = config_field(SACLoopConfig(), "training loop")


@dataclass
class DQNLoopConfig(LoopConfig):
    """DQN's loop: updates from the replay buffer after a warm-up, a periodically refreshed
    target network and epsilon-greedy exploration annealed over the first frames."""

    total_frames: int = config_field(50_000, "environment frames to train for")
    clip_norm: float | None = config_field(10.0, "gradient clip value (None: no clipping)")
    log_interval: int = config_field(1024, "log scalars every this many frames")
    utd_ratio: float = config_field(
        0.5, "gradient updates per collected frame (rl-zoo's gradient_steps / train_freq)"
    )
    learning_starts: int = config_field(1000, "frames collected before the first update")
    target_update_interval: int = config_field(
        128, "gradient updates between target-network updates"
    )
    tau: float = config_field(
        1.0, "target <- tau * online + (1 - tau) * target at each target update (1: copy)"
    )
    eps_init: float = config_field(1.0, "exploration epsilon at the start")
    eps_end: float = config_field(0.04, "exploration epsilon after the annealing")
    exploration_fraction: float = config_field(
        0.16, "fraction of total_frames over which epsilon decays linearly to eps_end"
    )


@dataclass
class DQNTrainerConfig(RootConfig):
    """Everything a DQN run needs: a discrete-action env, the Q-network, its replay buffer."""

    #: one Q-value per action needs discrete actions: --help lists only those envs
    action_space_kind: ClassVar[str | None] = "discrete"

    algorithm: str = config_field("dqn", "algorithm trainer to build")
    env: GymEnvConfig = config_field(
        GymEnvConfig(env_name="CartPole-v1", num_envs=1), "training environment (discrete actions)"
    )
    network: ActorCriticNetworkConfig = config_field(
        ActorCriticNetworkConfig(
            value=MLPConfig([256, 256], "relu"),
            orthogonal_init=False,
        ),
        "hidden layers and encoder (group network); the Q-network uses network.value",
    )
    model: DQNModelConfig = config_field(DQNModelConfig(), "Q-value actor")
    collector: SyncDataCollectorConfig = config_field(
        SyncDataCollectorConfig(frames_per_batch=256, init_random_frames=1000), "data collector"
    )
    replay_buffer: ReplayBufferConfig = config_field(
        ReplayBufferConfig(size=100_000, batch_size=64), "replay buffer"
    )
    loss: DQNLossConfig = config_field(DQNLossConfig(), "DQN loss")
    optimizer: OptimizerConfig = config_field(OptimizerConfig(lr=1e-3), "optimizer (group option)")
    lr_scheduler: LRSchedulerConfig = config_field(
        LRSchedulerConfig(kind="linear"), "learning-rate schedule"
    )
    trainer: DQNLoopConfig = config_field(DQNLoopConfig(), "training loop")


@dataclass
class DDPGLoopConfig(LoopConfig):
    """DDPG's loop: updates from the replay buffer after a warm-up of uniformly random
    actions; the collector explores with Gaussian or Ornstein-Uhlenbeck action noise."""

    total_frames: int = config_field(20_000, "environment frames to train for")
    clip_norm: float | None = config_field(None, "gradient clip value (None: no clipping)")
    log_interval: int = config_field(1000, "log scalars every this many frames")
    utd_ratio: float = config_field(
        1.0, "gradient updates per collected frame (rl-zoo's gradient_steps / train_freq)"
    )
    learning_starts: int = config_field(10_000, "frames collected before the first update")
    tau: float = config_field(0.005, "target networks' soft-update rate")
    exploration_noise: str = config_field(
        "gaussian", "gaussian (independent N(0, noise_std)) | ou (Ornstein-Uhlenbeck)"
    )
    noise_std: float = config_field(0.1, "std of the exploration noise (OU: its sigma)")
    noise_std_end: float | None = config_field(
        None, "anneal noise_std linearly to this (None: constant)"
    )
    noise_annealing_fraction: float = config_field(
        1.0, "fraction of total_frames over which noise_std anneals to noise_std_end"
    )
    ou_theta: float = config_field(0.15, "OU mean-reversion rate (exploration_noise=ou)")
    ou_dt: float = config_field(0.01, "OU time step (exploration_noise=ou)")


@dataclass
class TD3LoopConfig(DDPGLoopConfig):
    """TD3's loop: DDPG's, with the actor and the targets updated every ``policy_delay``
    critic updates."""

    policy_delay: int = config_field(
        2, "critic updates per actor and target update (the actor waits in between)"
    )


def _deterministic_network() -> ActorCriticNetworkConfig:
    return ActorCriticNetworkConfig(
        policy=MLPConfig([400, 300], "relu"),
        value=MLPConfig([400, 300], "relu"),
        orthogonal_init=False,
    )


@dataclass
class TD3TrainerConfig(RootConfig):
    """Everything a TD3 run needs: a continuous-action env, actor, twin critics, buffer."""

    #: a deterministic actor (DDPG's too) needs Box actions: --help lists only those envs
    action_space_kind: ClassVar[str | None] = "continuous"

    algorithm: str = config_field("td3", "algorithm trainer to build")
    env: GymEnvConfig = config_field(
        GymEnvConfig(env_name="Pendulum-v1", num_envs=1),
        "training environment (continuous actions)",
    )
    network: ActorCriticNetworkConfig = config_field(
        _deterministic_network(),
        "hidden layers (group network): network.policy for the actor, network.value for critics",
    )
    model: DeterministicActorQValueModelConfig = config_field(
        DeterministicActorQValueModelConfig(), "deterministic actor and Q critic"
    )
    collector: SyncDataCollectorConfig = config_field(
        SyncDataCollectorConfig(frames_per_batch=200, init_random_frames=10_000),
        "data collector",
    )
    replay_buffer: ReplayBufferConfig = config_field(
        ReplayBufferConfig(size=200_000, batch_size=256), "replay buffer"
    )
    loss: TD3LossConfig = config_field(TD3LossConfig(), "TD3 loss")
    optimizer: OptimizerConfig = config_field(
        OptimizerConfig(lr=1e-3), "optimizer (group option): one for the actor, one for critics"
    )
    lr_scheduler: LRSchedulerConfig = config_field(LRSchedulerConfig(), "learning-rate schedule")
    trainer: TD3LoopConfig = config_field(TD3LoopConfig(), "training loop")


@dataclass
class DDPGTrainerConfig(TD3TrainerConfig):
    """Everything a DDPG run needs: a continuous-action env, actor, critic, buffer.

    TD3's config with DDPG's loss and loop (one critic, no policy delay); the other fields
    are TD3's, declared once there.
    """

    algorithm: str = config_field("ddpg", "algorithm trainer to build")
    network: ActorCriticNetworkConfig = config_field(
        _deterministic_network(),
        "hidden layers (group network): network.policy for the actor, network.value for critic",
    )
    loss: DDPGLossConfig = config_field(DDPGLossConfig(), "DDPG loss")
    optimizer: OptimizerConfig = config_field(
        OptimizerConfig(lr=1e-3), "optimizer (group option): one for the actor, one for the critic"
    )
    trainer: DDPGLoopConfig = config_field(DDPGLoopConfig(), "training loop")


@dataclass
class A2CLoopConfig(LoopConfig):
    """A2C's loop: one gradient step on each whole collected batch."""

    total_frames: int = config_field(500_000, "environment frames to train for")
    clip_norm: float | None = config_field(
        0.5, "gradient clip value (SB3's max_grad_norm; None: no clipping)"
    )
    log_interval: int = config_field(4000, "log scalars every this many frames")


@dataclass
class A2CTrainerConfig(PPOTrainerConfig):
    """Everything an A2C run needs: env, policy and critic, collector, loss, optimizer, loop.

    PPO's config with A2C's collector, loss, optimizer and loop; the other fields are PPO's.
    """

    algorithm: str = config_field("a2c", "algorithm trainer to build")
    collector: SyncDataCollectorConfig = config_field(
        SyncDataCollectorConfig(frames_per_batch=40), "data collector (num_envs * n_steps)"
    )
    loss: A2CLossConfig = config_field(A2CLossConfig(), "A2C loss")
    optimizer: OptimizerConfig = config_field(
        # the base node, so that any option merges into it (a2c_trainer.yaml picks rmsprop)
        OptimizerConfig(_target_="torch.optim.RMSprop", lr=7e-4),
        "optimizer (group option)",
    )
    trainer: A2CLoopConfig = config_field(A2CLoopConfig(), "training loop")


@dataclass
class PGLoopConfig(LoopConfig):
    """The vanilla policy gradient's loop: one gradient step on each whole collected batch."""

    total_frames: int = config_field(300_000, "environment frames to train for")
    clip_norm: float | None = config_field(0.5, "gradient clip value (None: no clipping)")
    log_interval: int = config_field(4096, "log scalars every this many frames")


@dataclass
class PGTrainerConfig(PPOTrainerConfig):
    """Everything a REINFORCE run needs: env, policy (and baseline), collector, loss, loop.

    PPO's config with REINFORCE's network and model wording, collector, loss, optimizer,
    schedule and loop; the other fields are PPO's.
    """

    algorithm: str = config_field("pg", "algorithm trainer to build")
    network: ActorCriticNetworkConfig = config_field(
        ActorCriticNetworkConfig(),
        "hidden layers and encoder (group network); network.value is the baseline's",
    )
    model: ActorValueModelConfig = config_field(
        ActorValueModelConfig(), "policy and baseline critic (unused with loss.baseline=false)"
    )
    collector: SyncDataCollectorConfig = config_field(
        SyncDataCollectorConfig(frames_per_batch=1024), "data collector"
    )
    loss: PGLossConfig = config_field(PGLossConfig(), "REINFORCE loss")
    optimizer: OptimizerConfig = config_field(OptimizerConfig(lr=1e-3), "optimizer (group option)")
    lr_scheduler: LRSchedulerConfig = config_field(
        LRSchedulerConfig(kind="linear"), "learning-rate schedule"
    )
    trainer: PGLoopConfig = config_field(PGLoopConfig(), "training loop")
