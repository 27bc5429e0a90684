"""torchrl's override names on the command line, renamed to the fields they set here."""

from __future__ import annotations

#: The override names of torchrl's algorithm-trainer configs, as its documentation writes
#: them, and the field each one sets here.
TORCHRL_OVERRIDES = {
    "training_env.create_env_fn.base_env.env_name": "env.env_name",
    "training_env.create_env_fn.env_name": "env.env_name",
    "training_env.num_workers": "env.num_envs",
    "networks.policy_network.num_cells": "network.policy.num_cells",
    "networks.value_network.num_cells": "network.value.num_cells",
    "networks.qvalue_network.num_cells": "network.value.num_cells",
    "replay_buffer.storage.max_size": "replay_buffer.size",
    "loss.entropy_coeff": "loss.entropy_coef",
    "loss.critic_coeff": "loss.critic_coef",
    # torchrl's TD3 recipe (sota-implementations/td3): its optim node holds the delay
    "optim.policy_update_delay": "trainer.policy_delay",
    # torchrl's on-policy trainer nodes (A2CTrainerConfig...) hold the GAE discount and lambda
    "trainer.gamma": "loss.gamma",
    "trainer.lmbda": "loss.lmbda",
}


def translate_torchrl_overrides(argv: list[str]) -> list[str]:
    """``argv`` with torchrl's override names (:data:`TORCHRL_OVERRIDES`) renamed to ours,
    values untouched (sweeps too); the app applies it before Hydra reads the command line, so a torchrl command such as
    ``training_env.create_env_fn.base_env.env_name=Hopper-v5`` works as it is."""
    out = []
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        target = TORCHRL_OVERRIDES.get(key)
        out.append(f"{target}={value}" if sep and target else arg)
    return out
