"""torchrl's module path ``torchrl.trainers.helpers.replay_buffer`` (the builders live in
:mod:`rl_trainers.trainers.helpers.builders`)."""

from rl_trainers.trainers.helpers.builders import (
    make_replay_buffer,
)

__all__ = [
    "make_replay_buffer",
]
