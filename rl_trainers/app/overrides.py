"""torchrl's override names on the command line, renamed to the fields they set here."""

from __future__ import annotations

import re

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


#: A glob pattern written back into an override as it is (no quotes, commas or brackets).
_PLAIN_PATTERN = re.compile(r"[\w*?.\-/]+")


def globs_of_options(algorithm: str, argv: list[str]) -> list[str]:
    """``argv`` with each ``group=glob(...)`` sweep limited to options one can choose: Hydra
    matches a glob against every config of the group, the typed nodes the YAML options
    extend too (``optimizer=glob(adam*)`` ran ``adam``, ``adam_schema``, ``adamw`` and
    ``adamw_schema``: the same two configs twice); and an ``experiment`` or
    ``hparams_search`` glob against other algorithms' presets, which ``algorithm`` cannot
    run (``experiment=glob(*)`` under PPO sweeps the ``ppo_*`` presets)."""
    if not any("glob(" in arg for arg in argv):
        return argv
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob

    from .compose_errors import PRESET_GROUPS, algorithms

    parser = OverridesParser.create()
    out = []
    for arg in argv:
        try:
            override = parser.parse_override(arg) if "glob(" in arg else None
        except Exception:  # noqa: BLE001 - Hydra reports an unreadable override itself
            override = None
        glob = override.value() if override is not None else None
        if not isinstance(glob, Glob):
            out.append(arg)
            continue
        exclude = [*glob.exclude, "*_schema"]
        if override.key_or_group in PRESET_GROUPS:
            exclude += [f"{other}_*" for other in algorithms() if other != algorithm]
        patterns = [*glob.include, *exclude]
        if not all(isinstance(p, str) and _PLAIN_PATTERN.fullmatch(p) for p in patterns):
            out.append(arg)  # a quoted pattern: left as written
            continue
        out.append(
            f"{override.get_key_element()}=glob([{','.join(glob.include)}],"
            f"exclude=[{','.join(exclude)}])"
        )
    return out
