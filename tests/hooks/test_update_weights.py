"""``UpdateWeights(weight_update_map=, trainer=, sender=, interval_unit=)`` (torchrl 0.13+)."""

from __future__ import annotations

import pytest
from trainer_fakes import Collector, make_trainer

from rl_trainers.hooks import UpdateWeights


def test_weight_update_map_sends_the_module_at_the_source_path():
    trainer = make_trainer([0.0] * 3)
    hook = UpdateWeights(
        trainer.collector,
        1,
        weight_update_map={"policy": "loss_module.actor_network"},
        trainer=trainer,
    )
    hook.register(trainer)
    trainer.train()
    assert trainer.collector.updates == [trainer.loss_module.actor_network] * 3


def test_path_with_items_and_trainer_from_register():
    trainer = make_trainer([0.0] * 2)
    trainer.policies = {"main": [trainer.loss_module.net]}
    UpdateWeights(
        trainer.collector,
        weight_update_map={"policy": "policies['main'][0]"},
        policy_weights_getter=lambda: "ignored: the map takes precedence",
    ).register(trainer)
    trainer.train()
    assert trainer.collector.updates == [trainer.loss_module.net] * 2


def test_a_wrong_source_path_fails_early_and_names_it():
    trainer = make_trainer([0.0])
    with pytest.raises(ValueError, match=r"'loss_module.actor' does not resolve.*no 'actor'"):
        UpdateWeights(
            trainer.collector, weight_update_map={"policy": "loss_module.actor"}, trainer=trainer
        )
    hook = UpdateWeights(trainer.collector, weight_update_map={"policy": "nope"})
    with pytest.raises(ValueError, match="'nope' does not resolve"):
        hook.register(trainer)
    with pytest.raises(RuntimeError, match="register the hook"):
        UpdateWeights(Collector(), weight_update_map={"policy": "x"})()


def test_destinations_other_than_the_policy_name_the_alternative():
    with pytest.raises(
        ValueError,
        match=r"\['replay_buffer.transforms\[0\]'\] need torchrl's "
        r"weight-sync schemes.*register_op\('post_steps'",
    ):
        UpdateWeights(
            Collector(),
            weight_update_map={
                "policy": "loss_module.actor_network",
                "replay_buffer.transforms[0]": "loss_module.critic_network",
            },
        )


def test_sender_is_not_available_and_says_what_to_pass():
    with pytest.raises(NotImplementedError, match=r"weight-sync schemes.*UpdateWeights\(collector"):
        UpdateWeights(sender=object())
    with pytest.raises(TypeError, match="needs the collector"):
        UpdateWeights()


def test_interval_in_optimisation_steps():
    trainer = make_trainer([0.0] * 3, optim_steps_per_batch=2)
    hook = UpdateWeights(trainer.collector, 4, interval_unit="optim_steps")
    hook.register(trainer)
    trainer.train()
    assert hook.counter == 6 and len(trainer.collector.updates) == 1
    assert trainer._ops["post_optim"] and not trainer._ops["post_steps"]
    with pytest.raises(ValueError, match="interval_unit must be one of"):
        UpdateWeights(Collector(), interval_unit="frames")
