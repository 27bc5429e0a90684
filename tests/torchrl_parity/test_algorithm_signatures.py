"""The algorithm trainers built by hand with torchrl's arguments, as a torchrl script does.

Each script builds its env, networks, collector, loss, optimizer and replay buffer the way
torchrl's docs and examples do, with rl_trainers' classes of the same names, then the
trainer with torchrl's keywords (``frame_skip``, ``optim_steps_per_batch``,
``replay_buffer``, ``gamma``, ``target_net_updater``, ``log_rewards``...). The steps, the
frames, the samples and the logged names are what torchrl's trainers give.
"""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import (
    LazyTensorStorage,
    ReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictReplayBuffer,
)
from rl_trainers.envs import GymEnv, RewardSum, TransformedEnv
from rl_trainers.modules import (
    MLP,
    Actor,
    AdditiveGaussianModule,
    EGreedyModule,
    NormalParamExtractor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import (
    A2CLoss,
    ClipPPOLoss,
    DDPGLoss,
    DQNLoss,
    HardUpdate,
    ReinforceLoss,
    SACLoss,
    SoftUpdate,
    TD3Loss,
)
from rl_trainers.trainers.algorithms import (
    A2CTrainer,
    DDPGTrainer,
    DQNTrainer,
    PGTrainer,
    PPOTrainer,
    ReinforceTrainer,
    SACTrainer,
    TD3Trainer,
)

#: what torchrl's trainers log from each collected batch with their default flags
BATCH_LOGS = {"done_percentage", "r_training", "r_training_std", "r_max", "r_total"}


class ScalarLog:
    """A logger keeping every scalar (name, value, step)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, int]] = []

    def log_scalar(self, name, value, step=None) -> None:
        self.rows.append((name, float(value), step))

    @property
    def names(self) -> set[str]:
        return {name for name, _, _ in self.rows}


def _env(name: str, seed: int = 0):
    env = TransformedEnv(GymEnv(name), RewardSum())
    env.set_seed(seed)
    return env


def _categorical_actor(env, cells=(32,)):
    logits = TensorDictModule(
        MLP(out_features=env.action_spec.shape[-1], num_cells=list(cells)),
        in_keys=["observation"],
        out_keys=["logits"],
    )
    return ProbabilisticActor(
        logits,
        in_keys=["logits"],
        distribution_class=OneHotCategorical,
        spec=env.action_spec,
        return_log_prob=True,
    )


def _critic(cells=(32,), in_keys=("observation",), in_features=None):
    net = MLP(in_features=in_features, out_features=1, num_cells=list(cells))
    return ValueOperator(net, in_keys=list(in_keys))


def _qvalue(env):
    """A critic of (observation, action), sized as torchrl's examples size theirs."""
    size = env.observation_spec["observation"].shape[-1] + env.action_spec.shape[-1]
    return _critic(in_keys=("observation", "action"), in_features=size)


def _tanh_normal_actor(env):
    net = torch.nn.Sequential(
        MLP(out_features=2 * env.action_spec.shape[-1], num_cells=[32]), NormalParamExtractor()
    )
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        spec=env.action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
        return_log_prob=True,
    )


def _deterministic_actor(env):
    actor = Actor(
        MLP(out_features=1, num_cells=[32]), in_keys=["observation"], spec=env.action_spec
    )
    actor(env.fake_tensordict())  # lazy layers initialised, as torchrl's examples do
    return actor


def _record_sub_batches(trainer) -> list:
    """The sample each optimisation step trained on, in order."""
    seen = []
    trainer.register_op("post_loss", lambda sub_batch: seen.append(sub_batch.clone()))
    return seen


def test_ppo_trainer_runs_torchrl_epochs_of_replay_buffer_samples():
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    policy = _categorical_actor(env)
    collector = SyncDataCollector(env, policy, frames_per_batch=64, total_frames=192)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(64), sampler=SamplerWithoutReplacement(), batch_size=16
    )
    loss = ClipPPOLoss(policy, _critic(), clip_epsilon=0.2, entropy_coef=0.01)
    logger = ScalarLog()
    trainer = PPOTrainer(
        collector=collector,
        total_frames=192,
        frame_skip=1,
        optim_steps_per_batch=4,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=3e-4),
        logger=logger,
        clip_norm=1.0,
        num_epochs=2,
        replay_buffer=buffer,
        gamma=0.99,
        lmbda=0.95,
        log_rewards=True,
        progress_bar=False,
        log_interval=64,
    )
    samples = _record_sub_batches(trainer)
    trainer.train()

    assert trainer.collected_frames == 192
    assert trainer._optim_count == 3 * 2 * 4  # batches * num_epochs * optim_steps_per_batch
    assert [len(s) for s in samples] == [16] * 24  # the buffer's batch_size
    for epoch in range(6):  # without replacement: each pass covers the batch once
        indices = torch.cat([s.get("index") for s in samples[epoch * 4 : epoch * 4 + 4]])
        assert sorted(indices.tolist()) == list(range(64))
    advantage = samples[0].get("advantage")  # GAE with torchrl's average_gae=True
    assert advantage is not None
    assert logger.names >= BATCH_LOGS | {"action_norm", "action_norm_std", "optim_steps"}
    assert "obs_norm" not in logger.names  # log_observations=False by default
    assert "train/episode_return" not in logger.names  # rl_trainers' own log, not torchrl's
    assert {"loss_objective", "loss_critic", "loss_entropy"} <= logger.names


def test_ppo_trainer_without_replay_buffer_steps_on_the_whole_batch_with_default_epochs():
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    policy = _categorical_actor(env)
    loss = ClipPPOLoss(policy, _critic())
    trainer = PPOTrainer(
        collector=SyncDataCollector(env, policy, frames_per_batch=32, total_frames=64),
        total_frames=64,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        enable_logging=False,
        progress_bar=False,
    )
    samples = _record_sub_batches(trainer)
    trainer.train()
    assert trainer.num_epochs == 4  # torchrl's PPOTrainer default
    assert trainer._optim_count == 2 * 4 * 2
    assert {s.numel() for s in samples} == {32}


@pytest.mark.parametrize("trainer_class", [A2CTrainer, ReinforceTrainer])
def test_a2c_and_reinforce_trainers_take_torchrl_arguments(trainer_class):
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    policy = _categorical_actor(env)
    loss_class = A2CLoss if trainer_class is A2CTrainer else ReinforceLoss
    loss = loss_class(policy, _critic())
    logger = ScalarLog()
    trainer = trainer_class(
        collector=SyncDataCollector(env, policy, frames_per_batch=64, total_frames=128),
        total_frames=128,
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        logger=logger,
        gamma=0.9,
        lmbda=0.99,
        log_actions=False,
        log_observations=True,
        progress_bar=False,
        log_interval=64,
    )
    samples = _record_sub_batches(trainer)
    trainer.train()
    assert trainer.num_epochs == 1 and trainer._optim_count == 2
    assert {s.numel() for s in samples} == {64}  # no buffer: the whole batch
    assert logger.names >= BATCH_LOGS | {"obs_norm", "obs_norm_std"}
    assert "action_norm" not in logger.names


def test_reinforce_trainer_is_torchrls_name_of_the_pg_trainer():
    from rl_trainers.trainers.algorithms.pg import ReinforceTrainer as from_module

    assert ReinforceTrainer is PGTrainer is from_module


def test_sac_trainer_updates_optim_steps_per_batch_times_after_the_random_warm_up():
    torch.manual_seed(0)
    env = _env("Pendulum-v1")
    actor = _tanh_normal_actor(env)
    qvalue = _qvalue(env)
    loss = SACLoss(actor, qvalue, action_spec=env.action_spec)
    buffer = ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=8)
    collector = SyncDataCollector(
        env, actor, frames_per_batch=32, total_frames=160, init_random_frames=64
    )
    logger = ScalarLog()
    trainer = SACTrainer(
        collector=collector,
        total_frames=160,
        frame_skip=1,
        optim_steps_per_batch=3,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=3e-4),
        logger=logger,
        replay_buffer=buffer,
        batch_size=16,
        target_net_updater=SoftUpdate(loss, eps=0.995),
        episode_reward_key="episode_reward",
        progress_bar=False,
        log_interval=32,
    )
    samples = _record_sub_batches(trainer)
    trainer.train()
    # batches end at 32, 64, 96, 128, 160 frames: updates once more than 64 were collected
    assert trainer._optim_count == 3 * 3
    assert {len(s) for s in samples} == {16}  # batch_size, not the buffer's 8
    assert len(buffer) == 160  # every frame written, the warm-up's too
    assert logger.names >= BATCH_LOGS | {"action_norm", "utd_ratio", "optim_steps"}
    assert {"loss_actor", "loss_qvalue", "loss_alpha"} <= logger.names


def test_sac_trainer_without_reward_sum_entry_warns_that_r_total_is_not_logged():
    torch.manual_seed(0)
    env = _env("Pendulum-v1")
    actor = _tanh_normal_actor(env)
    loss = SACLoss(actor, _qvalue(env), action_spec=env.action_spec)
    logger = ScalarLog()
    trainer = SACTrainer(
        collector=SyncDataCollector(env, actor, frames_per_batch=16, total_frames=32),
        total_frames=32,
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        logger=logger,
        replay_buffer=ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8),
        target_net_updater=SoftUpdate(loss, tau=0.01),
        progress_bar=False,
        log_interval=16,
    )
    with pytest.warns(UserWarning, match="r_total is not logged.*'reward_sum'"):
        trainer.train()
    assert "r_total" not in logger.names and "r_training" in logger.names


@pytest.mark.parametrize("log_actions", [None, True], ids=["default", "log_actions"])
def test_dqn_trainer_steps_the_target_updater_and_anneals_the_greedy_module(log_actions):
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    qnet = QValueActor(
        MLP(out_features=2, num_cells=[32]), in_keys=["observation"], spec=env.action_spec
    )
    greedy = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=1000)
    policy = torch.nn.Sequential(qnet, greedy)
    loss = DQNLoss(qnet, action_space=env.action_spec, delay_value=True)
    updater = HardUpdate(loss, value_network_update_interval=5)
    logger = ScalarLog()
    trainer = DQNTrainer(
        collector=SyncDataCollector(env, policy, frames_per_batch=50, total_frames=200),
        total_frames=200,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        logger=logger,
        replay_buffer=ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=32),
        target_net_updater=updater,
        greedy_module=greedy,
        episode_reward_key="episode_reward",
        progress_bar=False,
        log_interval=50,
        **({} if log_actions is None else {"log_actions": log_actions}),
    )
    trainer.train()
    assert trainer._optim_count == 4 * 2
    assert updater.counter == trainer._optim_count  # stepped after every update
    assert float(greedy.eps) == pytest.approx(1.0 - 0.9 * 200 / 1000)  # by the frames
    # torchrl's DQNTrainer logs no epsilon, and no actions unless asked to
    assert "train/epsilon" not in logger.names
    assert ("action_norm" in logger.names) is bool(log_actions)
    assert logger.names >= BATCH_LOGS | {"utd_ratio", "loss"}


@pytest.mark.parametrize("trainer_class", [TD3Trainer, DDPGTrainer])
def test_td3_and_ddpg_trainers_step_one_optimizer_and_the_targets_at_every_update(
    trainer_class,
):
    torch.manual_seed(0)
    env = _env("Pendulum-v1")
    actor = _deterministic_actor(env)
    noise = AdditiveGaussianModule(env.action_spec, sigma_init=0.5, sigma_end=0.1)
    policy = torch.nn.Sequential(actor, noise)
    critic = _qvalue(env)
    if trainer_class is TD3Trainer:
        loss = TD3Loss(actor, critic, action_spec=env.action_spec)
        loss_names = {"loss_actor", "loss_qvalue"}
    else:
        loss = DDPGLoss(actor, critic)
        loss_names = {"loss_actor", "loss_value"}
    target_before = [p.clone() for p in loss.target_pairs()[1]]
    logger = ScalarLog()
    trainer = trainer_class(
        collector=SyncDataCollector(env, policy, frames_per_batch=32, total_frames=96),
        total_frames=96,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
        logger=logger,
        replay_buffer=ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=16),
        target_net_updater=SoftUpdate(loss, tau=0.1),
        exploration_module=noise,
        episode_reward_key="episode_reward",
        progress_bar=False,
        log_interval=32,
    )
    trainer.train()
    assert trainer._optim_count == 3 * 2
    moved = [not torch.equal(a, b) for a, b in zip(target_before, loss.target_pairs()[1])]
    assert all(moved)
    assert float(noise.sigma) == 0.5  # torchrl syncs it with the policy, never anneals it
    assert "exploration" in trainer.state_dict()["modules"]
    assert logger.names >= BATCH_LOGS | loss_names | {"action_norm", "utd_ratio"}


def _ppo_kwargs(**changes):
    env = _env("CartPole-v1")
    policy = _categorical_actor(env)
    loss = ClipPPOLoss(policy, _critic())
    kwargs = dict(
        collector=SyncDataCollector(env, policy, frames_per_batch=16, total_frames=32),
        total_frames=32,
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        progress_bar=False,
    )
    kwargs.update(changes)
    return kwargs


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"checkpoint": object()}, TypeError, r"checkpoint=.*save_trainer_file"),
        ({"minibatch_size": 8}, TypeError, r"minibatch_size -> the replay buffer's batch_size"),
        ({"batch_size": 8}, TypeError, r"build the buffer with batch_size=8"),
        ({"add_gae": False, "gae": lambda td: td}, ValueError, "add_gae=False"),
    ],
    ids=["checkpoint", "minibatch_size", "batch_size", "gae"],
)
def test_a_torchrl_argument_that_cannot_be_honoured_says_what_to_do(changes, error, message):
    with pytest.raises(error, match=message):
        PPOTrainer(**_ppo_kwargs(**changes))


def test_td3_optimization_stepper_names_rl_trainers_delayed_updates():
    env = _env("Pendulum-v1")
    actor = _deterministic_actor(env)
    loss = TD3Loss(actor, _qvalue(env), action_spec=env.action_spec)
    with pytest.raises(TypeError, match=r"optimization_stepper.*optimizers=\{'critic'"):
        TD3Trainer(
            collector=SyncDataCollector(env, actor, frames_per_batch=8, total_frames=8),
            total_frames=8,
            frame_skip=1,
            optim_steps_per_batch=1,
            loss_module=loss,
            replay_buffer=ReplayBuffer(storage=LazyTensorStorage(10), batch_size=4),
            optimization_stepper=object(),
        )


def test_torchrl_arguments_in_rl_trainers_form_ask_for_optim_steps_per_batch():
    kwargs = _ppo_kwargs(log_rewards=False)
    del kwargs["optim_steps_per_batch"], kwargs["frame_skip"]
    with pytest.raises(TypeError, match=r"\['log_rewards'\] without optim_steps_per_batch"):
        PPOTrainer(frames_per_batch=16, **kwargs)


def test_auto_log_optim_steps_false_and_enable_logging_false_log_the_losses_alone():
    torch.manual_seed(0)
    logger = ScalarLog()
    trainer = PPOTrainer(
        **_ppo_kwargs(
            logger=logger, log_interval=16, enable_logging=False, auto_log_optim_steps=False
        )
    )
    trainer.train()
    assert logger.names and all(
        name.startswith(("loss_", "grad"))
        or name in {"clip_fraction", "entropy", "explained_variance", "kl_approx"}
        for name in logger.names
    )


def test_a_torchrl_style_ppo_script_learns_cartpole(one_thread):
    """PPO built as torchrl's docs build it: mean episode return well above random (~22)."""
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    policy = _categorical_actor(env, cells=(64, 64))
    frames_per_batch, total_frames = 512, 12_288
    collector = SyncDataCollector(
        env, policy, frames_per_batch=frames_per_batch, total_frames=total_frames
    )
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=64,
    )
    loss = ClipPPOLoss(policy, _critic(cells=(64, 64)), clip_epsilon=0.2, entropy_coef=0.01)
    trainer = PPOTrainer(
        collector=collector,
        total_frames=total_frames,
        frame_skip=1,
        optim_steps_per_batch=frames_per_batch // 64,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=3e-4),
        clip_norm=0.5,
        num_epochs=4,
        replay_buffer=buffer,
        gamma=0.99,
        lmbda=0.95,
        progress_bar=False,
    )
    returns = []

    def episode_returns(batch):
        ended = batch.get(("next", "done"))
        returns.append(batch.get(("next", "episode_reward"))[ended].mean().item())

    trainer.register_op("pre_steps_log", episode_returns)
    trainer.train()
    first, last = sum(returns[:2]) / 2, sum(returns[-4:]) / 4
    assert first < 40 and last > 80, returns


def _torchrl_ppo(total_frames, save_trainer_file):
    torch.manual_seed(0)
    env = _env("CartPole-v1")
    policy = _categorical_actor(env)
    loss = ClipPPOLoss(policy, _critic())
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(64), sampler=SamplerWithoutReplacement(), batch_size=16
    )
    return PPOTrainer(
        collector=SyncDataCollector(env, policy, frames_per_batch=64, total_frames=total_frames),
        total_frames=total_frames,
        frame_skip=1,
        optim_steps_per_batch=4,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
        replay_buffer=buffer,
        num_epochs=2,
        progress_bar=False,
        save_trainer_file=save_trainer_file,
        save_trainer_interval=64,
    )


def _torchrl_sac(total_frames, save_trainer_file):
    torch.manual_seed(0)
    env = _env("Pendulum-v1")
    actor = _tanh_normal_actor(env)
    loss = SACLoss(actor, _qvalue(env), action_spec=env.action_spec)
    return SACTrainer(
        collector=SyncDataCollector(env, actor, frames_per_batch=32, total_frames=total_frames),
        total_frames=total_frames,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
        replay_buffer=ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=16),
        target_net_updater=SoftUpdate(loss, tau=0.05),
        episode_reward_key="episode_reward",
        progress_bar=False,
        save_trainer_file=save_trainer_file,
        save_trainer_interval=32,
    )


@pytest.mark.parametrize("build", [_torchrl_ppo, _torchrl_sac], ids=["ppo", "sac"])
def test_a_torchrl_form_run_resumed_from_its_checkpoint_ends_as_the_uninterrupted_run(
    build, tmp_path
):
    full = build(256, tmp_path / "full.pt")
    full.train()
    build(128, tmp_path / "half.pt").train()
    resumed = build(256, tmp_path / "resumed.pt")
    resumed.load_from_file(tmp_path / "half.pt")
    resumed.train()
    assert resumed._optim_count == full._optim_count
    for before, after in zip(full.loss_module.parameters(), resumed.loss_module.parameters()):
        assert torch.equal(before, after)


def test_sac_trainer_with_async_collection_trains_from_the_collectors_buffer():
    """torchrl's ``async_collection``: the collector writes the buffer, the trainer samples."""
    torch.manual_seed(0)
    env = _env("Pendulum-v1")
    actor = _tanh_normal_actor(env)
    loss = SACLoss(actor, _qvalue(env), action_spec=env.action_spec)
    buffer = ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=16)
    collector = SyncDataCollector(
        env, actor, frames_per_batch=32, total_frames=192, replay_buffer=buffer
    )
    logger = ScalarLog()
    trainer = SACTrainer(
        collector=collector,
        total_frames=192,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        logger=logger,
        replay_buffer=buffer,
        target_net_updater=SoftUpdate(loss, tau=0.05),
        async_collection=True,
        episode_reward_key="episode_reward",
        progress_bar=False,
        log_interval=32,
    )
    trainer.train()
    assert trainer.collected_frames >= 192 and trainer._optim_count > 0
    assert len(buffer) == collector.frames_collected  # written once, by the collector
    # the logging hooks read the optimisation samples (torchrl's post_optim_log)
    assert logger.names >= {"r_training", "action_norm", "utd_ratio", "loss_qvalue"}
