"""The default recipes' losses run through their fast paths during a real run, so that a
change to how the app builds networks cannot silently put them back on the op-by-op graph
(which gives the same numbers, only slower)."""

from __future__ import annotations

import pytest

import rl_trainers.objectives.ppo as ppo_module
from rl_trainers.algorithms import build_trainer


def test_default_sac_recipe_trains_through_the_one_node_losses(tiny_config, tmp_path):
    # the tiny overrides change frames and batch sizes, not the recipe's networks
    trainer = build_trainer(tiny_config("sac"), tmp_path)
    seen: list[str] = []

    def record(module, args, out):
        seen.append(type(out["loss_actor"].grad_fn).__name__)
        seen.append(type(out["loss_qvalue"].grad_fn).__name__)

    trainer.loss_module.register_forward_hook(record)
    trainer.train()
    assert seen, "the run made no optimisation step"
    assert set(seen) == {"SACActorTermsBackward", "SACCriticTermsBackward"}


def test_default_ppo_recipe_computes_its_gradients_without_autograd(
    tiny_config, tmp_path, monkeypatch
):
    """Every PPO step goes through ``ClipPPOLoss.loss_and_grads`` (both MLPs and the loss
    terms, forward and backward, in one call), and the optimizer's parameters end up in one
    flat buffer."""
    trainer = build_trainer(tiny_config("ppo"), tmp_path)
    calls = []
    original = ppo_module.actor_critic_grads
    monkeypatch.setattr(
        ppo_module, "actor_critic_grads", lambda *a: calls.append(1) or original(*a)
    )
    trainer.train()
    assert trainer._optim_count > 0
    assert len(calls) == trainer._optim_count
    params = [p for g in trainer.optimizer.param_groups for p in g["params"]]
    assert len({p.untyped_storage().data_ptr() for p in params}) == 1
    assert len({p.grad.untyped_storage().data_ptr() for p in params}) == 1


def test_default_dqn_recipe_computes_its_gradients_without_autograd(
    tiny_config, tmp_path, monkeypatch
):
    """Every DQN update goes through ``DQNLoss.loss_and_grads`` (the MLP Q-network's
    forward and backward as plain products), never through ``forward``."""
    from rl_trainers.objectives import DQNLoss

    trainer = build_trainer(tiny_config("dqn"), tmp_path)
    calls = []
    original = DQNLoss.loss_and_grads
    monkeypatch.setattr(
        DQNLoss, "loss_and_grads", lambda self, *a: calls.append(1) or original(self, *a)
    )
    monkeypatch.setattr(DQNLoss, "forward", lambda self, td: pytest.fail("forward called"))
    trainer.train()
    assert trainer._optim_count > 0
    assert len(calls) == trainer._optim_count
