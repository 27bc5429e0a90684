"""torchrl's module path ``torchrl.trainers.helpers.trainers`` (the builders live in
:mod:`rl_trainers.trainers.helpers.builders`)."""

from rl_trainers.trainers.helpers.builders import (
    make_trainer,
)

__all__ = [
    "make_trainer",
]
