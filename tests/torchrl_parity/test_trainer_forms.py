"""Which constructor form each trainer path takes: rl_trainers' classes take their own
keyword form only; torchrl's paths give the classes that take torchrl's form as well."""

from __future__ import annotations

import importlib

import pytest
import torch

import rl_trainers.algorithms as product
from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import GymEnv
from rl_trainers.modules import make_actor, make_value
from rl_trainers.objectives import ClipPPOLoss, ValueEstimators

TORCHRL_PATHS = [
    ("ppo", "PPOTrainer"),
    ("a2c", "A2CTrainer"),
    ("reinforce", "ReinforceTrainer"),
    ("pg", "PGTrainer"),
    ("sac", "SACTrainer"),
    ("td3", "TD3Trainer"),
    ("ddpg", "DDPGTrainer"),
    ("dqn", "DQNTrainer"),
    ("on_policy", "OnPolicyTrainer"),
]


@pytest.mark.parametrize(("module", "name"), TORCHRL_PATHS)
def test_torchrls_module_paths_give_the_torchrl_form_of_the_product_class(module, name):
    package = importlib.import_module("rl_trainers.trainers.algorithms")
    cls = getattr(importlib.import_module(f"rl_trainers.trainers.algorithms.{module}"), name)
    assert cls is getattr(package, name)
    product_name = "PGTrainer" if name == "ReinforceTrainer" else name
    assert issubclass(cls, getattr(product, product_name))
    assert cls is not getattr(product, product_name)


def _ppo_parts(seed: int = 0):
    torch.manual_seed(seed)
    env = GymEnv("CartPole-v1")
    env.set_seed(seed)
    actor = make_actor(env.observation_spec, env.action_spec, num_cells=(16,))
    loss = ClipPPOLoss(actor, make_value(env.observation_spec, num_cells=(16,)))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    return dict(
        collector=SyncDataCollector(env, actor, frames_per_batch=32, total_frames=64),
        total_frames=64,
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters()),
        progress_bar=False,
    )


def test_the_product_trainer_refuses_torchrls_form():
    with pytest.raises(TypeError):
        product.PPOTrainer(**_ppo_parts(), frame_skip=1, optim_steps_per_batch=2)


def test_rl_trainers_form_passes_through_torchrls_class_unchanged():
    from rl_trainers.trainers.algorithms import PPOTrainer

    form = dict(frames_per_batch=32, num_epochs=2, minibatch_size=16)
    trainers = []
    for cls in (product.PPOTrainer, PPOTrainer):  # each seeded, built, then trained
        trainers.append(cls(**_ppo_parts(), **form))
        trainers[-1].train()
    mine, theirs = (t.loss_module.state_dict() for t in trainers)
    assert isinstance(trainers[1], product.PPOTrainer)
    assert trainers[0]._optim_count == trainers[1]._optim_count == 2 * 2 * 2
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
