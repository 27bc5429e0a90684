"""torchrl's sota-implementations/crossq/crossq.py and utils.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: actor and critic MLPs with ``BatchRenorm1d``
(``torchrl.modules.models.batchrenorm``), the networks initialised in eval mode, the collector
given ``exploration_policy.eval()``, CrossQLoss's ``qvalue_loss``/``actor_loss``/``alpha_loss``
called one by one (the actor updated every ``policy_update_delay`` steps), the losses stacked
and ``nanmean``-ed, CSV logging.
"""

from __future__ import annotations

import math

import torch
from omegaconf import OmegaConf
from rl_trainers.modules.models.batchrenorm import BatchRenorm1d
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torch import nn, optim

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import TensorDictReplayBuffer
from rl_trainers.data.replay_buffers.storages import LazyMemmapStorage
from rl_trainers.envs import Compose, DoubleToFloat, EnvCreator, ParallelEnv, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv, set_gym_backend
from rl_trainers.envs.transforms import InitTracker, RewardSum, StepCounter
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, ProbabilisticActor, ValueOperator
from rl_trainers.modules.distributions import TanhNormal
from rl_trainers.objectives import CrossQLoss, group_optimizers
from rl_trainers.record.loggers import generate_exp_name, get_logger

CFG = {
    "env": {"name": "Pendulum-v1", "library": "gymnasium", "max_episode_steps": 200, "seed": 42},
    "collector": {
        "total_frames": 300,
        "init_random_frames": 100,
        "frames_per_batch": 100,
        "device": "cpu",
        "env_per_collector": 1,
    },
    "optim": {
        "utd_ratio": 0.06,
        "policy_update_delay": 3,
        "gamma": 0.99,
        "loss_function": "l2",
        "lr": 1.0e-3,
        "weight_decay": 0.0,
        "batch_size": 64,
        "alpha_init": 1.0,
        "adam_eps": 1.0e-8,
        "beta1": 0.5,
        "beta2": 0.999,
    },
    "network": {
        "batch_norm_momentum": 0.01,
        "warmup_steps": 10,
        "critic_hidden_sizes": [64, 64],
        "actor_hidden_sizes": [32, 32],
        "critic_activation": "relu",
        "actor_activation": "relu",
        "default_policy_scale": 1.0,
        "scale_lb": 0.1,
    },
    "logger": {"eval_iter": 200},
}


def env_maker(cfg, device="cpu"):
    with set_gym_backend(cfg.env.library):
        return GymEnv(cfg.env.name, device=device)


def make_environment(cfg):
    parallel_env = ParallelEnv(
        cfg.collector.env_per_collector,
        EnvCreator(lambda cfg=cfg: env_maker(cfg)),
        serial_for_single=True,
    )
    parallel_env.set_seed(cfg.env.seed)
    train_env = TransformedEnv(
        parallel_env,
        Compose(
            InitTracker(), StepCounter(cfg.env.max_episode_steps), DoubleToFloat(), RewardSum()
        ),
    )
    eval_env = TransformedEnv(
        ParallelEnv(
            cfg.collector.env_per_collector,
            EnvCreator(lambda cfg=cfg: env_maker(cfg)),
            serial_for_single=True,
        ),
        train_env.transform.clone(),
    )
    return train_env, eval_env


def get_activation(activation):
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "leaky_relu": nn.LeakyReLU}[activation]


def make_crossQ_agent(cfg, train_env):  # noqa: N802 (the script's name)
    in_keys = ["observation"]
    action_spec = train_env.action_spec
    if train_env.batch_size:
        action_spec = action_spec[(0,) * len(train_env.batch_size)]
    actor_net = MLP(
        num_cells=cfg.network.actor_hidden_sizes,
        out_features=2 * action_spec.shape[-1],
        activation_class=get_activation(cfg.network.actor_activation),
        norm_class=BatchRenorm1d,
        norm_kwargs={
            "momentum": cfg.network.batch_norm_momentum,
            "num_features": cfg.network.actor_hidden_sizes[-1],
            "warmup_steps": cfg.network.warmup_steps,
        },
    )
    actor_extractor = NormalParamExtractor(
        scale_mapping=f"biased_softplus_{cfg.network.default_policy_scale}",
        scale_lb=cfg.network.scale_lb,
    )
    actor = ProbabilisticActor(
        spec=action_spec,
        in_keys=["loc", "scale"],
        module=TensorDictModule(
            nn.Sequential(actor_net, actor_extractor), in_keys=in_keys, out_keys=["loc", "scale"]
        ),
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": action_spec.space.low,
            "high": action_spec.space.high,
            "tanh_loc": False,
        },
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=False,
    )
    qvalue_net = MLP(
        num_cells=cfg.network.critic_hidden_sizes,
        out_features=1,
        activation_class=get_activation(cfg.network.critic_activation),
        norm_class=BatchRenorm1d,
        norm_kwargs={
            "momentum": cfg.network.batch_norm_momentum,
            "num_features": cfg.network.critic_hidden_sizes[-1],
            "warmup_steps": cfg.network.warmup_steps,
        },
    )
    qvalue = ValueOperator(in_keys=["action"] + in_keys, module=qvalue_net)
    model = nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = train_env.fake_tensordict()
        for net in model:
            net.eval()
            net(td)
            net.train()
    del td
    return model, model[0]


def make_loss_module(cfg, model):
    loss_module = CrossQLoss(
        actor_network=model[0],
        qvalue_network=model[1],
        num_qvalue_nets=2,
        loss_function=cfg.optim.loss_function,
        alpha_init=cfg.optim.alpha_init,
    )
    loss_module.make_value_estimator(gamma=cfg.optim.gamma)
    return loss_module


def make_crossQ_optimizer(cfg, loss_module):  # noqa: N802 (the script's name)
    critic_params = list(loss_module.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    kw = {
        "lr": cfg.optim.lr,
        "weight_decay": cfg.optim.weight_decay,
        "eps": cfg.optim.adam_eps,
        "betas": (cfg.optim.beta1, cfg.optim.beta2),
    }
    return (
        optim.Adam(actor_params, **kw),
        optim.Adam(critic_params, **kw),
        optim.Adam([loss_module.log_alpha], lr=cfg.optim.lr),
    )


def run(log_dir):
    cfg = OmegaConf.create(CFG)
    exp_name = generate_exp_name("CrossQ", "crossq_test")
    logger = get_logger(
        logger_type="csv",
        logger_name=str(log_dir),
        experiment_name=exp_name,
        wandb_kwargs={"mode": "offline", "config": dict(cfg), "project": "p", "group": None},
    )
    torch.manual_seed(cfg.env.seed)
    train_env, eval_env = make_environment(cfg)
    model, exploration_policy = make_crossQ_agent(cfg, train_env)
    loss_module = make_loss_module(cfg, model)
    collector = SyncDataCollector(
        train_env,
        exploration_policy.eval(),
        init_random_frames=cfg.collector.init_random_frames,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=cfg.collector.total_frames,
        device=cfg.collector.device,
    )
    collector.set_seed(cfg.env.seed)
    replay_buffer = TensorDictReplayBuffer(
        pin_memory=False,
        prefetch=3,
        storage=LazyMemmapStorage(10_000, scratch_dir=None),
        batch_size=cfg.optim.batch_size,
    )
    replay_buffer.append_transform(lambda x: x.to("cpu", non_blocking=True))
    optimizer = group_optimizers(*make_crossQ_optimizer(cfg, loss_module))

    def update_qloss(sampled_tensordict):
        optimizer.zero_grad(set_to_none=True)
        q_loss, value_meta = loss_module.qvalue_loss(sampled_tensordict)
        sampled_tensordict.set(loss_module.tensor_keys.priority, value_meta["td_error"])
        q_loss = q_loss.mean()
        q_loss.backward()
        optimizer.step()
        td_loss = {"loss_qvalue": q_loss, "loss_actor": float("nan"), "loss_alpha": float("nan")}
        return TensorDict(td_loss, device="cpu").detach()

    def update_all(sampled_tensordict):
        optimizer.zero_grad(set_to_none=True)
        q_loss, value_meta = loss_module.qvalue_loss(sampled_tensordict)
        sampled_tensordict.set(loss_module.tensor_keys.priority, value_meta["td_error"])
        q_loss = q_loss.mean()
        actor_loss, metadata_actor = loss_module.actor_loss(sampled_tensordict)
        actor_loss = actor_loss.mean()
        alpha_loss = loss_module.alpha_loss(log_prob=metadata_actor["log_prob"].detach()).mean()
        (q_loss + actor_loss + actor_loss).backward()
        optimizer.step()
        td_loss = {"loss_qvalue": q_loss, "loss_actor": actor_loss, "loss_alpha": alpha_loss}
        return TensorDict(td_loss, device="cpu").detach()

    collected_frames = 0
    num_updates = int(cfg.collector.frames_per_batch * cfg.optim.utd_ratio)
    update_counter = 0
    c_iter = iter(collector)
    for _ in range(len(collector)):
        tensordict = next(c_iter)
        collector.update_policy_weights_()
        current_frames = tensordict.numel()
        tensordict = tensordict.reshape(-1)
        replay_buffer.extend(tensordict)
        collected_frames += current_frames
        if collected_frames >= cfg.collector.init_random_frames:
            tds = []
            for _ in range(num_updates):
                update_counter += 1
                update_actor = update_counter % cfg.optim.policy_update_delay == 0
                sampled_tensordict = replay_buffer.sample().to("cpu")
                if update_actor:
                    td_loss = update_all(sampled_tensordict)
                else:
                    td_loss = update_qloss(sampled_tensordict)
                tds.append(td_loss.clone())
            tds = TensorDict.stack(tds).nanmean()
        episode_end = (
            tensordict["next", "done"]
            if tensordict["next", "done"].any()
            else tensordict["next", "truncated"]
        )
        episode_rewards = tensordict["next", "episode_reward"][episode_end]
        metrics_to_log = {}
        if abs(collected_frames % cfg.logger.eval_iter) < cfg.collector.frames_per_batch:
            with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
                eval_rollout = eval_env.rollout(
                    cfg.env.max_episode_steps,
                    model[0],
                    auto_cast_to_device=True,
                    break_when_any_done=True,
                )
                metrics_to_log["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        if len(episode_rewards) > 0:
            episode_length = tensordict["next", "step_count"][episode_end]
            metrics_to_log["train/reward"] = episode_rewards.mean().item()
            metrics_to_log["train/episode_length"] = episode_length.sum().item() / len(
                episode_length
            )
        if collected_frames >= cfg.collector.init_random_frames:
            metrics_to_log["train/q_loss"] = tds["loss_qvalue"]
            metrics_to_log["train/actor_loss"] = tds["loss_actor"]
            metrics_to_log["train/alpha_loss"] = tds["loss_alpha"]
        for name, value in metrics_to_log.items():
            logger.log_scalar(name, value, collected_frames)
    collector.shutdown()
    if not eval_env.is_closed:
        eval_env.close()
    if not train_env.is_closed:
        train_env.close()
    return log_dir / exp_name, loss_module, model


def _rows(path):
    return [r.split(",") for r in path.read_text().split()]


def test_crossq_port_trains_and_logs(tmp_path):
    exp_dir, loss_module, model = run(tmp_path)
    scalars = exp_dir / "scalars"
    for name in ("train/q_loss", "train/actor_loss", "train/alpha_loss"):
        rows = _rows(scalars / f"{name}.csv")
        assert [int(r[0]) for r in rows] == [100, 200, 300], name
        assert all(math.isfinite(float(r[1])) for r in rows), name
    assert [int(r[0]) for r in _rows(scalars / "eval/reward.csv")] == [200]
    # 6 critic updates per batch from the first one (100 frames >= init_random_frames): each
    # qvalue_loss runs the critics once in training mode, actor_loss in eval mode
    buffers = dict(loss_module.qvalue_network_params.named_buffers())
    steps = [v for v in buffers.values() if v.dtype == torch.long]
    assert len(steps) == 2 and all((s == 18).all() for s in steps)
    # the actor, put in eval mode for the collector, samples in training mode in the loss (as
    # torchrl's loss copy of it): batch statistics at s' in each qvalue_loss (18) and at s in
    # each actor_loss (every 3rd update: 6); it is back in eval mode for the collector
    actor_norms = [m for m in model[0].modules() if isinstance(m, BatchRenorm1d)]
    assert len(actor_norms) == 2
    assert all(not m.training and m.num_batches_tracked == 24 for m in actor_norms)
    assert all(not m.training for m in model[0].modules())


def test_crossq_actor_runs_in_the_loss_mode_and_is_restored():
    cfg = OmegaConf.create(CFG)
    train_env, eval_env = make_environment(cfg)
    model, policy = make_crossQ_agent(cfg, train_env)
    loss_module = make_loss_module(cfg, model)
    policy.eval()
    td = train_env.rollout(40, policy)
    train_env.close()
    eval_env.close()
    norm = next(m for m in model[0].modules() if isinstance(m, BatchRenorm1d))
    seen = []
    norm.register_forward_pre_hook(lambda m, _: seen.append(m.training))
    loss_module(td)
    assert seen == [True, True]  # a' at s' (qvalue_loss), a~ at s (actor_loss)
    assert not any(m.training for m in model[0].modules())
    loss_module.eval()
    loss_module(td)
    assert seen[2:] == [False, False]


def test_batch_renorm_is_batch_norm_during_warmup_then_corrects_towards_running_stats():
    torch.manual_seed(0)
    norm = BatchRenorm1d(3, momentum=0.1, warmup_steps=2)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        norm.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
    x = torch.randn(16, 3) * 2 + 1
    mean, var = x.mean(0), x.var(0, unbiased=False)
    std = (var + norm.eps).sqrt()
    bn = (x - mean) / std
    torch.testing.assert_close(norm(x), norm.weight * bn + norm.bias)  # step 0: batch norm
    running_mean = 0.1 * mean
    running_var = 0.9 + 0.1 * x.var(0, unbiased=True)
    torch.testing.assert_close(norm.running_mean, running_mean)
    torch.testing.assert_close(norm.running_var, running_var)
    norm(x)  # step 1, still warming up
    running_mean = 0.9 * running_mean + 0.1 * mean
    running_var = 0.9 * running_var + 0.1 * x.var(0, unbiased=True)
    # step 2: renormalised with r, d from the running statistics
    running_std = (running_var + norm.eps).sqrt()
    r = (std / running_std).clamp(1 / 3, 3)
    d = ((mean - running_mean) / running_std).clamp(-5, 5)
    torch.testing.assert_close(norm(x), norm.weight * (bn * r + d) + norm.bias)
    assert norm.num_batches_tracked == 3
    norm.eval()
    running_mean = 0.9 * running_mean + 0.1 * mean
    running_var = 0.9 * running_var + 0.1 * x.var(0, unbiased=True)
    expected = (x - running_mean) / (running_var + norm.eps).sqrt()
    torch.testing.assert_close(norm(x), norm.weight * expected + norm.bias)
    assert norm.num_batches_tracked == 3


def test_batch_renorm_smooth_warmup_and_import_paths():
    from rl_trainers.modules import BatchRenorm1d as exported

    assert exported is BatchRenorm1d
    norm = BatchRenorm1d(2, warmup_steps=4, smooth=True)
    norm.num_batches_tracked.fill_(1)
    assert norm._warmup_factor().item() == 0.25
    norm.num_batches_tracked.fill_(100)  # capped at 1 long after the warm-up
    assert norm._warmup_factor().item() == 1.0
