"""``ReplayBufferEnsemble`` and the storage, sampler and writer ensembles."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    LazyTensorStorage,
    ListStorage,
    RandomSampler,
    ReplayBuffer,
    ReplayBufferEnsemble,
    RoundRobinWriter,
    SamplerEnsemble,
    SliceSampler,
    StorageEnsemble,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
    WriterEnsemble,
)


def _data(start: int, n: int = 10) -> TensorDict:
    return TensorDict({"obs": torch.arange(start, start + n)}, batch_size=[n])


def _buffers(**kwargs) -> tuple[TensorDictReplayBuffer, TensorDictReplayBuffer]:
    """Buffer 0 holds obs 0..9, buffer 1 obs 100..109."""
    rbs = tuple(TensorDictReplayBuffer(storage=LazyTensorStorage(50), **kwargs) for _ in "ab")
    rbs[0].extend(_data(0))
    rbs[1].extend(_data(100))
    return rbs


def _check_rows_match_their_buffer(sample: TensorDict) -> None:
    """Each item's obs is the one stored at ("index", "index") of buffer ("index", "buffer_ids")."""
    ids, index = sample["index", "buffer_ids"], sample["index", "index"]
    assert torch.equal(sample["obs"], index + 100 * ids)


def test_sample_from_all_takes_one_row_per_buffer():
    torch.manual_seed(0)
    rb = ReplayBufferEnsemble(*_buffers(), sample_from_all=True, batch_size=10)
    for _ in range(5):
        sample = rb.sample()
        assert sample.batch_size == torch.Size([2, 5])
        assert (sample["obs"][0] < 10).all() and (sample["obs"][1] >= 100).all()
        assert sample["index", "buffer_ids"].tolist() == [[0] * 5, [1] * 5]
        _check_rows_match_their_buffer(sample)
    data, info = rb.sample(4, return_info=True)
    assert info["index"]["buffer_ids"].tolist() == [[0, 0], [1, 1]]
    assert torch.equal(info["index"]["index"], data["index", "index"])


@pytest.mark.parametrize(("p", "buffer"), [([1, 0], 0), ([0.0, 3.0], 1)])
def test_p_weights_choose_the_buffers(p, buffer):
    torch.manual_seed(1)
    rb = ReplayBufferEnsemble(*_buffers(), p=p)
    sample = rb.sample(8)
    assert sample.batch_size == torch.Size([2, 4])
    assert (sample["index", "buffer_ids"] == buffer).all()
    assert ((sample["obs"] >= 100) == bool(buffer)).all()
    _check_rows_match_their_buffer(sample)


def test_p_weights_are_followed_on_average():
    torch.manual_seed(2)
    rb = ReplayBufferEnsemble(*_buffers(), p=[0.8, 0.2], num_buffer_sampled=1)
    ids = torch.stack([rb.sample(2)["index", "buffer_ids"][0, 0] for _ in range(500)])
    assert 0.72 < (ids == 0).float().mean() < 0.88


def test_batch_size_is_split_among_the_sampled_buffers():
    torch.manual_seed(3)
    rb = ReplayBufferEnsemble(*_buffers(), num_buffer_sampled=4)
    sample = rb.sample(12)
    assert sample.batch_size == torch.Size([4, 3])
    ids = sample["index", "buffer_ids"]
    assert (ids == ids[:, :1]).all()  # a row comes from one buffer
    _check_rows_match_their_buffer(sample)
    with pytest.raises(ValueError, match="batch_size=10 is not divisible by num_buffer_sampled=4"):
        rb.sample(10)
    # num_buffer_sampled has no effect with sample_from_all: every buffer once
    every = ReplayBufferEnsemble(*_buffers(), sample_from_all=True, num_buffer_sampled=4)
    assert every.sample(6).batch_size == torch.Size([2, 3])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": [1.0, 0.0, 1.0]}, "one weight per buffer: got shape \\(3,\\) for 2 buffers"),
        ({"p": [0.5, -0.5]}, "finite, non-negative weights"),
        ({"p": [0.0, 0.0]}, "positive sum"),
        ({"p": [[0.5, 0.5]]}, "one weight per buffer"),
        ({"p": ["a", "b"]}, "non-negative weights"),
        ({"p": [0.5, 0.5], "sample_from_all": True}, "p and sample_from_all=True are exclusive"),
        ({"num_buffer_sampled": 0}, "num_buffer_sampled must be >= 1"),
    ],
)
def test_invalid_sampling_options_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReplayBufferEnsemble(*_buffers(), **kwargs)


def test_writes_go_to_the_buffers():
    rb = ReplayBufferEnsemble(*_buffers(), p=[0, 1])
    with pytest.raises(
        RuntimeError, match=r"read-only: write to one of its buffers, e.g\. rb\[0\]"
    ):
        rb.extend(_data(200))
    with pytest.raises(RuntimeError, match="read-only"):
        rb.add(_data(200)[0])
    assert len(rb) == 20 and rb.write_count == 20
    rb[1].extend(_data(200, 5))
    assert len(rb) == 25 and rb.write_count == 25
    assert 204 in rb.sample(200)["obs"]


def test_indexing():
    rb = ReplayBufferEnsemble(*_buffers(), p=[0.25, 0.75], batch_size=4)
    assert isinstance(rb[1], TensorDictReplayBuffer)
    assert rb[1, 3]["obs"].item() == 103
    assert rb[0, 2:4]["obs"].tolist() == [2, 3]
    only_second = rb[[1]]
    assert isinstance(only_second, ReplayBufferEnsemble) and len(only_second) == 10
    assert torch.allclose(only_second.sampler.p, torch.ones(1, dtype=torch.float64))
    assert (only_second.sample()["obs"] >= 100).all()


def test_empty_buffer_and_mismatched_samples_raise():
    empty = TensorDictReplayBuffer(storage=LazyTensorStorage(5))
    rb = ReplayBufferEnsemble(_buffers()[0], empty, sample_from_all=True)
    with pytest.raises(RuntimeError, match=r"buffer 1 of the ensemble is empty: extend it"):
        rb.sample(4)
    other_keys = TensorDictReplayBuffer(storage=LazyTensorStorage(5))
    other_keys.extend(TensorDict({"action": torch.zeros(5)}, [5]))
    rb = ReplayBufferEnsemble(_buffers()[0], other_keys, sample_from_all=True)
    with pytest.raises(RuntimeError, match="cannot stack the samples of its buffers"):
        rb.sample(4)


def test_buffer_transforms_then_ensemble_transform():
    """torchrl's documented example: per-buffer transforms make the samples alike."""

    def rename(old):
        return lambda td: td.rename_key_(old, "renamed")

    rb0 = TensorDictReplayBuffer(storage=LazyTensorStorage(10), transform=rename("a"))
    rb1 = TensorDictReplayBuffer(storage=LazyTensorStorage(10), transform=rename("b"))
    rb0.extend(TensorDict({"a": torch.zeros(10)}, [10]))
    rb1.extend(TensorDict({"b": torch.ones(10)}, [10]))
    rb = ReplayBufferEnsemble(
        rb0, rb1, p=[0.5, 0.5], transform=lambda td: td.set("doubled", 2 * td["renamed"])
    )
    torch.manual_seed(4)
    for _ in range(3):
        sample = rb.sample(10)
        assert sample["renamed"].shape == torch.Size([2, 5])
        assert torch.equal(sample["renamed"], sample["index", "buffer_ids"].float())
        assert torch.equal(sample["doubled"], 2 * sample["renamed"])


def test_prioritized_buffers_get_their_priorities_back():
    torch.manual_seed(5)
    rbs = [
        TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=LazyTensorStorage(10))
        for _ in range(2)
    ]
    rbs[0].extend(_data(0))
    rbs[1].extend(_data(100))
    rb = ReplayBufferEnsemble(*rbs, sample_from_all=True)
    sample = rb.sample(40)
    assert sample["_weight"].shape == torch.Size([2, 20])
    assert (sample["_weight"] <= 1).all()
    # in buffer 1 only obs 107 matters; buffer 0 keeps its priorities
    sample.set("td_error", torch.where(sample["obs"] == 107, 1e6, 1e-6) + (sample["obs"] < 100))
    rb.update_priority(sample)
    later = rb.sample(400)
    assert (later["obs"][1] == 107).float().mean() > 0.95
    assert len(set(later["obs"][0].tolist())) > 5
    # or with an ensemble index and a priority tensor: buffer 1 back to equal priorities
    every_item = TensorDict(
        {"buffer_ids": torch.ones(10, dtype=torch.long), "index": torch.arange(10)}, [10]
    )
    rb.update_priority(every_item, torch.ones(10))
    assert len(set(rb.sample(400)["obs"][1].tolist())) > 5


def test_slice_sampler_buffers():
    torch.manual_seed(6)
    rbs = []
    for start in (0, 100):
        rb = TensorDictReplayBuffer(
            storage=LazyTensorStorage(40), sampler=SliceSampler(slice_len=4, traj_key="episode")
        )
        data = _data(start, 40).set("episode", torch.arange(40) // 10)
        rb.extend(data)
        rbs.append(rb)
    sample = ReplayBufferEnsemble(*rbs, sample_from_all=True).sample(16)
    assert sample.batch_size == torch.Size([2, 8])
    slices = sample.reshape(4, 4)
    assert (slices["obs"].diff(dim=1) == 1).all()
    assert slices["next", "truncated"][:, -1].all()
    assert not slices["next", "truncated"][:, :-1].any()


def test_built_from_components():
    storages = StorageEnsemble(LazyTensorStorage(5), ListStorage(5))
    samplers = SamplerEnsemble(RandomSampler(), RandomSampler(), p=[0.5, 0.5])
    writers = WriterEnsemble(RoundRobinWriter(), RoundRobinWriter())
    rb = ReplayBufferEnsemble(storages=storages, samplers=samplers, writers=writers)
    assert isinstance(rb[0], ReplayBuffer) and rb[1].storage is storages[1]
    rb[0].extend(torch.arange(5))
    rb[1].extend(torch.arange(10, 15))
    torch.manual_seed(7)
    data, info = rb.sample(6, return_info=True)
    assert data.shape == torch.Size([2, 3])
    ids, index = info["index"]["buffer_ids"], info["index"]["index"]
    assert torch.equal(data, index + 10 * ids)
    with pytest.raises(RuntimeError, match="read-only"):
        storages.set(torch.arange(2), torch.arange(2))
    with pytest.raises(TypeError, match="set p, sample_from_all and num_buffer_sampled on the"):
        ReplayBufferEnsemble(storages=storages, samplers=samplers, writers=writers, p=[1, 0])
    with pytest.raises(TypeError, match="missing: writers"):
        ReplayBufferEnsemble(storages=storages, samplers=samplers)


def test_state_dict_round_trip(tmp_path):
    rb = ReplayBufferEnsemble(*_buffers(), p=[0.5, 0.5])
    torch.save(rb.state_dict(), tmp_path / "rb.pt")
    fresh = [TensorDictReplayBuffer(storage=LazyTensorStorage(50)) for _ in range(2)]
    restored = ReplayBufferEnsemble(*fresh, p=[0.5, 0.5])
    restored.load_state_dict(torch.load(tmp_path / "rb.pt", weights_only=True))
    assert len(restored) == 20
    torch.manual_seed(8)
    expected = rb.sample(8)
    torch.manual_seed(8)
    assert torch.equal(restored.sample(8)["obs"], expected["obs"])
    rb.dumps(tmp_path / "dump")
    again = ReplayBufferEnsemble(
        *[TensorDictReplayBuffer(storage=LazyTensorStorage(50)) for _ in range(2)]
    )
    again.loads(tmp_path / "dump")
    assert again[1, 0]["obs"].item() == 100
