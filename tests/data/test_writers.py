"""Writers torchrl exports: TensorDictMaxValueWriter, TensorDictRoundRobinWriter,
ImmutableDatasetWriter (and datasets given whole to TensorStorage)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    ImmutableDatasetWriter,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictMaxValueWriter,
    TensorDictReplayBuffer,
    TensorDictRoundRobinWriter,
    TensorStorage,
)
from rl_trainers.data.replay_buffers import writers


def test_import_paths():
    assert writers.TensorDictMaxValueWriter is TensorDictMaxValueWriter
    assert writers.TensorDictRoundRobinWriter is TensorDictRoundRobinWriter
    assert writers.ImmutableDatasetWriter is ImmutableDatasetWriter


def _td(lo, hi):
    return TensorDict({"key": torch.arange(lo, hi), "obs": torch.arange(lo, hi)}, [hi - lo])


def test_max_value_writer_torchrl_docstring_example():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(1),
        sampler=SamplerWithoutReplacement(),
        batch_size=1,
        writer=TensorDictMaxValueWriter(rank_key="key"),
    )
    index = rb.extend(_td(0, 10))
    assert index.tolist() == [-1] * 9 + [0]
    assert rb.sample()["obs"].item() == 9
    rb.extend(_td(10, 20))
    assert rb.sample()["obs"].item() == 19
    assert rb.extend(_td(0, 10)).tolist() == [-1] * 10  # nothing better: all dropped
    assert rb.sample()["obs"].item() == 19
    assert rb.write_count == 20  # every insertion counts (each of 0..9 beat the last)


def test_max_value_writer_keeps_the_top_k():
    rank = torch.tensor([5.0, 1.0, 7.0, 3.0, 9.0, 2.0, 8.0])
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(3), writer=TensorDictMaxValueWriter(rank_key="r")
    )
    out = rb.extend(TensorDict({"r": rank, "i": torch.arange(7)}, [7]))
    assert sorted(rb[:]["r"].tolist()) == [7.0, 8.0, 9.0]
    # per item: its storage slot, or -1 once dropped or replaced within the same batch
    kept = {int(i): int(s) for i, s in enumerate(out) if s >= 0}
    assert sorted(kept) == [2, 4, 6]
    for i, slot in kept.items():
        assert rb[slot]["i"].item() == i
    rb.add(TensorDict({"r": torch.tensor(0.5), "i": torch.tensor(99)}, []))
    assert sorted(rb[:]["r"].tolist()) == [7.0, 8.0, 9.0]
    rb.add(TensorDict({"r": torch.tensor(7.5), "i": torch.tensor(100)}, []))
    assert sorted(rb[:]["r"].tolist()) == [7.5, 8.0, 9.0]


def test_max_value_writer_ranks_trajectories_with_the_reduction():
    # [4, 5] rollouts: 4 trajectories stored whole, ranked by their summed reward
    reward = torch.tensor([[1.0] * 5, [3.0] * 5, [0.0, 0.0, 0.0, 0.0, 10.0], [2.0] * 5])
    data = TensorDict(
        {"obs": torch.arange(20).reshape(4, 5), ("next", "reward"): reward.unsqueeze(-1)}, [4, 5]
    )
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(2), writer=TensorDictMaxValueWriter())
    rb.extend(data)
    assert len(rb) == 2 and rb.sample(3).shape == (3, 5)
    assert sorted(rb[:]["next", "reward"].sum((1, 2)).tolist()) == [10.0, 15.0]
    by_max = TensorDictReplayBuffer(
        storage=LazyTensorStorage(1), writer=TensorDictMaxValueWriter(reduction="max")
    )
    by_max.extend(data)
    assert by_max[0]["obs"].tolist() == [10, 11, 12, 13, 14]  # max reward 10


def test_max_value_writer_errors_and_state():
    with pytest.raises(ValueError, match="reduction must be one of"):
        TensorDictMaxValueWriter(reduction="prod")
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(2), writer=TensorDictMaxValueWriter())
    with pytest.raises(KeyError, match="Rank key .*reward.* not found"):
        rb.extend(TensorDict({"obs": torch.zeros(3)}, [3]))
    plain = ReplayBuffer(storage=ListStorage(2), writer=TensorDictMaxValueWriter())
    with pytest.raises(RuntimeError, match="expects data to be a tensor collection"):
        plain.extend(torch.zeros(3))
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(2), writer=TensorDictMaxValueWriter(rank_key="r")
    )
    rb.extend(TensorDict({"r": torch.tensor([1.0, 4.0])}, [2]))
    state = rb.state_dict()
    rb2 = TensorDictReplayBuffer(
        storage=LazyTensorStorage(2), writer=TensorDictMaxValueWriter(rank_key="r")
    )
    rb2.load_state_dict(state)
    rb2.extend(TensorDict({"r": torch.tensor([2.0])}, [1]))  # replaces the 1.0, not the 4.0
    assert sorted(rb2[:]["r"].tolist()) == [2.0, 4.0]
    rb2.empty()
    rb2.extend(TensorDict({"r": torch.tensor([0.0])}, [1]))
    assert rb2[:]["r"].tolist() == [0.0]


def test_tensordict_round_robin_writer_stores_the_index():
    data = TensorDict({"x": torch.arange(5)}, [5])
    rb = ReplayBuffer(
        storage=LazyTensorStorage(4), writer=TensorDictRoundRobinWriter(), batch_size=3
    )
    rb.extend(data)
    assert "index" not in data.keys()  # the caller's TensorDict is left alone
    # 5 items in 4 slots: the last 4 remain, item 4 wrapped to slot 0
    assert rb[:]["index"].tolist() == [0, 1, 2, 3]
    assert rb[:]["x"].tolist() == [4, 1, 2, 3]
    sample = rb.sample()
    assert torch.equal(rb[:]["x"][sample["index"]], sample["x"])


def test_immutable_dataset_writer_and_a_whole_dataset_storage():
    data = TensorDict({"x": torch.arange(6)}, [6])
    rb = TensorDictReplayBuffer(
        storage=TensorStorage(data), writer=ImmutableDatasetWriter(), batch_size=4
    )
    assert len(rb) == 6  # the dataset is there from the start, as in torchrl
    assert set(rb.sample()["x"].tolist()) <= set(range(6))
    for write in (lambda: rb.extend(data), lambda: rb.add(data[0]), rb.empty):
        with pytest.raises(RuntimeError, match="This dataset doesn't allow writing."):
            write()
    assert len(rb) == 6 and rb[:]["x"].tolist() == list(range(6))


def test_tensordict_round_robin_writer_with_tensorclass_items():
    from tensordict import tensorclass

    @tensorclass
    class Item:
        obs: torch.Tensor

    rb = ReplayBuffer(
        storage=LazyTensorStorage(10), writer=TensorDictRoundRobinWriter(), batch_size=2
    )
    rb.extend(Item(obs=torch.arange(4), batch_size=[4]))
    sample = rb.sample()  # the stored "index" is not a field of Item: not passed to it
    assert isinstance(sample, Item) and set(sample.obs.tolist()) <= {0, 1, 2, 3}
