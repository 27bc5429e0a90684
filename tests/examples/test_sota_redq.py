"""torchrl's sota-implementations/redq/redq.py and utils.py, ported by renaming the imports.

Pendulum-v1 state observations concatenated under ``"observation_vector"`` (as the recipe's
env transforms do), the recipe's ``make_redq_model`` (state branch, no gSDE) and
``make_redq_loss`` (``REDQLoss_deprecated`` from ``objectives.deprecated``, a SoftUpdate with
``eps = 1 - 1 / value_network_update_interval``), an Ornstein-Uhlenbeck exploration wrapper, a
prioritized buffer (``PrioritizedSampler`` + ``pin_memory``), and torchrl's ``make_trainer``
wiring (the ``trainers.helpers`` one) for a few hundred frames, CSV logging.
"""

from __future__ import annotations

import math

import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictSequential
from tensordict.nn.distributions import NormalParamExtractor
from torch import nn

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyMemmapStorage, TensorDictReplayBuffer
from rl_trainers.data.replay_buffers import PrioritizedSampler
from rl_trainers.envs import CatTensors, Compose, DoubleToFloat, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.transforms import InitTracker, RewardSum, StepCounter
from rl_trainers.envs.utils import ExplorationType, set_exploration_type
from rl_trainers.modules import (
    MLP,
    OrnsteinUhlenbeckProcessModule,
    ProbabilisticActor,
    SafeModule,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import HardUpdate, REDQLoss, SoftUpdate
from rl_trainers.objectives.deprecated import REDQLoss_deprecated
from rl_trainers.record.loggers import get_logger
from rl_trainers.trainers.helpers import make_trainer
from rl_trainers.trainers.helpers.models import ACTIVATIONS

CFG = {
    "seed": 0,
    "network": {
        "activation": "elu",
        "tanh_loc": False,
        "default_policy_scale": 1.0,
        "actor_cells": 32,
        "actor_depth": 2,
        "qvalue_cells": 32,
        "qvalue_depth": 2,
        "scale_lb": 0.05,
    },
    "exploration": {
        "gSDE": False,
        "ou_exploration": 1,
        "annealing_frames": 1000,
        "ou_sigma": 0.2,
        "ou_theta": 0.15,
        "noisy": False,
    },
    "loss": {
        "loss_function": "smooth_l1",
        "type": "double",
        "num_q_values": 10,
        "gamma": 0.99,
        "hard_update": False,
        "value_network_update_interval": 200,
    },
}

# torchrl's trainers.helpers read a flat config (the recipe's own make_trainer copies them)
TRAINER_CFG = {
    "optimizer": "adam",
    "lr": 3e-4,
    "weight_decay": 0.0,
    "lr_scheduler": "",
    "frame_skip": 1,
    "frames_per_batch": 100,
    "total_frames": 300,
    "optim_steps_per_batch": 4,
    "clip_grad_norm": True,
    "clip_norm": 100.0,
    "log_interval": 100,
    "batch_size": 32,
    "normalize_rewards_online": True,
    "normalize_rewards_online_scale": 5,
    "normalize_rewards_online_decay": 0.999,
    "record_interval": 1,
    "record_frames": 50,
    "selected_keys": None,
    "sub_traj_len": -1,
}


def make_env():
    return TransformedEnv(
        GymEnv("Pendulum-v1"),
        Compose(
            CatTensors(in_keys=["observation"], out_key="observation_vector"),
            DoubleToFloat(),
            StepCounter(),
            InitTracker(),
            RewardSum(),
        ),
    )


def make_redq_model(proof_environment, cfg, device="cpu", in_keys=None):
    torch.manual_seed(cfg.seed)
    action_spec = proof_environment.action_spec
    gsde = cfg.exploration.gSDE
    in_keys_actor = ["observation_vector"] if in_keys is None else in_keys
    actor_net = MLP(
        num_cells=[cfg.network.actor_cells] * cfg.network.actor_depth,
        out_features=(2 - gsde) * action_spec.shape[-1],
        activation_class=ACTIVATIONS[cfg.network.activation],
    )
    qvalue_net = MLP(
        num_cells=[cfg.network.qvalue_cells] * cfg.network.qvalue_depth,
        out_features=1,
        activation_class=ACTIVATIONS[cfg.network.activation],
    )
    in_keys_qvalue = in_keys_actor + ["action"]
    actor_net = nn.Sequential(
        actor_net,
        NormalParamExtractor(
            scale_mapping=f"biased_softplus_{cfg.network.default_policy_scale}",
            scale_lb=cfg.network.scale_lb,
        ),
    )
    actor_module = SafeModule(actor_net, in_keys=in_keys_actor, out_keys=["loc", "scale"])
    actor = ProbabilisticActor(
        spec=action_spec,
        in_keys=["loc", "scale"],
        module=actor_module,
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": action_spec.space.low,
            "high": action_spec.space.high,
            "tanh_loc": cfg.network.tanh_loc,
        },
        default_interaction_type=InteractionType.RANDOM,
        return_log_prob=True,
    )
    qvalue = ValueOperator(in_keys=in_keys_qvalue, module=qvalue_net)
    model = nn.ModuleList([actor, qvalue]).to(device)
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        td = proof_environment.fake_tensordict()
        td = td.unsqueeze(-1)
        for net in model:
            net(td)
    del td
    return model


def make_target_updater(cfg, loss_module):
    if cfg.loss.type == "double":
        if not cfg.loss.hard_update:
            return SoftUpdate(loss_module, eps=1 - 1 / cfg.loss.value_network_update_interval)
        return HardUpdate(
            loss_module, value_network_update_interval=cfg.loss.value_network_update_interval
        )
    return None


def make_redq_loss(model, cfg):
    actor_model, qvalue_model = model
    loss_module = REDQLoss_deprecated(
        actor_network=actor_model,
        qvalue_network=qvalue_model,
        num_qvalue_nets=cfg.loss.num_q_values,
        gSDE=cfg.exploration.gSDE,
        loss_function=cfg.loss.loss_function,
        delay_qvalue=cfg.loss.type == "double",
    )
    loss_module.make_value_estimator(gamma=cfg.loss.gamma)
    return loss_module, make_target_updater(cfg, loss_module)


def run(log_dir):
    cfg = OmegaConf.create(CFG)
    trainer_cfg = OmegaConf.create(TRAINER_CFG)
    logger = get_logger(
        logger_type="csv",
        logger_name=str(log_dir),
        experiment_name="REDQ_test",
        wandb_kwargs={"mode": "offline", "config": dict(cfg), "project": "p", "group": None},
    )
    proof_env = make_env()
    model = make_redq_model(proof_env, cfg)
    loss_module, target_net_updater = make_redq_loss(model, cfg)
    actor_model_explore = TensorDictSequential(
        model[0],
        OrnsteinUhlenbeckProcessModule(
            spec=model[0].spec,
            annealing_num_steps=cfg.exploration.annealing_frames,
            sigma=cfg.exploration.ou_sigma,
            theta=cfg.exploration.ou_theta,
            device="cpu",
        ),
    )
    actor_model_explore.share_memory()
    proof_env.close()
    collector = SyncDataCollector(
        make_env,
        actor_model_explore,
        frames_per_batch=trainer_cfg.frames_per_batch,
        total_frames=trainer_cfg.total_frames,
        init_random_frames=100,
        device="cpu",
    )
    collector.set_seed(cfg.seed)
    replay_buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(10_000, scratch_dir=None),
        sampler=PrioritizedSampler(max_capacity=10_000, alpha=0.7, beta=0.5),
        pin_memory=False,
        prefetch=3,
        batch_size=trainer_cfg.batch_size,
    )
    recorder = make_env()
    trainer = make_trainer(
        collector=collector,
        loss_module=loss_module,
        recorder=recorder,
        target_net_updater=target_net_updater,
        policy_exploration=actor_model_explore,
        replay_buffer=replay_buffer,
        logger=logger,
        cfg=trainer_cfg,
    )
    trainer.train()
    return logger.log_dir, loss_module, replay_buffer


def _rows(path):
    return [r.split(",") for r in path.read_text().split()]


def test_redq_port_trains_and_logs(tmp_path):
    log_dir, loss_module, replay_buffer = run(tmp_path)
    scalars = tmp_path / "REDQ_test" / "scalars"
    assert str(log_dir).startswith(str(tmp_path))
    for key in ("loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"):
        rows = _rows(scalars / f"{key}.csv")
        # no optimisation until more than init_random_frames (100) were collected
        assert [int(r[0]) for r in rows] == [200, 300], key
        assert all(math.isfinite(float(r[1])) for r in rows), key
    assert (scalars / "r_evaluation.csv").exists()
    # alpha stays within REDQ's [0.1, 10] bounds
    alphas = [float(r[1]) for r in _rows(scalars / "alpha.csv")]
    assert all(0.1 <= a <= 10 for a in alphas)
    assert len(replay_buffer) == 300


def _batch(n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation_vector": torch.randn(n, 3, generator=g),
            "action": torch.rand(n, 1, generator=g) * 4 - 2,
            "next": {
                "observation_vector": torch.randn(n, 3, generator=g),
                "reward": torch.randn(n, 1, generator=g),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


def test_deprecated_redq_terms_against_their_formulas():
    cfg = OmegaConf.create(CFG)
    env = make_env()
    model = make_redq_model(env, cfg)
    env.close()
    loss, _ = make_redq_loss(model, cfg)
    batch = _batch()
    torch.manual_seed(3)
    out = loss(batch)
    assert sorted(out.keys()) == sorted(
        ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]
    )
    # replay the draws: subset, then a~ ~ pi(s), then a' ~ pi(s') (REDQLoss's order)
    torch.manual_seed(3)
    subset = torch.randperm(10)[:2].sort().values
    dist = loss.actor_network.get_dist(batch.select("observation_vector"))
    a_pi, logp = dist.rsample_and_log_prob()
    assert loss.target_entropy == -1.0
    # the temperature term and entropy read the actions drawn at s only
    torch.testing.assert_close(out["entropy"], -logp.mean())
    torch.testing.assert_close(out["loss_alpha"], -(1.0 * (logp + (-1.0))).mean())
    # the priority is the largest absolute error over the ensemble, written into the batch
    alpha = out["alpha"]
    next_dist = loss.actor_network.get_dist(
        TensorDict({"observation_vector": batch["next", "observation_vector"]}, [16])
    )
    a_next, logp_next = next_dist.rsample_and_log_prob()
    q_next = loss.target_qvalue_network_params(batch["next", "observation_vector"], a_next)
    next_value = q_next[subset].squeeze(-1).min(0).values - alpha * logp_next
    target = batch["next", "reward"].squeeze(-1) + 0.99 * next_value
    q = loss.qvalue_network_params(batch["observation_vector"], batch["action"]).squeeze(-1)
    torch.testing.assert_close(batch["td_error"], (q - target).abs().max(0).values)
    torch.testing.assert_close(
        out["loss_qvalue"], nn.functional.smooth_l1_loss(q, target.expand_as(q))
    )


@pytest.mark.parametrize("cls", [REDQLoss, REDQLoss_deprecated])
def test_redq_alpha_terms_differ_only_in_the_next_state_draws(cls):
    cfg = OmegaConf.create(CFG)
    env = make_env()
    model = make_redq_model(env, cfg)
    env.close()
    loss = cls(model[0], model[1], num_qvalue_nets=4)
    batch = _batch()
    torch.manual_seed(5)
    out = loss(batch)
    torch.manual_seed(5)
    torch.randperm(4)
    logp = loss.actor_network.get_dist(batch.select("observation_vector")).rsample_and_log_prob()[1]
    next_obs = TensorDict({"observation_vector": batch["next", "observation_vector"]}, [16])
    logp_next = loss.actor_network.get_dist(next_obs).rsample_and_log_prob()[1]
    both = torch.stack([logp, logp_next]) if cls is REDQLoss else logp
    torch.testing.assert_close(out["entropy"], -both.mean())
