"""The default recipes' losses run through their one-node paths during a real run, so that a
change to how the app builds networks cannot silently put them back on the op-by-op graph
(which gives the same numbers, only slower)."""

from __future__ import annotations

import pytest

from rl_trainers.trainers.algorithms import build_trainer

ONE_NODE = {
    "ppo": ("loss_objective", "ActorCriticClipPPOTermsBackward"),
    "sac": ("loss_actor", "SACActorTermsBackward"),
}


@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_default_recipe_trains_through_the_one_node_loss(tiny_config, algorithm, tmp_path):
    # the tiny overrides change frames and batch sizes, not the recipe's networks
    trainer = build_trainer(tiny_config(algorithm), tmp_path)
    key, node = ONE_NODE[algorithm]
    seen: list[str] = []

    def record(module, args, out):
        seen.append(type(out[key].grad_fn).__name__)
        if algorithm == "sac":
            seen.append(type(out["loss_qvalue"].grad_fn).__name__)

    trainer.loss_module.register_forward_hook(record)
    trainer.train()
    assert seen, "the run made no optimisation step"
    expected = {node, "SACCriticTermsBackward"} if algorithm == "sac" else {node}
    assert set(seen) == expected
