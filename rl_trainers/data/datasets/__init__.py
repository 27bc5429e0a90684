"""torchrl's offline datasets (``torchrl.data.datasets``), importable by their names and
modules, and refused when built: rl_trainers downloads no datasets.

torchrl's IQL and CQL utils import ``D4RLExperienceReplay`` at the top of the file that also
serves their online scripts, which never build it: those run here, and building a dataset
raises a ``NotImplementedError`` saying how to put your own transitions in a buffer.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AtariDQNExperienceReplay",
    "D4RLExperienceReplay",
    "GenDGRLExperienceReplay",
    "MinariExperienceReplay",
    "OpenMLExperienceReplay",
    "OpenXExperienceReplay",
    "RobosetExperienceReplay",
    "VD4RLExperienceReplay",
]


class _OfflineDataset:
    """A torchrl dataset class: building one raises ``NotImplementedError`` naming the
    buffer to build from your own data instead."""

    def __init__(self, dataset_id: Any = None, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"{type(self).__name__}({dataset_id!r}): rl_trainers includes no offline datasets "
            "(nothing is downloaded). Load the transitions yourself into a TensorDict td "
            "('observation', 'action', ('next', 'observation'), ('next', 'reward'), "
            "('next', 'done'), ('next', 'terminated')) and sample them from "
            "TensorDictReplayBuffer(storage=TensorStorage(td), "
            "writer=ImmutableDatasetWriter(), batch_size=...)."
        )


class AtariDQNExperienceReplay(_OfflineDataset):
    """torchrl's Atari DQN replay dataset (not included)."""


class D4RLExperienceReplay(_OfflineDataset):
    """torchrl's D4RL dataset (not included)."""


class GenDGRLExperienceReplay(_OfflineDataset):
    """torchrl's Gen-DGRL dataset (not included)."""


class MinariExperienceReplay(_OfflineDataset):
    """torchrl's Minari dataset (not included)."""


class OpenMLExperienceReplay(_OfflineDataset):
    """torchrl's OpenML dataset (not included)."""


class OpenXExperienceReplay(_OfflineDataset):
    """torchrl's Open X-Embodiment dataset (not included)."""


class RobosetExperienceReplay(_OfflineDataset):
    """torchrl's Roboset dataset (not included)."""


class VD4RLExperienceReplay(_OfflineDataset):
    """torchrl's V-D4RL dataset (not included)."""
