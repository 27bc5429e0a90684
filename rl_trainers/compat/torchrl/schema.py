"""torchrl's config schema: the nodes its recipes pick by option name, in torchrl's form.

torchrl's ``sota-implementations/*_trainer/config/config.yaml`` compose a trainer from
``group@path: option`` defaults (``network@networks.policy_network: mlp``,
``collector@collector: multi_async``, ``trainer@trainer: ppo``...). Importing torchrl's path
``rl_trainers.trainers.algorithms.configs`` calls :func:`register`, which stores every option
of :data:`TORCHRL_GROUP_OPTIONS` in Hydra's ConfigStore under torchrl's name, so such a
recipe, with ``torchrl`` replaced by ``rl_trainers``, composes and trains. rl_trainers' own
apps never import this module, so they neither list nor accept these options.

Where an option name is also one of rl_trainers' own (:data:`SHARED_OPTION_NAMES`:
``collector/sync``, ``network/mlp``, ``optimizer/adam``, ``logger/csv``...), neither node is
stored under that name: Hydra merges a ConfigStore node into any YAML option of the same
name ("automatic schema matching"). rl_trainers' node is stored as ``<name>_schema`` and
reached through the recipes' ``<group>/<name>.yaml``; torchrl's as ``<name>_torchrl``,
reached through ``options/<group>/<name>.yaml`` (next to this module), a directory that
:class:`TorchrlOptionsSearchPath` puts on the search path after the app's own config
directory: a recipe with its own YAML option finds it first, a torchrl recipe (whose config
directory has no such file) finds torchrl's.

The transform, storage, sampler and writer nodes are the torchrl-named ones of
:mod:`rl_trainers.configs`; the nodes defined here are the ones torchrl's recipes need and
rl_trainers' own do not, or whose fields differ from rl_trainers' own: a batched env, a
transformed env, a composition of transforms, networks with ``in_features``/``out_features``,
models over a network node, collectors taking ``create_env_fn``/``policy``, losses taking
their networks, optimizers as partials, loggers, target updaters and the trainers. Their
builders are in :mod:`rl_trainers.compat.torchrl.schema_builders` and
:mod:`rl_trainers.compat.torchrl.config_nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import MISSING

from rl_trainers.configs import register_configs
from rl_trainers.configs.common import config_field
from rl_trainers.configs.data import (
    LazyMemmapStorageConfig,
    LazyTensorStorageConfig,
    ListStorageConfig,
    PrioritizedSamplerConfig,
    RandomSamplerConfig,
    SamplerWithoutReplacementConfig,
    SliceSamplerConfig,
    SliceSamplerWithoutReplacementConfig,
    TensorDictReplayBufferConfig,
    TensorStorageConfig,
)
from rl_trainers.configs.envs import GymEnvConfig
from rl_trainers.configs.transforms import (
    BinarizeRewardConfig,
    CatFramesConfig,
    CatTensorsConfig,
    CenterCropConfig,
    ClipTransformConfig,
    DoubleToFloatConfig,
    EndOfLifeTransformConfig,
    FlattenObservationConfig,
    FrameSkipTransformConfig,
    GrayScaleConfig,
    InitTrackerConfig,
    NoopResetEnvConfig,
    ObservationNormConfig,
    PermuteTransformConfig,
    ResizeConfig,
    RewardClippingConfig,
    RewardScalingConfig,
    RewardSumConfig,
    SignTransformConfig,
    StepCounterConfig,
    TargetReturnConfig,
    ToTensorImageConfig,
    TrajCounterConfig,
    UnsqueezeTransformConfig,
    VecNormConfig,
)

_BUILDERS = "rl_trainers.trainers.helpers.torchrl_schema"
_KEYS = "entries read, e.g. [observation]"


# ------------------------------------------------------------------- env and transform
# torchrl's env and transform nodes with no rl_trainers counterpart: a batched env over an
# env factory, a transformed env, and a composition of transforms.


@dataclass
class BatchedEnvConfig:
    """torchrl's batched env node: ``num_workers`` copies of ``create_env_fn``, one batch.

    ``create_env_fn`` stays a node until the builder reads it (``_recursive_: false``).
    rl_trainers' ``GymEnvConfig`` is a vector env already, so as ``create_env_fn`` (directly
    or as a ``TransformedEnvConfig``'s ``base_env``) it describes one env per worker: the
    builder sets its ``num_envs`` to ``num_workers`` and its ``vectorization`` from
    ``batched_env_type``, giving batch size ``[num_workers]`` with its transforms run once on
    the batch. Other nodes (e.g. ``{_target_: rl_trainers.envs.GymEnv, env_name: ...}``) are
    instantiated once per worker in a ``ParallelEnv`` or ``SerialEnv``. See
    :func:`rl_trainers.trainers.helpers.torchrl_nodes.make_batched_env`.

    Example:
        >>> from hydra.utils import instantiate
        >>> node = BatchedEnvConfig(create_env_fn=GymEnvConfig(), num_workers=4)
        >>> env = instantiate(node)  # doctest: +SKIP
        >>> env.batch_size  # doctest: +SKIP
        torch.Size([4])
    """

    _target_: str = "rl_trainers.trainers.helpers.torchrl_nodes.make_batched_env"
    _recursive_: bool = False
    create_env_fn: Any = config_field("???", "env node (or callable) making one env per worker")
    num_workers: int = config_field(1, "sub-envs stepped together (the batch size)")
    batched_env_type: str = config_field(
        "parallel", "parallel (one process per sub-env) or serial (all in this process)"
    )
    create_env_kwargs: dict[str, Any] = config_field(
        {}, "keyword arguments of create_env_fn (for a node: its fields)"
    )
    device: str | None = config_field(None, "device of the env's tensors (None: the node's)")


@dataclass
class TransformedEnvConfig:
    """torchrl's transformed env node: ``base_env`` with ``transform`` applied (e.g. a
    ``ComposeConfig``); targets
    :func:`rl_trainers.trainers.helpers.torchrl_nodes.make_transformed_env`."""

    _target_: str = "rl_trainers.trainers.helpers.torchrl_nodes.make_transformed_env"
    base_env: Any = config_field("???", "the env node to transform, e.g. GymEnvConfig")
    transform: Any = config_field(None, "a transform node, e.g. ComposeConfig (None: none)")


@dataclass
class ComposeConfig:
    """Transforms applied in order (a list of transform nodes)."""

    _target_: str = "rl_trainers.trainers.helpers.torchrl_nodes.make_compose"
    transforms: list[Any] = config_field([], "transform nodes, applied in order")


# ----------------------------------------------------------------------------- envs
# torchrl's recipes mark an env node ``_partial_: true`` (a factory for the batched env);
# these are the env nodes of :mod:`.envs` with that field.


@dataclass
class TorchrlGymEnvConfig(GymEnvConfig):
    """torchrl's ``env/gym``: :class:`GymEnvConfig`, which may be marked partial."""

    _partial_: bool = False


@dataclass
class TorchrlBatchedEnvConfig(BatchedEnvConfig):
    """torchrl's ``env/batched_env``: :class:`BatchedEnvConfig`, which may be marked partial."""

    _partial_: bool = False


@dataclass
class TorchrlTransformedEnvConfig(TransformedEnvConfig):
    """torchrl's ``env/transformed_env``: :class:`TransformedEnvConfig`, which may be marked
    partial."""

    _partial_: bool = False


# ----------------------------------------------------------------------------- networks


@dataclass
class TorchrlMLPConfig:
    """torchrl's ``network/mlp``: an :class:`~rl_trainers.modules.MLP` with its sizes, as
    torchrl's recipes write them for their env (a TanhNormal policy's ``out_features`` is
    twice the action size)."""

    _target_: str = "rl_trainers.modules.MLP"
    _partial_: bool = False
    in_features: int | None = config_field(None, "input size (None: lazy, from the first input)")
    out_features: Any = config_field(None, "output size")
    depth: int | None = config_field(None, "hidden layers (None: len(num_cells))")
    num_cells: Any = config_field(None, "hidden layer widths, e.g. [128, 128]")
    activation_class: Any = config_field(
        {"_target_": "torch.nn.Tanh", "_partial_": True}, "activation node (partial)"
    )
    activation_kwargs: Any = config_field(None, "keyword arguments of the activation")
    norm_class: Any = config_field(None, "normalisation layer node (partial), None: none")
    norm_kwargs: Any = config_field(None, "keyword arguments of the normalisation")
    dropout: float | None = config_field(None, "dropout probability (None: none)")
    bias_last_layer: bool = config_field(True, "bias in the output layer")
    single_bias_last_layer: bool = config_field(False, "one bias shared by all outputs")
    layer_class: Any = config_field(
        {"_target_": "torch.nn.Linear", "_partial_": True}, "layer node (partial)"
    )
    layer_kwargs: Any = config_field(None, "keyword arguments of the layers")
    activate_last_layer: bool = config_field(False, "activation after the output layer")
    device: Any = config_field(None, "device of the parameters")


@dataclass
class TorchrlTanhNormalModelConfig:
    """torchrl's ``model/tanh_normal``: a TanhNormal policy over a ``network`` node."""

    _target_: str = f"{_BUILDERS}.build_tanh_normal_model"
    _partial_: bool = False
    network: Any = config_field(MISSING, "network node (e.g. network/mlp) giving loc and scale")
    in_keys: Any = config_field(["observation"], _KEYS)
    out_keys: Any = config_field(["action"], "entries written (the action)")
    param_keys: Any = config_field(["loc", "scale"], "entries of the distribution parameters")
    return_log_prob: bool = config_field(False, "write the action's log-probability")
    extract_normal_params: bool = config_field(True, "split the output into loc and scale")
    scale_mapping: str = config_field("biased_softplus_1.0", "map of the raw scale")
    scale_lb: float = config_field(1e-4, "lower bound of the scale")
    low: float | None = config_field(None, "lowest action (None: -1)")
    high: float | None = config_field(None, "highest action (None: 1)")
    tanh_loc: bool = config_field(False, "squash the location with a tanh too")
    upscale: float = config_field(5.0, "tanh_loc: scale of the squashed location")
    exploration_type: str = config_field("RANDOM", "interaction type when collecting")
    eval_mode: bool = config_field(False, "put the model in eval mode")
    shared: bool = config_field(False, "parameters in shared memory")


@dataclass
class TorchrlValueModelConfig:
    """torchrl's ``model/value``: a :class:`~rl_trainers.modules.ValueOperator` over a
    ``network`` node (a Q-value model when ``in_keys`` hold the action)."""

    _target_: str = f"{_BUILDERS}.build_value_model"
    _partial_: bool = False
    network: Any = config_field(MISSING, "network node (e.g. network/mlp)")
    in_keys: Any = config_field(["observation"], _KEYS)
    out_keys: Any = config_field(["state_value"], "entries written")
    shared: bool = config_field(False, "parameters in shared memory")


# ----------------------------------------------------------------------------- collectors


@dataclass
class TorchrlCollectorConfig:
    """torchrl's ``collector/sync``: a :class:`~rl_trainers.collectors.SyncDataCollector`
    stepping ``create_env_fn`` with ``policy``.

    Inside a trainer node the trainer builder passes the loss's actor as ``policy`` when
    ``weight_update_map`` maps ``policy`` to ``loss_module.actor_network`` (or when the two
    nodes are the same), so collector and loss share one module.
    """

    _target_: str = f"{_BUILDERS}.build_sync_collector"
    _partial_: bool = False
    _recursive_: bool = False
    create_env_fn: Any = config_field(MISSING, "env node (e.g. env/batched_env) or callable")
    policy: Any = config_field(None, "policy node (None: random actions)")
    frames_per_batch: int = config_field(MISSING, "frames per collected batch")
    total_frames: int = config_field(-1, "frames to collect (-1: endless)")
    init_random_frames: int | None = config_field(0, "first frames with random actions")
    device: str | None = config_field(None, "device of the policy and batches")
    storing_device: str | None = config_field(None, "device batches are delivered on")
    env_device: str | None = config_field(None, "device of the env")
    policy_device: str | None = config_field(None, "device of the policy")
    create_env_kwargs: Any = config_field(None, "keyword arguments of create_env_fn")
    max_frames_per_traj: int | None = config_field(None, "reset trajectories this long")
    reset_at_each_iter: bool = config_field(False, "reset the envs before every batch")
    split_trajs: bool = config_field(False, "split batches by trajectory")
    exploration_type: str = config_field("RANDOM", "interaction type of the policy")
    track_policy_version: bool = config_field(
        False, "accepted: rl_trainers' collectors always send the newest weights"
    )


@dataclass
class TorchrlMultiSyncCollectorConfig(TorchrlCollectorConfig):
    """torchrl's ``collector/multi_sync``: worker processes, batches gathered from all."""

    _target_: str = f"{_BUILDERS}.build_multi_sync_collector"
    num_workers: int | None = config_field(None, "worker processes (None: one per env fn)")


@dataclass
class TorchrlMultiAsyncCollectorConfig(TorchrlMultiSyncCollectorConfig):
    """torchrl's ``collector/multi_async``: each batch from whichever worker is ready."""

    _target_: str = f"{_BUILDERS}.build_multi_async_collector"


# ----------------------------------------------------------------------------- buffers


@dataclass
class TorchrlReplayBufferConfig(TensorDictReplayBufferConfig):
    """torchrl's ``replay_buffer/base``: a :class:`~rl_trainers.data.TensorDictReplayBuffer`
    with storage, sampler and writer nodes (``storage@replay_buffer.storage: ...``)."""

    _target_: str = f"{_BUILDERS}.build_replay_buffer"
    _partial_: bool = False
    shared: bool = config_field(
        False, "accepted: the buffer lives in the training process, which alone writes it"
    )


@dataclass
class TorchrlRoundRobinWriterConfig:
    """torchrl's ``writer/round_robin``: overwrites the oldest items when full."""

    _target_: str = f"{_BUILDERS}.build_round_robin_writer"
    compilable: bool = config_field(False, "accepted: the writer has one (eager) path")


# ----------------------------------------------------------------------------- losses


@dataclass
class TorchrlPPOLossConfig:
    """torchrl's ``loss/ppo``: ClipPPOLoss (``loss_type: clip``), KLPENPPOLoss (``kl``) or
    PPOLoss (``ppo``) over the ``actor_network`` and ``critic_network`` model nodes."""

    _target_: str = f"{_BUILDERS}.build_ppo_loss"
    _partial_: bool = False
    actor_network: Any = config_field(None, "policy model node")
    critic_network: Any = config_field(None, "value model node")
    loss_type: str = config_field("clip", "clip | kl | ppo")
    entropy_bonus: bool = config_field(True, "add an entropy bonus")
    samples_mc_entropy: int = config_field(1, "samples of the entropy estimate")
    entropy_coeff: float | None = config_field(None, "weight of the entropy bonus")
    log_explained_variance: bool = config_field(True, "log the critic's explained variance")
    critic_coeff: float | None = config_field(None, "weight of the value loss")
    loss_critic_type: str = config_field("smooth_l1", "l2 | smooth_l1 | l1 value loss")
    normalize_advantage: bool = config_field(False, "normalise advantages per minibatch")
    gamma: float | None = config_field(None, "discount of the loss's value estimator")
    separate_losses: bool = config_field(False, "no gradient from the critic into the actor")
    reduction: str | None = config_field(None, "mean | sum | none")
    clip_value: float | None = config_field(None, "clip the value loss around the old value")
    clip_epsilon: float = config_field(0.2, "policy ratio clip range (clip)")
    dtarg: float = config_field(0.01, "target KL (kl)")
    beta: float = config_field(1.0, "initial KL coefficient (kl)")
    increment: float = config_field(2.0, "beta growth factor (kl)")
    decrement: float = config_field(0.5, "beta shrink factor (kl)")
    samples_mc_kl: int = config_field(1, "samples of the KL estimate (kl)")


@dataclass
class TorchrlSACLossConfig:
    """torchrl's ``loss/sac``: :class:`~rl_trainers.objectives.SACLoss` over the
    ``actor_network`` and ``qvalue_network`` model nodes."""

    _target_: str = f"{_BUILDERS}.build_sac_loss"
    _partial_: bool = False
    actor_network: Any = config_field(None, "policy model node")
    qvalue_network: Any = config_field(None, "Q-value model node (reads observation, action)")
    num_qvalue_nets: int = config_field(2, "Q networks (min over them)")
    loss_function: str = config_field("smooth_l1", "l2 | smooth_l1 | l1 Q loss")
    alpha_init: float = config_field(1.0, "initial entropy temperature")
    min_alpha: float | None = config_field(None, "lower bound of alpha")
    max_alpha: float | None = config_field(None, "upper bound of alpha")
    fixed_alpha: bool = config_field(False, "keep alpha fixed")
    target_entropy: Any = config_field("auto", "'auto' (-action dims) or a number")
    delay_actor: bool = config_field(False, "keep a target actor")
    delay_qvalue: bool = config_field(True, "keep target Q networks")
    gamma: float | None = config_field(None, "discount factor")
    priority_key: str | None = config_field(None, "entry receiving TD errors")
    separate_losses: bool = config_field(False, "no gradient from the critic into the actor")
    reduction: str | None = config_field(None, "mean | sum | none")
    deactivate_vmap: bool = config_field(False, "loop over the Q networks instead of vmap")


@dataclass
class SoftUpdateConfig:
    """torchrl's ``target_net_updater/soft``: a partial ``SoftUpdate(loss_module)``."""

    _target_: str = "rl_trainers.objectives.SoftUpdate"
    _partial_: bool = True
    eps: float | None = config_field(None, "target <- eps * target + (1 - eps) * online")
    tau: float | None = config_field(0.001, "1 - eps")


@dataclass
class HardUpdateConfig:
    """torchrl's ``target_net_updater/hard``: a partial ``HardUpdate(loss_module)``."""

    _target_: str = "rl_trainers.objectives.HardUpdate"
    _partial_: bool = True
    value_network_update_interval: int = config_field(1000, "updates between copies")


# ----------------------------------------------------------------------------- optimizers


@dataclass
class TorchrlOptimizerConfig:
    """Fields of torchrl's optimizer nodes: partials the trainer builder calls with the
    loss's parameters (torchrl's defaults: lr 1e-3)."""

    _target_: str = "torch.optim.Adam"
    _partial_: bool = True
    lr: float = config_field(1e-3, "learning rate")
    weight_decay: float = config_field(0.0, "L2 penalty")


@dataclass
class TorchrlAdamConfig(TorchrlOptimizerConfig):
    """torchrl's ``optimizer/adam`` (its eps default, 1e-4, is torchrl's, not torch's)."""

    _target_: str = "torch.optim.Adam"
    betas: list[float] = config_field([0.9, 0.999], "moment decay rates")
    eps: float = config_field(1e-4, "denominator term")
    amsgrad: bool = config_field(False, "AMSGrad variant")


@dataclass
class TorchrlAdamWConfig(TorchrlAdamConfig):
    """torchrl's ``optimizer/adamw``."""

    _target_: str = "torch.optim.AdamW"
    weight_decay: float = config_field(1e-2, "decoupled weight decay")


@dataclass
class TorchrlSGDConfig(TorchrlOptimizerConfig):
    """torchrl's ``optimizer/sgd``."""

    _target_: str = "torch.optim.SGD"
    momentum: float = config_field(0.0, "momentum factor")
    dampening: float = config_field(0.0, "dampening of the momentum")
    nesterov: bool = config_field(False, "Nesterov momentum")


@dataclass
class TorchrlRMSpropConfig(TorchrlOptimizerConfig):
    """torchrl's ``optimizer/rmsprop``."""

    _target_: str = "torch.optim.RMSprop"
    lr: float = config_field(1e-2, "learning rate")
    alpha: float = config_field(0.99, "smoothing constant")
    eps: float = config_field(1e-8, "denominator term")
    momentum: float = config_field(0.0, "momentum factor")
    centered: bool = config_field(False, "centred RMSprop")


# ----------------------------------------------------------------------------- loggers


@dataclass
class TorchrlCSVLoggerConfig:
    """torchrl's ``logger/csv``: CSV files in ``<log_dir>/<exp_name>/scalars/``."""

    _target_: str = "rl_trainers.record.loggers.CSVLogger"
    _partial_: bool = False
    exp_name: str = config_field(MISSING, "experiment name")
    log_dir: str | None = config_field(None, "directory (None: csv_logs in the run directory)")
    video_format: str = config_field("pt", "pt | gif | mp4")
    video_fps: int = config_field(30, "video frame rate")


@dataclass
class TorchrlTensorboardLoggerConfig:
    """torchrl's ``logger/tensorboard``."""

    _target_: str = "rl_trainers.record.loggers.TensorboardLogger"
    _partial_: bool = False
    exp_name: str = config_field(MISSING, "experiment name")
    log_dir: str = config_field("tb_logs", "directory")


@dataclass
class TorchrlWandbLoggerConfig:
    """torchrl's ``logger/wandb`` (``offline: true`` needs no account or network)."""

    _target_: str = "rl_trainers.record.loggers.WandbLogger"
    _partial_: bool = False
    exp_name: str = config_field(MISSING, "experiment name")
    offline: bool = config_field(False, "write the run to disk only")
    save_dir: str | None = config_field(None, "directory that gets wandb/")
    id: str | None = config_field(None, "run id (to resume a run)")
    project: str | None = config_field(None, "W&B project")
    video_fps: int = config_field(32, "video frame rate")


# ----------------------------------------------------------------------------- trainers


@dataclass
class TorchrlTrainerConfig:
    """Fields torchrl's trainer nodes share; the builder instantiates the component nodes
    itself (``_recursive_: false``): seeding first, then the loss with its networks, the
    collector with the loss's actor as policy, the optimizer over the loss's parameters."""

    _target_: str = MISSING
    _recursive_: bool = False
    collector: Any = config_field(MISSING, "collector node (e.g. collector/multi_async)")
    total_frames: int | None = config_field(None, "frames to train for (None: the collector's)")
    optim_steps_per_batch: int | None = config_field(None, "optimisation steps per batch")
    loss_module: Any = config_field(MISSING, "loss node (e.g. loss/ppo)")
    optimizer: Any = config_field(MISSING, "optimizer node (a partial, e.g. optimizer/adam)")
    logger: Any = config_field(None, "logger node (e.g. logger/csv)")
    save_trainer_file: Any = config_field(None, "checkpoint path (None: no checkpoints)")
    replay_buffer: Any = config_field(None, "replay buffer node (e.g. replay_buffer/base)")
    frame_skip: int = config_field(1, "env frames per collected frame")
    clip_grad_norm: bool = config_field(True, "clip the gradient norm (else its values)")
    clip_norm: float | None = config_field(None, "clip threshold (None: no clipping)")
    progress_bar: bool = config_field(True, "show a progress bar")
    seed: int | None = config_field(None, "seed set before anything is built")
    save_trainer_interval: int = config_field(10000, "checkpoint every this many frames")
    log_interval: int = config_field(10000, "log every this many frames")
    create_env_fn: Any = config_field(None, "accepted, unused (the collector has the env)")
    actor_network: Any = config_field(None, "policy model node given to the loss")
    async_collection: bool = config_field(False, "collect in the background")
    log_timings: bool = config_field(False, "log the time of each hook")
    auto_log_optim_steps: bool = config_field(True, "log the optimisation step count")
    batch_size: int | None = config_field(None, "sample size (None: the buffer's)")
    lr_scheduler: Any = config_field(None, "scheduler node (partial taking the optimizer)")
    weight_update_map: Any = config_field(
        None, "collector destination -> trainer source, e.g. {policy: loss_module.actor_network}"
    )
    enable_logging: bool = config_field(True, "log torchrl's scalars")
    log_rewards: bool = config_field(True, "log the rewards")
    log_actions: bool = config_field(True, "log the action norm")
    log_observations: bool = config_field(False, "log the observation norm")
    done_key: Any = config_field("done", "done entry")
    terminated_key: Any = config_field("terminated", "terminated entry")
    reward_key: Any = config_field("reward", "reward entry")
    action_key: Any = config_field("action", "action entry")
    observation_key: Any = config_field("observation", "observation entry")
    hooks: Any = config_field(None, "hook nodes registered after construction")


@dataclass
class TorchrlPPOTrainerConfig(TorchrlTrainerConfig):
    """torchrl's ``trainer/ppo``: rl_trainers' :class:`~rl_trainers.trainers.algorithms.PPOTrainer`
    built in torchrl's form (``num_epochs`` passes per batch over the replay buffer)."""

    _target_: str = f"{_BUILDERS}.build_ppo_trainer"
    critic_network: Any = config_field(None, "value model node given to the loss")
    num_epochs: int = config_field(4, "passes over each collected batch")
    add_gae: bool = config_field(True, "compute GAE advantages before each pass")
    gae: Any = config_field(None, "advantage module node (None: GAE(gamma, lmbda))")
    gamma: float = config_field(0.99, "discount of the default GAE")
    lmbda: float = config_field(0.95, "lambda of the default GAE")
    episode_reward_key: Any = config_field("reward", "entry of r_total")


@dataclass
class TorchrlSACTrainerConfig(TorchrlTrainerConfig):
    """torchrl's ``trainer/sac``: rl_trainers' :class:`~rl_trainers.trainers.algorithms.SACTrainer`
    built in torchrl's form (``optim_steps_per_batch`` updates per batch from the buffer)."""

    _target_: str = f"{_BUILDERS}.build_sac_trainer"
    critic_network: Any = config_field(None, "Q-value model node given to the loss")
    target_net_updater: Any = config_field(None, "target updater node (partial of the loss)")
    episode_reward_key: Any = config_field("reward_sum", "entry of r_total")


#: torchrl's option names that rl_trainers' ``configs/`` also uses (see the module doc):
#: their nodes are stored as ``<name>_torchrl`` behind ``options/<group>/<name>.yaml``.
SHARED_OPTION_NAMES: dict[str, tuple[str, ...]] = {
    "collector": ("sync", "multi_sync", "multi_async"),
    "network": ("mlp",),
    "optimizer": ("adam", "adamw", "sgd", "rmsprop"),
    "logger": ("csv", "tensorboard", "wandb"),
}

#: The directory of the YAML options leading to torchrl's nodes of shared option names.
TORCHRL_OPTIONS_DIR = Path(__file__).parent / "options"


def torchrl_store_name(group: str, option: str) -> str:
    """The ConfigStore name of torchrl's ``group/option`` node (``<option>_torchrl`` for the
    names rl_trainers' configs also use)."""
    return f"{option}_torchrl" if option in SHARED_OPTION_NAMES.get(group, ()) else option


class TorchrlOptionsSearchPath(SearchPathPlugin):
    """Appends :data:`TORCHRL_OPTIONS_DIR` to the search path, after the app's config
    directory (registered by :func:`register`)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append("rl_trainers-torchrl", f"file://{TORCHRL_OPTIONS_DIR}")


#: torchrl's option names in each ConfigStore group, and the node each one stores.
TORCHRL_GROUP_OPTIONS: dict[str, dict[str, type]] = {
    "env": {
        "gym": TorchrlGymEnvConfig,
        "batched_env": TorchrlBatchedEnvConfig,
        "transformed_env": TorchrlTransformedEnvConfig,
    },
    "transform": {
        "noop_reset": NoopResetEnvConfig,
        "step_counter": StepCounterConfig,
        "compose": ComposeConfig,
        "double_to_float": DoubleToFloatConfig,
        "to_tensor_image": ToTensorImageConfig,
        "clip": ClipTransformConfig,
        "resize": ResizeConfig,
        "center_crop": CenterCropConfig,
        "flatten_observation": FlattenObservationConfig,
        "gray_scale": GrayScaleConfig,
        "observation_norm": ObservationNormConfig,
        "cat_frames": CatFramesConfig,
        "reward_clipping": RewardClippingConfig,
        "reward_scaling": RewardScalingConfig,
        "binarize_reward": BinarizeRewardConfig,
        "target_return": TargetReturnConfig,
        "vec_norm": VecNormConfig,
        "frame_skip": FrameSkipTransformConfig,
        "unsqueeze": UnsqueezeTransformConfig,
        "permute": PermuteTransformConfig,
        "cat_tensors": CatTensorsConfig,
        "reward_sum": RewardSumConfig,
        "init_tracker": InitTrackerConfig,
        "sign": SignTransformConfig,
        "traj_counter": TrajCounterConfig,
        "end_of_life": EndOfLifeTransformConfig,
    },
    "network": {"mlp": TorchrlMLPConfig},
    "model": {"tanh_normal": TorchrlTanhNormalModelConfig, "value": TorchrlValueModelConfig},
    "collector": {
        "sync": TorchrlCollectorConfig,
        "multi_sync": TorchrlMultiSyncCollectorConfig,
        "multi_async": TorchrlMultiAsyncCollectorConfig,
    },
    "replay_buffer": {"base": TorchrlReplayBufferConfig, "tensordict": TorchrlReplayBufferConfig},
    "storage": {
        "list": ListStorageConfig,
        "tensor": TensorStorageConfig,
        "lazy_tensor": LazyTensorStorageConfig,
        "lazy_memmap": LazyMemmapStorageConfig,
    },
    "sampler": {
        "random": RandomSamplerConfig,
        "without_replacement": SamplerWithoutReplacementConfig,
        "prioritized": PrioritizedSamplerConfig,
        "slice": SliceSamplerConfig,
        "slice_without_replacement": SliceSamplerWithoutReplacementConfig,
    },
    "writer": {"round_robin": TorchrlRoundRobinWriterConfig},
    "loss": {"ppo": TorchrlPPOLossConfig, "sac": TorchrlSACLossConfig},
    "target_net_updater": {"soft": SoftUpdateConfig, "hard": HardUpdateConfig},
    "optimizer": {
        "adam": TorchrlAdamConfig,
        "adamw": TorchrlAdamWConfig,
        "sgd": TorchrlSGDConfig,
        "rmsprop": TorchrlRMSpropConfig,
    },
    "logger": {
        "csv": TorchrlCSVLoggerConfig,
        "tensorboard": TorchrlTensorboardLoggerConfig,
        "wandb": TorchrlWandbLoggerConfig,
    },
    "trainer": {"ppo": TorchrlPPOTrainerConfig, "sac": TorchrlSACTrainerConfig},
}


def register() -> None:
    """Store every option of :data:`TORCHRL_GROUP_OPTIONS` in Hydra's ConfigStore under
    torchrl's name, with rl_trainers' own nodes, and put :data:`TORCHRL_OPTIONS_DIR` on the
    search path (idempotent)."""
    register_configs()
    store = ConfigStore.instance()
    for group, options in TORCHRL_GROUP_OPTIONS.items():
        for name, node in options.items():
            store.store(group=group, name=torchrl_store_name(group, name), node=node)
    Plugins.instance().register(TorchrlOptionsSearchPath)


__all__ = [
    "SHARED_OPTION_NAMES",
    "TORCHRL_GROUP_OPTIONS",
    "TORCHRL_OPTIONS_DIR",
    "BatchedEnvConfig",
    "ComposeConfig",
    "HardUpdateConfig",
    "SoftUpdateConfig",
    "TorchrlAdamConfig",
    "TorchrlAdamWConfig",
    "TorchrlBatchedEnvConfig",
    "TorchrlCollectorConfig",
    "TorchrlCSVLoggerConfig",
    "TorchrlGymEnvConfig",
    "TorchrlMLPConfig",
    "TorchrlMultiAsyncCollectorConfig",
    "TorchrlMultiSyncCollectorConfig",
    "TorchrlOptimizerConfig",
    "TorchrlOptionsSearchPath",
    "TorchrlPPOLossConfig",
    "TorchrlPPOTrainerConfig",
    "TorchrlReplayBufferConfig",
    "TorchrlRMSpropConfig",
    "TorchrlRoundRobinWriterConfig",
    "TorchrlSACLossConfig",
    "TorchrlSACTrainerConfig",
    "TorchrlSGDConfig",
    "TorchrlTanhNormalModelConfig",
    "TorchrlTensorboardLoggerConfig",
    "TorchrlTrainerConfig",
    "TorchrlTransformedEnvConfig",
    "TorchrlValueModelConfig",
    "TorchrlWandbLoggerConfig",
    "TransformedEnvConfig",
    "torchrl_store_name",
]
