"""torchrl's offline dataset classes (``torchrl.data.datasets``) are importable at their
paths and refuse to build, naming the buffer to fill with your own data; that buffer works
as the message says."""

from __future__ import annotations

import importlib

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import ImmutableDatasetWriter, TensorDictReplayBuffer, TensorStorage

PATHS = {
    "atari_dqn": "AtariDQNExperienceReplay",
    "d4rl": "D4RLExperienceReplay",
    "gen_dgrl": "GenDGRLExperienceReplay",
    "minari_data": "MinariExperienceReplay",
    "openml": "OpenMLExperienceReplay",
    "openx": "OpenXExperienceReplay",
    "roboset": "RobosetExperienceReplay",
    "vd4rl": "VD4RLExperienceReplay",
}


@pytest.mark.parametrize("module, name", sorted(PATHS.items()))
def test_dataset_classes_import_at_torchrl_paths_and_refuse_to_build(module, name):
    cls = getattr(importlib.import_module(f"rl_trainers.data.datasets.{module}"), name)
    assert cls is getattr(importlib.import_module("rl_trainers.data.datasets"), name)
    with pytest.raises(NotImplementedError) as err:
        cls("halfcheetah-medium-v2", batch_size=256, split_trajs=False)
    message = str(err.value)
    assert message.startswith(f"{name}('halfcheetah-medium-v2'): rl_trainers includes no ")
    assert "TensorDictReplayBuffer(storage=TensorStorage(td)" in message


def test_the_buffer_the_message_names_samples_your_transitions():
    n = 10
    td = TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.randn(n, 1),
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    rb = TensorDictReplayBuffer(
        storage=TensorStorage(td), writer=ImmutableDatasetWriter(), batch_size=4
    )
    assert len(rb) == n
    sample = rb.sample()
    assert sample.shape == (4,) and ("next", "reward") in sample.keys(True)
    with pytest.raises(RuntimeError):
        rb.extend(td)
