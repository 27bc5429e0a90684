"""torchrl's module path ``torchrl.trainers.helpers.losses`` (the builders live in
:mod:`rl_trainers.trainers.helpers.builders`)."""

from rl_trainers.trainers.helpers.builders import (
    make_dqn_loss,
    make_target_updater,
)

__all__ = [
    "make_dqn_loss",
    "make_target_updater",
]
