"""torchrl's sota-implementations/cql/cql_online.py and utils.py, ported by renaming the imports.

Pendulum-v1 with a few hundred frames: ParallelEnv(EnvCreator(partial)) train env, an eval env
built from ``train_env.transform.clone()``, a TanhNormal actor, CQLLoss built from the online
config's values + SoftUpdate, ``group_optimizers`` over the actor/critic/alpha(/alpha') optimisers
(``None`` without Lagrange), ``update()`` summing ``loss_qvalue + loss_cql``, CSV logging.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyMemmapStorage, TensorDictReplayBuffer
from rl_trainers.envs import (
    Compose,
    DoubleToFloat,
    EnvCreator,
    ParallelEnv,
    RewardSum,
    TransformedEnv,
)
from rl_trainers.envs.libs.gym import GymEnv, set_gym_backend
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import CQLLoss, SoftUpdate, group_optimizers
from rl_trainers.record.loggers import generate_exp_name, get_logger
from rl_trainers.trainers.helpers.models import ACTIVATIONS

CFG = {
    "env": {"name": "Pendulum-v1", "seed": 0, "train_num_envs": 1, "eval_num_envs": 1},
    "env_backend": "gymnasium",
    "collector": {
        "frames_per_batch": 100,
        "total_frames": 300,
        "init_random_frames": 100,
        "env_per_collector": 1,
        "device": "cpu",
        "max_frames_per_traj": -1,
    },
    "optim": {"utd_ratio": 0.05, "actor_lr": 3e-4, "critic_lr": 3e-4, "weight_decay": 0.0},
    "model": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0},
    "loss": {
        "loss_function": "l2",
        "gamma": 0.99,
        "tau": 0.005,
        "temperature": 1.0,
        "min_q_weight": 1.0,
        "max_q_backup": False,
        "deterministic_backup": False,
        "num_random": 10,
        "with_lagrange": False,
        "lagrange_thresh": 10.0,
    },
}


def env_maker(cfg, device="cpu", from_pixels=False):
    with set_gym_backend(cfg.env_backend):
        return GymEnv(cfg.env.name, device=device, from_pixels=from_pixels, pixels_only=False)


def make_environment(cfg):
    maker = functools.partial(env_maker, cfg)
    parallel_env = ParallelEnv(cfg.env.train_num_envs, EnvCreator(maker), serial_for_single=True)
    parallel_env.set_seed(cfg.env.seed)
    train_env = TransformedEnv(parallel_env, Compose(DoubleToFloat(), RewardSum()))
    eval_env = TransformedEnv(
        ParallelEnv(cfg.env.eval_num_envs, EnvCreator(maker), serial_for_single=True),
        train_env.transform.clone(),
    )
    eval_env.set_seed(0)
    return train_env, eval_env


def make_cql_model(cfg, train_env, eval_env):
    action_spec = train_env.action_spec_unbatched
    actor_net = torch.nn.Sequential(
        MLP(
            num_cells=cfg.model.hidden_sizes,
            out_features=2 * eval_env.action_spec.shape[-1],
            activation_class=ACTIVATIONS[cfg.model.activation],
        ),
        NormalParamExtractor(
            scale_mapping=f"biased_softplus_{cfg.model.default_policy_scale}", scale_lb=0.1
        ),
    )
    actor = ProbabilisticActor(
        module=TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": action_spec.space.low,
            "high": action_spec.space.high,
            "tanh_loc": False,
        },
        default_interaction_type=ExplorationType.RANDOM,
    )
    q_net = MLP(
        num_cells=cfg.model.hidden_sizes,
        out_features=1,
        activation_class=ACTIVATIONS[cfg.model.activation],
    )
    qvalue = ValueOperator(
        in_keys=["observation", "action"], out_keys=["state_action_value"], module=q_net
    )
    model = torch.nn.ModuleList([actor, qvalue])
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = eval_env.reset()
        for net in model:
            net(td)
    del td
    eval_env.close()
    return model


def make_continuous_loss(loss_cfg, model):
    loss_module = CQLLoss(
        model[0],
        model[1],
        loss_function=loss_cfg.loss_function,
        temperature=loss_cfg.temperature,
        min_q_weight=loss_cfg.min_q_weight,
        max_q_backup=loss_cfg.max_q_backup,
        deterministic_backup=loss_cfg.deterministic_backup,
        num_random=loss_cfg.num_random,
        with_lagrange=loss_cfg.with_lagrange,
        lagrange_thresh=loss_cfg.lagrange_thresh,
    )
    loss_module.make_value_estimator(gamma=loss_cfg.gamma, device=None)
    return loss_module, SoftUpdate(loss_module, tau=loss_cfg.tau)


def make_continuous_cql_optimizer(cfg, loss_module):
    critic_params = loss_module.qvalue_network_params.flatten_keys().values()
    actor_params = loss_module.actor_network_params.flatten_keys().values()
    kw = {"weight_decay": cfg.optim.weight_decay}
    actor_optim = torch.optim.Adam(actor_params, lr=cfg.optim.actor_lr, **kw)
    critic_optim = torch.optim.Adam(critic_params, lr=cfg.optim.critic_lr, **kw)
    alpha_optim = torch.optim.Adam([loss_module.log_alpha], lr=cfg.optim.actor_lr, **kw)
    if loss_module.with_lagrange:
        alpha_prime_optim = torch.optim.Adam([loss_module.log_alpha_prime], lr=cfg.optim.critic_lr)
    else:
        alpha_prime_optim = None
    return actor_optim, critic_optim, alpha_optim, alpha_prime_optim


def run(log_dir, **loss_overrides):
    cfg = OmegaConf.create(CFG)
    cfg.loss.update(loss_overrides)
    exp_name = generate_exp_name("CQL-online", "cql_test")
    logger = get_logger(
        logger_type="csv",
        logger_name=str(log_dir),
        experiment_name=exp_name,
        wandb_kwargs={"mode": "offline", "config": dict(cfg), "project": "p", "group": None},
    )
    torch.manual_seed(cfg.env.seed)
    train_env, eval_env = make_environment(cfg)
    replay_buffer = TensorDictReplayBuffer(
        prefetch=3,
        storage=LazyMemmapStorage(10_000, scratch_dir=str(log_dir / "rb")),
        batch_size=64,
    )
    model = make_cql_model(cfg, train_env, eval_env)
    collector = SyncDataCollector(
        train_env,
        model[0],
        init_random_frames=cfg.collector.init_random_frames,
        frames_per_batch=cfg.collector.frames_per_batch,
        max_frames_per_traj=cfg.collector.max_frames_per_traj,
        total_frames=cfg.collector.total_frames,
        device=cfg.collector.device,
        compile_policy=False,
        cudagraph_policy=False,
    )
    collector.set_seed(cfg.env.seed)
    loss_module, target_net_updater = make_continuous_loss(cfg.loss, model)
    optimizer = group_optimizers(*make_continuous_cql_optimizer(cfg, loss_module))

    def update(sampled_tensordict):
        loss_td = loss_module(sampled_tensordict)
        q_loss = loss_td["loss_qvalue"] + loss_td["loss_cql"]
        total_loss = (
            loss_td["loss_alpha"] + loss_td["loss_actor"] + loss_td["loss_alpha_prime"] + q_loss
        )
        total_loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        target_net_updater.step()
        return loss_td.detach()

    collected_frames = 0
    num_updates = int(
        cfg.collector.env_per_collector * cfg.collector.frames_per_batch * cfg.optim.utd_ratio
    )
    c_iter = iter(collector)
    for _ in range(len(collector)):
        tensordict = next(c_iter)
        collector.update_policy_weights_()
        tensordict = tensordict.view(-1)
        replay_buffer.extend(tensordict)
        collected_frames += tensordict.numel()
        if collected_frames >= cfg.collector.init_random_frames:
            log_loss_td = TensorDict(batch_size=[num_updates], device="cpu")
            for j in range(num_updates):
                log_loss_td[j] = update(replay_buffer.sample()).detach()
        metrics_to_log = {}
        if collected_frames >= cfg.collector.init_random_frames:
            for key in ("loss_actor", "loss_qvalue", "loss_alpha", "loss_alpha_prime", "entropy"):
                metrics_to_log[f"train/{key}"] = log_loss_td.get(key).mean()
            metrics_to_log["train/loss_cql"] = log_loss_td.get("loss_cql").mean()
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = eval_env.rollout(
                50, model[0], auto_cast_to_device=True, break_when_any_done=True
            )
            metrics_to_log["eval/reward"] = eval_rollout["next", "reward"].sum(-2).mean().item()
        for name, value in metrics_to_log.items():
            logger.log_scalar(name, value, collected_frames)
    collector.shutdown()
    if not eval_env.is_closed:
        eval_env.close()
    if not train_env.is_closed:
        train_env.close()
    return log_dir / exp_name, loss_module


def _rows(path):
    return [r.split(",") for r in path.read_text().split()]


@pytest.mark.parametrize("with_lagrange", [False, True])
def test_cql_online_port_trains_and_logs(tmp_path, with_lagrange):
    exp_dir, loss_module = run(tmp_path, with_lagrange=with_lagrange)
    scalars = exp_dir / "scalars"
    for key in ("loss_actor", "loss_qvalue", "loss_cql", "loss_alpha", "entropy"):
        rows = _rows(scalars / f"train/{key}.csv")
        assert [int(r[0]) for r in rows] == [100, 200, 300], key
        assert all(math.isfinite(float(r[1])) for r in rows), key
    alpha_prime = [float(r[1]) for r in _rows(scalars / "train/loss_alpha_prime.csv")]
    if with_lagrange:
        # log_alpha_prime moved off its initial 0 (alpha' = 1) under its own optimiser
        assert loss_module.log_alpha_prime.item() != 0.0
        assert all(v != 0.0 for v in alpha_prime)
    else:
        assert alpha_prime == [0.0, 0.0, 0.0]
    assert len(_rows(scalars / "eval/reward.csv")) == 3


def test_cql_loss_accepts_torchrls_newer_keyword_options():
    cfg = OmegaConf.create(CFG)
    train_env, eval_env = make_environment(cfg)
    model = make_cql_model(cfg, train_env, eval_env)
    td = train_env.rollout(8, model[0])
    train_env.close()
    loss = CQLLoss(model[0], model[1], deactivate_vmap=True, scalar_output_mode="exclude")
    out = loss(td)
    assert out["alpha"].shape == () and out["entropy"].shape == ()
    with pytest.raises(ValueError, match="scalar_output_mode"):
        CQLLoss(model[0], model[1], scalar_output_mode="stack")
