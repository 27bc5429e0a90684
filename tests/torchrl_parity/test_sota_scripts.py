"""torchrl's single-file training scripts (``sota-implementations/{ppo,a2c,sac,td3,ddpg,dqn}``)
ported by changing the import prefix.

Each test runs, trimmed to a few batches on Pendulum or CartPole, the calls one of those
scripts makes (its env factory, networks, loss, buffer, optimizers, collector, logger and
evaluation), written here in this project's words: what they build and in which order, not
their text. What the scripts' defaults need and torchrl has: ``DMControlEnv`` importable
next to ``GymEnv`` (the env library is chosen at run time), ``shared=False`` and
``compilable=`` on the buffers and storages, W&B accepting the per-episode returns tensor
and a ``None`` speed (see ``tests/record/test_loggers.py``).
"""

from __future__ import annotations

import csv
import functools
import glob
import os

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    AddStateIndependentNormalScale,
    InteractionType,
    NormalParamExtractor,
    TensorDictModule,
    TensorDictSequential,
)
from torch import nn

from rl_trainers._utils import timeit
from rl_trainers.collectors import Collector, SyncDataCollector
from rl_trainers.data import (
    Composite,
    LazyMemmapStorage,
    LazyTensorStorage,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement
from rl_trainers.envs import (
    ClipTransform,
    Compose,
    DMControlEnv,
    DMControlWrapper,
    DoubleToFloat,
    EnvCreator,
    ExplorationType,
    InitTracker,
    JumanjiEnv,
    JumanjiWrapper,
    ParallelEnv,
    RewardSum,
    StepCounter,
    TransformedEnv,
    VecNorm,
    set_exploration_type,
)
from rl_trainers.envs.libs.gym import GymEnv, set_gym_backend
from rl_trainers.modules import (
    MLP,
    AdditiveGaussianModule,
    EGreedyModule,
    OrnsteinUhlenbeckProcessModule,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import (
    A2CLoss,
    ClipPPOLoss,
    DDPGLoss,
    DQNLoss,
    HardUpdate,
    SACLoss,
    SoftUpdate,
    TD3Loss,
    group_optimizers,
)
from rl_trainers.objectives.value.advantages import GAE
from rl_trainers.record.loggers import generate_exp_name, get_logger


def _scalars(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    """``{name: [(step, value), ...]}`` of the CSV scalars under ``log_dir``."""
    out = {}
    for path in glob.glob(os.path.join(log_dir, "**", "scalars", "**", "*.csv"), recursive=True):
        name = path.split(os.sep + "scalars" + os.sep, 1)[1][: -len(".csv")]
        with open(path) as f:
            out[name] = [(int(step), float(value)) for step, value in csv.reader(f)]
    return out


def _csv_logger(tmp_path, algo: str):
    name = generate_exp_name(algo, "port")
    return get_logger("csv", logger_name=str(tmp_path), experiment_name=name, wandb_kwargs={})


# --------------------------------------------------------------------------- env library
def _gym_or_dm_control(library: str, name: str, task: str = ""):
    """The scripts' env factory: the library is a config value."""
    if library in ("gym", "gymnasium"):
        with set_gym_backend(library if library == "gymnasium" else "gymnasium"):
            return GymEnv(name, device="cpu", from_pixels=False, pixels_only=False)
    return DMControlEnv(name, task, from_pixels=False, pixels_only=False)


def test_dm_control_is_importable_and_building_it_names_the_gymnasium_alternatives():
    assert _gym_or_dm_control("gymnasium", "Pendulum-v1").batch_size == ()
    with pytest.raises(NotImplementedError) as err:
        _gym_or_dm_control("dm_control", "cheetah", "run")
    message = str(err.value)
    assert message.startswith("DMControlEnv('cheetah', 'run'): rl_trainers wraps gymnasium ")
    assert "'dm_control/<domain>-<task>-v0'" in message and "GymEnv('HalfCheetah-v5')" in message
    with pytest.raises(NotImplementedError, match=r"^DMControlWrapper\(object\): rl_trainers"):
        DMControlWrapper(object())


def test_the_other_libraries_wrappers_import_from_torchrls_module_paths_too():
    from rl_trainers.envs.libs.dm_control import DMControlEnv as dm_control_path
    from rl_trainers.envs.libs.jumanji import JumanjiEnv as jumanji_path

    assert dm_control_path is DMControlEnv and jumanji_path is JumanjiEnv
    with pytest.raises(NotImplementedError, match=r"^DMControlEnv\('cheetah', 'run'\)"):
        dm_control_path("cheetah", "run")


def test_jumanji_is_importable_and_building_it_names_the_gymnasium_alternative():
    with pytest.raises(NotImplementedError) as err:
        JumanjiEnv("Snake-v1", device="cpu", batch_size=[], categorical_action_encoding=False)
    assert str(err.value) == (
        "JumanjiEnv('Snake-v1'): rl_trainers wraps gymnasium environments only, jumanji is "
        "not supported. Use GymEnv on a gymnasium env, e.g. GymEnv('CartPole-v1') "
        "(env.library=gymnasium in torchrl's discrete SAC config)."
    )
    with pytest.raises(NotImplementedError, match=r"^JumanjiWrapper\(object\): "):
        JumanjiWrapper(object())


# --------------------------------------------------------------------------- off-policy
def _off_policy_envs(seed: int, max_steps: int):
    """One-worker ParallelEnv (a serial env, ``serial_for_single``) of a factory, with
    the off-policy scripts' transforms; the eval env clones them."""
    maker = functools.partial(_gym_or_dm_control, "gymnasium", "Pendulum-v1")
    base = ParallelEnv(1, EnvCreator(maker), serial_for_single=True)
    base.set_seed(seed)
    transforms = Compose(InitTracker(), StepCounter(max_steps), DoubleToFloat(), RewardSum())
    train_env = TransformedEnv(base, transforms)
    eval_env = TransformedEnv(
        ParallelEnv(1, EnvCreator(maker), serial_for_single=True), train_env.transform.clone()
    )
    return train_env, eval_env


def _off_policy_run(tmp_path, algo, build, update, buffer_storage, log_many):
    """The loop the SAC, TD3 and DDPG scripts share: random frames first, then updates from
    the buffer on every batch, an evaluation rollout, timings and speed in the logs."""
    torch.manual_seed(0)
    train_env, eval_env = _off_policy_envs(seed=0, max_steps=50)
    explore, actor, extras = build(train_env, eval_env)
    collector = SyncDataCollector(
        train_env,
        explore,
        init_random_frames=100,
        frames_per_batch=50,
        total_frames=250,
        device=torch.device("cpu"),
        compile_policy=False,
        cudagraph_policy=False,
    )
    collector.set_seed(0)
    buffer = TensorDictReplayBuffer(
        pin_memory=False, prefetch=3, storage=buffer_storage, batch_size=32, shared=False
    )
    logger = _csv_logger(tmp_path, algo)
    batches = iter(collector)
    frames, steps = 0, 0
    for _ in range(len(collector)):
        with timeit("collect"):
            batch = next(batches)
        collector.update_policy_weights_()
        extras.get("after_batch", lambda n: None)(batch.numel())
        buffer.extend(batch.reshape(-1))
        frames += batch.numel()
        metrics = {}
        if frames >= 100:
            losses = []
            for _ in range(5):
                steps += 1
                losses.append(update(buffer.sample(), steps))
            metrics.update(TensorDict(train=torch.stack(losses)).flatten_keys("/").mean())
        ended = batch["next", "done"] if batch["next", "done"].any() else batch["next", "truncated"]
        if ended.any():
            metrics["train/reward"] = batch["next", "episode_reward"][ended].mean()
        if frames % 100 < 50:
            with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
                rollout = eval_env.rollout(50, actor, auto_cast_to_device=True)
            metrics["eval/reward"] = rollout["next", "reward"].sum(-2).mean().item()
        metrics.update(timeit.todict(prefix="time"))
        if log_many:
            logger.log_metrics(metrics, frames)
        else:
            for name, value in metrics.items():
                logger.log_scalar(name, value, frames)
    collector.shutdown()
    eval_env.close()
    scalars = _scalars(logger.log_dir)
    assert [step for step, _ in scalars["time/collect"]] == [50, 100, 150, 200, 250]
    assert [step for step, _ in scalars["eval/reward"]] == [100, 200]
    return scalars


def _mlp(out_features, cells=(32, 32), **kwargs):
    return MLP(num_cells=list(cells), out_features=out_features, activation_class=nn.ReLU, **kwargs)


def _init_lazy(eval_env, *nets):
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.fake_tensordict()
        for net in nets:
            net(td)


def test_sac_script(tmp_path):
    """sac/sac.py: TanhNormal actor over NormalParamExtractor, two critics through
    ``SACLoss``, the three Adam optimizers on the loss's parameter TensorDicts grouped in one."""
    parts = {}

    def build(train_env, eval_env):
        spec = train_env.action_spec_unbatched
        net = nn.Sequential(
            _mlp(2 * spec.shape[-1]),
            NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
        )
        actor = ProbabilisticActor(
            TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
            spec=spec,
            in_keys=["loc", "scale"],
            distribution_class=TanhNormal,
            distribution_kwargs={
                "low": spec.space.low,
                "high": spec.space.high,
                "tanh_loc": False,
            },
            default_interaction_type=InteractionType.RANDOM,
            return_log_prob=False,
        )
        critic = ValueOperator(_mlp(1), in_keys=["action", "observation"])
        _init_lazy(eval_env, actor, critic)
        loss = SACLoss(
            actor_network=actor,
            qvalue_network=critic,
            num_qvalue_nets=2,
            loss_function="l2",
            delay_actor=False,
            delay_qvalue=True,
            alpha_init=1.0,
        )
        loss.make_value_estimator(gamma=0.99)
        critic_params = list(loss.qvalue_network_params.flatten_keys().values())
        actor_params = list(loss.actor_network_params.flatten_keys().values())
        optimizer = group_optimizers(
            torch.optim.Adam(actor_params, lr=3e-4),
            torch.optim.Adam(critic_params, lr=3e-4),
            torch.optim.Adam([loss.log_alpha], lr=3e-4),
        )
        parts.update(loss=loss, optimizer=optimizer, target=SoftUpdate(loss, eps=0.995))
        return actor, actor, {}

    def update(sample, step):
        out = parts["loss"](sample)
        (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).sum().backward()
        parts["optimizer"].step()
        parts["optimizer"].zero_grad(set_to_none=True)
        parts["target"].step()
        return out.select("loss_actor", "loss_qvalue", "loss_alpha").detach()

    storage = LazyTensorStorage(1000, device="cpu")
    scalars = _off_policy_run(tmp_path, "SAC", build, update, storage, log_many=False)
    assert len(scalars["train/loss_qvalue"]) == 4 and scalars["train/loss_qvalue"][0][0] == 100
    assert "train/reward" in scalars


def _deterministic_actor(spec, with_spec=True):
    tanh = TanhModule(
        in_keys=["param"], out_keys=["action"], **({"spec": spec} if with_spec else {})
    )
    return TensorDictSequential(
        TensorDictModule(_mlp(spec.shape[-1]), in_keys=["observation"], out_keys=["param"]), tanh
    )


def test_td3_script(tmp_path):
    """td3/td3.py: Tanh-squashed deterministic actor with additive Gaussian exploration,
    ``TD3Loss.value_loss`` every step and ``actor_loss`` every second one, separate
    optimizers, a ``compilable`` storage and buffer."""
    parts = {}

    def build(train_env, eval_env):
        spec = train_env.action_spec_unbatched
        actor = _deterministic_actor(spec)
        critic = ValueOperator(_mlp(1), in_keys=["action", "observation"])
        _init_lazy(eval_env, actor, critic)
        explore = TensorDictSequential(
            actor, AdditiveGaussianModule(sigma_init=1, sigma_end=1, mean=0, std=0.1, spec=spec)
        )
        loss = TD3Loss(
            actor_network=actor,
            qvalue_network=critic,
            num_qvalue_nets=2,
            loss_function="l2",
            delay_actor=True,
            delay_qvalue=True,
            action_spec=actor[1].spec,
            policy_noise=0.2,
            noise_clip=0.5,
        )
        loss.make_value_estimator(gamma=0.99)
        parts.update(
            loss=loss,
            actor_opt=torch.optim.Adam(loss.actor_network_params.flatten_keys().values()),
            critic_opt=torch.optim.Adam(loss.qvalue_network_params.flatten_keys().values()),
            target=SoftUpdate(loss, eps=0.995),
        )
        return explore, explore, {}

    def update(sample, step):
        q_loss, *_ = parts["loss"].value_loss(sample)
        q_loss.backward()
        parts["critic_opt"].step()
        parts["critic_opt"].zero_grad(set_to_none=True)
        actor_loss = q_loss.new_zeros(())
        if step % 2 == 0:
            actor_loss, *_ = parts["loss"].actor_loss(sample)
            actor_loss.backward()
            parts["actor_opt"].step()
            parts["actor_opt"].zero_grad(set_to_none=True)
            parts["target"].step()
        return TensorDict(q_loss=q_loss.detach(), a_loss=actor_loss.detach())

    storage = LazyTensorStorage(1000, device="cpu", compilable=False)
    scalars = _off_policy_run(tmp_path, "TD3", build, update, storage, log_many=False)
    assert all(value != 0 for _, value in scalars["train/a_loss"])  # 5 updates: 2 or 3 actor ones


def test_ddpg_script(tmp_path):
    """ddpg/ddpg.py (its newer utils: ``Collector``, ``action_spec_unbatched``,
    ``logger.log_metrics``): Ornstein-Uhlenbeck exploration stepped by the frames of each
    batch, ``DDPGLoss`` summed into one backward, a memory-mapped buffer."""
    parts = {}

    def build(train_env, eval_env):
        spec = train_env.action_spec_unbatched
        actor = _deterministic_actor(spec, with_spec=False)
        critic = ValueOperator(_mlp(1), in_keys=["action", "observation"])
        with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
            td = eval_env.reset()
            actor(td)
            critic(td)
        noise = OrnsteinUhlenbeckProcessModule(spec=spec, annealing_num_steps=1000, safe=False)
        explore = TensorDictSequential(actor, noise)
        loss = DDPGLoss(
            actor_network=actor,
            value_network=critic,
            loss_function="l2",
            delay_actor=True,
            delay_value=True,
        )
        loss.make_value_estimator(gamma=0.99)
        optimizer = group_optimizers(
            torch.optim.Adam(loss.actor_network_params.flatten_keys().values(), weight_decay=1e-4),
            torch.optim.Adam(loss.value_network_params.flatten_keys().values(), weight_decay=1e-4),
        )
        parts.update(loss=loss, optimizer=optimizer, target=SoftUpdate(loss, eps=0.995))
        return explore, explore, {"after_batch": explore[1].step}

    def update(sample, step):
        parts["optimizer"].zero_grad(set_to_none=True)
        out = parts["loss"](sample)
        out.sum(reduce=True).backward()
        parts["optimizer"].step()
        parts["target"].step()
        return out.detach()

    storage = LazyMemmapStorage(1000, scratch_dir=None, device="cpu")
    assert Collector is SyncDataCollector
    scalars = _off_policy_run(tmp_path, "DDPG", build, update, storage, log_many=True)
    assert {"train/loss_actor", "train/loss_value"} <= set(scalars)


def test_discrete_sac_script(tmp_path):
    """sac/discrete_sac.py: a one-hot categorical actor (``SafeModule`` logits) and a
    Q-network over all actions in ``DiscreteSACLoss``, three optimizers stepped in turn,
    a memory-mapped buffer in a temporary directory, ``log_scalar`` of numpy means."""
    import tempfile

    import numpy as np

    from rl_trainers.data import CompositeSpec
    from rl_trainers.modules import OneHotCategorical, SafeModule
    from rl_trainers.objectives import DiscreteSACLoss

    torch.manual_seed(0)

    def maker():
        with set_gym_backend("gymnasium"):
            return GymEnv("CartPole-v1", device="cpu", from_pixels=False, pixels_only=False)

    def make_env():
        transforms = Compose(
            StepCounter(max_steps=100), InitTracker(), DoubleToFloat(), RewardSum()
        )
        return TransformedEnv(ParallelEnv(1, EnvCreator(maker), serial_for_single=True), transforms)

    train_env, eval_env = make_env(), make_env()
    action_spec = train_env.action_spec[(0,) * len(train_env.batch_size)]
    actor = ProbabilisticActor(
        spec=CompositeSpec(action=eval_env.action_spec),
        module=SafeModule(
            _mlp(action_spec.shape[-1]), in_keys=["observation"], out_keys=["logits"]
        ),
        in_keys=["logits"],
        out_keys=["action"],
        distribution_class=OneHotCategorical,
        distribution_kwargs={},
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue = TensorDictModule(
        _mlp(action_spec.shape[-1]), in_keys=["observation"], out_keys=["action_value"]
    )
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.reset()
        actor(td)
        qvalue(td)
    loss_module = DiscreteSACLoss(
        actor_network=actor,
        qvalue_network=qvalue,
        num_actions=actor.spec["action"].space.n,
        num_qvalue_nets=2,
        loss_function="l2",
        target_entropy_weight=0.2,
        delay_qvalue=True,
    )
    loss_module.make_value_estimator(gamma=0.99)
    target = SoftUpdate(loss_module, eps=0.995)
    critic_opt = torch.optim.Adam(loss_module.qvalue_network_params.flatten_keys().values())
    actor_opt = torch.optim.Adam(loss_module.actor_network_params.flatten_keys().values())
    alpha_opt = torch.optim.Adam([loss_module.log_alpha], lr=3e-4)
    collector = SyncDataCollector(
        train_env,
        actor,
        init_random_frames=100,
        frames_per_batch=100,
        total_frames=300,
        reset_at_each_iter=False,
        device="cpu",
        storing_device="cpu",
    )
    collector.set_seed(0)
    logger = _csv_logger(tmp_path, "DiscreteSAC")
    with tempfile.TemporaryDirectory() as scratch_dir:
        storage = LazyMemmapStorage(1000, scratch_dir=scratch_dir, device="cpu")
        buffer = TensorDictReplayBuffer(
            pin_memory=False, prefetch=3, storage=storage, batch_size=32
        )
    frames = 0
    for batch in collector:
        collector.update_policy_weights_()
        batch = batch.reshape(-1)
        buffer.extend(batch.cpu())
        frames += batch.numel()
        if frames < 100:
            continue
        q_losses, actor_losses = [], []
        for _ in range(4):
            out = loss_module(buffer.sample().clone())
            for loss, optim in (
                (out["loss_qvalue"], critic_opt),
                (out["loss_actor"], actor_opt),
                (out["loss_alpha"], alpha_opt),
            ):
                optim.zero_grad()
                loss.backward()
                optim.step()
            q_losses.append(out["loss_qvalue"].item())
            actor_losses.append(out["loss_actor"].item())
            target.step()
        logger.log_scalar("train/q_loss", np.mean(q_losses), frames)
        logger.log_scalar("train/a_loss", np.mean(actor_losses), frames)
    collector.shutdown()
    with set_exploration_type(ExplorationType.MODE), torch.no_grad():
        rollout = eval_env.rollout(100, actor, auto_cast_to_device=True, break_when_any_done=True)
    assert rollout["action"].sum(-1).eq(1).all()
    assert [step for step, _ in _scalars(logger.log_dir)["train/q_loss"]] == [100, 200, 300]


def test_crossq_script(tmp_path):
    """crossq/crossq.py: batch-renormalised MLPs (``norm_class=BatchRenorm1d``), the critic
    step alone or with the actor and temperature terms (``CrossQLoss.qvalue_loss``,
    ``actor_loss``, ``alpha_loss(log_prob=)``), priorities written at the loss's key, a
    buffer transform, NaN-averaged losses."""
    from rl_trainers.modules.models.batchrenorm import BatchRenorm1d

    from rl_trainers.objectives import CrossQLoss

    torch.manual_seed(0)
    train_env, eval_env = _off_policy_envs(seed=0, max_steps=50)
    spec = train_env.action_spec_unbatched

    def renorm_mlp(out_features):
        norm = {"momentum": 0.01, "num_features": 32, "warmup_steps": 10}
        return _mlp(out_features, norm_class=BatchRenorm1d, norm_kwargs=norm)

    head = nn.Sequential(
        renorm_mlp(2 * spec.shape[-1]),
        NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
    )
    actor = ProbabilisticActor(
        TensorDictModule(head, in_keys=["observation"], out_keys=["loc", "scale"]),
        spec=spec,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": torch.as_tensor(spec.space.low),
            "high": torch.as_tensor(spec.space.high),
            "tanh_loc": False,
            "safe_tanh": True,
        },
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue = ValueOperator(renorm_mlp(1), in_keys=["action", "observation"])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = train_env.fake_tensordict()
        for net in (actor, qvalue):
            net.eval()
            net(td)
            net.train()
    loss_module = CrossQLoss(
        actor_network=actor, qvalue_network=qvalue, num_qvalue_nets=2, loss_function="l2"
    )
    loss_module.make_value_estimator(gamma=0.99, device=torch.device("cpu"))
    optimizer = group_optimizers(
        torch.optim.Adam(loss_module.actor_network_params.flatten_keys().values(), lr=1e-3),
        torch.optim.Adam(loss_module.qvalue_network_params.flatten_keys().values(), lr=1e-3),
        torch.optim.Adam([loss_module.log_alpha], lr=1e-3),
    )
    collector = SyncDataCollector(
        train_env, actor.eval(), init_random_frames=100, frames_per_batch=50, total_frames=200
    )
    buffer = TensorDictReplayBuffer(
        pin_memory=False, prefetch=3, storage=LazyMemmapStorage(1000), batch_size=32
    )
    buffer.append_transform(lambda x: x.to("cpu", non_blocking=True))

    def update(sample, with_actor):
        optimizer.zero_grad(set_to_none=True)
        q_loss, meta = loss_module.qvalue_loss(sample)
        sample.set(loss_module.tensor_keys.priority, meta["td_error"])
        total, out = q_loss.mean(), {"loss_qvalue": q_loss.mean()}
        out["loss_actor"] = out["loss_alpha"] = torch.tensor(float("nan"))
        if with_actor:
            actor_loss, actor_meta = loss_module.actor_loss(sample)
            alpha_loss = loss_module.alpha_loss(log_prob=actor_meta["log_prob"].detach())
            total = total + actor_loss.mean()
            out.update(loss_actor=actor_loss.mean(), loss_alpha=alpha_loss.mean())
        total.backward()
        optimizer.step()
        return TensorDict(out).detach()

    frames, steps, logged = 0, 0, []
    for batch in collector:
        collector.update_policy_weights_()
        buffer.extend(batch.reshape(-1))
        frames += batch.numel()
        if frames < 100:
            continue
        tds = []
        for _ in range(4):
            steps += 1
            sample = buffer.sample()
            tds.append(update(sample, with_actor=steps % 3 == 0).clone())
            assert loss_module.tensor_keys.priority in sample.keys()
        logged.append(TensorDict.stack(tds).nanmean())
    collector.shutdown()
    eval_env.close()
    assert len(logged) == 3 and all(torch.isfinite(td["loss_actor"]) for td in logged)


def test_iql_online_script(tmp_path):
    """iql/iql_online.py: its utils import torchrl's D4RL dataset class at the top (used by
    the offline script only) and ``ACTIVATIONS``; the gym backend set for the process,
    trajectories cut by the collector's ``max_frames_per_traj``, ``IQLLoss`` with a value
    network and its three optimizers, ``SoftUpdate(tau=)``."""
    from rl_trainers.data.datasets.d4rl import D4RLExperienceReplay
    from rl_trainers.objectives import IQLLoss
    from rl_trainers.trainers.helpers.models import ACTIVATIONS

    assert D4RLExperienceReplay.__name__ == "D4RLExperienceReplay"
    torch.manual_seed(0)
    set_gym_backend("gymnasium").set()
    maker = functools.partial(_gym_or_dm_control, "gymnasium", "Pendulum-v1")
    train_env = TransformedEnv(
        ParallelEnv(1, EnvCreator(maker), serial_for_single=True),
        Compose(InitTracker(), DoubleToFloat(), RewardSum()),
    )
    spec = train_env.action_spec_unbatched
    relu = ACTIVATIONS["relu"]
    head = nn.Sequential(
        MLP(num_cells=[32, 32], out_features=2 * spec.shape[-1], activation_class=relu),
        NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
    )
    actor = ProbabilisticActor(
        TensorDictModule(head, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high, "tanh_loc": False},
        default_interaction_type=ExplorationType.RANDOM,
    )
    qvalue = ValueOperator(
        MLP(num_cells=[32, 32], out_features=1, activation_class=relu),
        in_keys=["observation", "action"],
        out_keys=["state_action_value"],
    )
    value = ValueOperator(
        MLP(num_cells=[32, 32], out_features=1, activation_class=relu),
        in_keys=["observation"],
        out_keys=["state_value"],
    )
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = train_env.reset()
        for net in (actor, qvalue, value):
            net(td)
    loss_module = IQLLoss(
        actor, qvalue, value_network=value, loss_function="l2", temperature=3.0, expectile=0.7
    )
    loss_module.make_value_estimator(gamma=0.99)
    target = SoftUpdate(loss_module, tau=0.005)
    optims = {
        name: torch.optim.Adam(getattr(loss_module, f"{net}_params").flatten_keys().values())
        for name, net in (
            ("loss_actor", "actor_network"),
            ("loss_value", "value_network"),
            ("loss_qvalue", "qvalue_network"),
        )
    }
    collector = SyncDataCollector(
        train_env,
        actor,
        frames_per_batch=100,
        init_random_frames=100,
        max_frames_per_traj=60,
        total_frames=300,
        device="cpu",
    )
    collector.set_seed(0)
    buffer = TensorDictReplayBuffer(
        pin_memory=False, prefetch=3, storage=LazyMemmapStorage(1000), batch_size=32
    )
    frames, entropies = 0, []
    for batch in collector:
        collector.update_policy_weights_()
        batch = batch.view(-1)
        assert batch["next", "step_count"].max() <= 60  # cut by max_frames_per_traj
        buffer.extend(batch.cpu())
        frames += batch.numel()
        if frames < 100:
            continue
        for _ in range(3):
            out = loss_module(buffer.sample().clone())
            for name, optim in optims.items():
                optim.zero_grad()
                out[name].backward()
                optim.step()
            target.step()
            entropies.append(out.get("entropy").detach())
    collector.shutdown()
    assert len(entropies) == 9 and all(torch.isfinite(e).all() for e in entropies)


# --------------------------------------------------------------------------- on-policy
def _on_policy_env(normalize: bool):
    env = TransformedEnv(GymEnv("Pendulum-v1", device="cpu", from_pixels=False, pixels_only=False))
    if normalize:
        env.append_transform(VecNorm(in_keys=["observation"], decay=0.99999, eps=1e-2))
        env.append_transform(ClipTransform(in_keys=["observation"], low=-10, high=10))
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    env.append_transform(DoubleToFloat(in_keys=["observation"]))
    return env


def _actor_critic(env):
    """The PPO/A2C MuJoCo scripts' models: orthogonally initialised Tanh MLPs, a
    state-independent scale, a TanhNormal over the action bounds."""
    n_obs = env.observation_spec["observation"].shape[-1]
    spec = env.action_spec_unbatched
    policy = MLP(
        in_features=n_obs, out_features=spec.shape[-1], num_cells=[16, 16], activation_class=nn.Tanh
    )
    value = MLP(in_features=n_obs, out_features=1, num_cells=[16, 16], activation_class=nn.Tanh)
    for mlp, gain in ((policy, 1.0), (value, 0.01)):
        for layer in mlp.modules():
            if isinstance(layer, nn.Linear):
                nn.init.orthogonal_(layer.weight, gain)
                layer.bias.data.zero_()
    head = nn.Sequential(policy, AddStateIndependentNormalScale(spec.shape[-1], scale_lb=1e-8))
    actor = ProbabilisticActor(
        TensorDictModule(head, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.full_action_spec_unbatched,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high, "tanh_loc": False},
        return_log_prob=True,
        default_interaction_type=ExplorationType.RANDOM,
    )
    return actor, ValueOperator(value, in_keys=["observation"])


@pytest.mark.parametrize("algo", ["PPO", "A2C"])
def test_ppo_and_a2c_mujoco_scripts(tmp_path, algo):
    """ppo/ppo_mujoco.py and a2c/a2c_mujoco.py: GAE on the batch, a without-replacement
    buffer iterated in minibatches, actor and critic optimizers with an annealed learning
    rate, a deterministic evaluation on a VecNorm env in eval mode."""
    torch.manual_seed(0)
    actor, critic = _actor_critic(_on_policy_env(normalize=True))
    collector = SyncDataCollector(
        create_env_fn=_on_policy_env(normalize=True),
        policy=actor,
        frames_per_batch=64,
        total_frames=192,
        device="cpu",
        storing_device="cpu",
        max_frames_per_traj=-1,
    )
    buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(64), sampler=SamplerWithoutReplacement(), batch_size=16
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    kwargs = {"loss_critic_type": "l2", "entropy_coef": 0.0, "critic_coef": 0.25}
    if algo == "PPO":
        loss_module = ClipPPOLoss(
            actor, critic, clip_epsilon=0.2, normalize_advantage=True, **kwargs
        )
    else:
        loss_module = A2CLoss(actor_network=actor, critic_network=critic, **kwargs)
    epochs = 2 if algo == "PPO" else 1
    optims = [torch.optim.Adam(m.parameters(), lr=3e-4, eps=1e-5) for m in (actor, critic)]
    logger = _csv_logger(tmp_path, algo)
    test_env = _on_policy_env(normalize=True)
    test_env.eval()
    total_updates, updates = 3 * epochs * 4, 0
    losses = TensorDict({}, batch_size=[epochs, 4])
    frames = 0
    for i, data in enumerate(collector):
        frames += data.numel()
        for j in range(epochs):
            with torch.no_grad():
                data = advantage(data)
            buffer.extend(data.reshape(-1))
            for k, batch in enumerate(buffer):
                alpha = 1 - updates / total_updates
                for optim in optims:
                    for group in optim.param_groups:
                        group["lr"] = 3e-4 * alpha
                if algo == "PPO":
                    loss_module.clip_epsilon.copy_(0.2 * alpha)
                updates += 1
                out = loss_module(batch)
                losses[j, k] = out.select("loss_critic", "loss_objective").detach()
                (out["loss_objective"] + out.get("loss_entropy", 0.0)).backward()
                out["loss_critic"].backward()
                for optim in optims:
                    optim.step()
                    optim.zero_grad()
        for key, value in losses.apply(lambda x: x.float().mean(), batch_size=[]).items():
            logger.log_scalar(f"train/{key}", value.item(), frames)
        if i == 2:
            with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
                actor.eval()
                rollout = test_env.rollout(
                    policy=actor, auto_reset=True, auto_cast_to_device=True, max_steps=200
                )
                actor.train()
            returns = rollout["next", "episode_reward"][rollout["next", "done"]]
            logger.log_scalar("eval/reward", returns.mean(), frames)
        collector.update_policy_weights_()
    assert updates == total_updates
    scalars = _scalars(logger.log_dir)
    assert [step for step, _ in scalars["train/loss_critic"]] == [64, 128, 192]
    assert len(scalars["eval/reward"]) == 1


# --------------------------------------------------------------------------- DQN
def test_dqn_cartpole_script(tmp_path):
    """dqn/dqn_cartpole.py: a QValueActor on the action spec in a Composite, e-greedy
    exploration annealed per batch, a hard target update, a prefetching buffer."""
    torch.manual_seed(0)

    def make_env():
        env = TransformedEnv(GymEnv("CartPole-v1", device="cpu"))
        env.append_transform(RewardSum())
        env.append_transform(StepCounter())
        return env

    proof = make_env()
    action_spec = proof.specs["input_spec", "full_action_spec", "action"]
    mlp = MLP(
        in_features=proof.observation_spec["observation"].shape[-1],
        out_features=action_spec.space.n,
        num_cells=[32, 32],
        activation_class=nn.ReLU,
    )
    model = QValueActor(module=mlp, spec=Composite(action=action_spec), in_keys=["observation"])
    greedy = EGreedyModule(annealing_num_steps=400, eps_init=1.0, eps_end=0.05, spec=model.spec)
    explore = TensorDictSequential(model, greedy)
    buffer = TensorDictReplayBuffer(
        pin_memory=False, prefetch=10, storage=LazyTensorStorage(max_size=1000), batch_size=32
    )
    loss_module = DQNLoss(value_network=model, loss_function="l2", delay_value=True)
    loss_module.make_value_estimator(gamma=0.99)
    target = HardUpdate(loss_module, value_network_update_interval=10)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=2.5e-4)
    collector = SyncDataCollector(
        create_env_fn=make_env(),
        policy=explore,
        frames_per_batch=20,
        total_frames=600,
        device="cpu",
        storing_device="cpu",
        max_frames_per_traj=-1,
        init_random_frames=100,
        compile_policy=False,
        cudagraph_policy=False,
    )
    logger = _csv_logger(tmp_path, "DQN")
    frames = 0
    for data in collector:
        data = data.reshape(-1)
        buffer.extend(data)
        frames += data.numel()
        greedy.step(data.numel())
        if frames < 100:
            continue
        out = loss_module(buffer.sample(32))
        optimizer.zero_grad()
        out["loss"].backward()
        optimizer.step()
        target.step()
        q_values = (data["action_value"] * data["action"]).sum().item() / 20
        logger.log_scalar("train/q_values", q_values, step=frames)
        logger.log_scalar("train/epsilon", greedy.eps, step=frames)
    collector.shutdown()
    scalars = _scalars(logger.log_dir)
    epsilon = [value for _, value in scalars["train/epsilon"]]
    assert len(epsilon) == 26 and epsilon[-1] == pytest.approx(0.05)
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        rollout = proof.rollout(max_steps=50, policy=model, break_when_any_done=True)
    assert rollout["action"].sum(-1).eq(1).all()  # one-hot greedy actions
