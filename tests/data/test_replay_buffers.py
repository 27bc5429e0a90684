"""Replay buffers: storages, samplers, writers, state round trips."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    PrioritizedSampler,
    RandomSampler,
    ReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers._segment_tree import MinSegmentTree, SumSegmentTree


def make_batch(n: int, start: int = 0, num_envs: int | None = None) -> TensorDict:
    ids = torch.arange(start, start + n)
    td = TensorDict(
        {
            "observation": ids.float().unsqueeze(-1).expand(n, 3).clone(),
            "action": (ids % 2).unsqueeze(-1),
            "next": {
                "observation": (ids + 1).float().unsqueeze(-1).expand(n, 3).clone(),
                "reward": torch.ones(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
            },
            "id": ids,
        },
        batch_size=[n],
    )
    if num_envs is not None:
        td = td.reshape(num_envs, n // num_envs)
    return td


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage, ListStorage])
def test_extend_sample_wraps_around(storage_cls, tmp_path):
    kwargs = {"scratch_dir": tmp_path / "mm"} if storage_cls is LazyMemmapStorage else {}
    rb = TensorDictReplayBuffer(storage=storage_cls(10, **kwargs), batch_size=4)
    idx = rb.extend(make_batch(6))
    assert idx.tolist() == [0, 1, 2, 3, 4, 5]
    assert len(rb) == 6
    idx = rb.extend(make_batch(6, start=6))
    assert idx.tolist() == [6, 7, 8, 9, 0, 1]
    assert len(rb) == 10
    batch = rb.sample()
    assert batch.batch_size == torch.Size([4])
    # item at storage slot i holds id 10 + i for i < 2, else i
    expected = torch.where(batch["index"] < 2, batch["index"] + 10, batch["index"])
    assert torch.equal(batch["id"], expected)
    assert torch.equal(batch["next", "observation"][:, 0], batch["id"].float() + 1)


def _storage(storage_cls, max_size, tmp_path, **kwargs):
    if storage_cls is LazyMemmapStorage:
        kwargs["scratch_dir"] = tmp_path / "mm"
    return storage_cls(max_size, **kwargs)


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage, ListStorage])
def test_extend_of_env_time_batch_stores_trajectories_by_default(storage_cls, tmp_path):
    # torchrl's default (ndim=1): a [num_envs, T] batch is num_envs items of [T]
    rb = TensorDictReplayBuffer(storage=_storage(storage_cls, 10, tmp_path), batch_size=3)
    rb.extend(make_batch(80, num_envs=4))
    assert len(rb) == 4
    sample = rb.sample()
    assert sample.batch_size == (3, 20)
    assert (sample["id"].diff(dim=1) == 1).all()  # one env's consecutive steps per item
    assert (sample["id"][:, 0] % 20 == 0).all()
    assert (sample["index"] == sample["index"][:, :1]).all()


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_ndim_2_storage_stores_transitions(storage_cls, tmp_path):
    storage = _storage(storage_cls, 100, tmp_path, ndim=2)
    assert storage.ndim == 2
    rb = TensorDictReplayBuffer(storage=storage, batch_size=3)
    rb.extend(make_batch(80, num_envs=4))
    assert len(rb) == 80
    assert rb.sample().batch_size == (3,)
    assert torch.equal(rb[:]["id"], torch.arange(80))
    small = TensorDictReplayBuffer(storage=_storage(LazyTensorStorage, 50, tmp_path, ndim=2))
    small.extend(make_batch(80, num_envs=4))  # max_size counts transitions
    assert len(small) == 50 and sorted(small[:]["id"].tolist()) == list(range(30, 80))
    tensors = ReplayBuffer(storage=LazyTensorStorage(100, ndim=2), batch_size=5)
    tensors.extend(torch.arange(24).reshape(4, 6))
    assert len(tensors) == 24 and tensors.sample().shape == (5,)
    pytree = ReplayBuffer(storage=LazyTensorStorage(100, ndim=2), batch_size=5)
    pytree.extend((torch.zeros(4, 6, 3), torch.arange(24).reshape(4, 6)))
    obs, act = pytree.sample()
    assert len(pytree) == 24 and obs.shape == (5, 3) and act.shape == (5,)


def test_ndim_is_validated_and_data_must_have_that_many_batch_dims():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="ndim"):
            LazyTensorStorage(10, ndim=bad)
    assert LazyTensorStorage(10).ndim == 1 and not hasattr(ListStorage(10), "ndim")
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10, ndim=2))
    expected = (
        r"this storage has ndim=2: extend\(\) needs data with at least 2 batch dims, got \[5\]"
    )
    with pytest.raises(ValueError, match=expected):
        rb.extend(make_batch(5))
    with pytest.raises(ValueError, match=expected):
        ReplayBuffer(storage=LazyTensorStorage(10, ndim=2)).extend(torch.arange(5))
    with pytest.raises(ValueError, match="at least 1 batch dim, got \\[\\]"):
        TensorDictReplayBuffer(storage=LazyTensorStorage(10)).extend(make_batch(1)[0])
    assert len(rb) == 0
    assert rb.add(make_batch(1)[0]) == 0  # add writes one item whatever the ndim


def test_trajectory_items_and_ndim_survive_state_dict_dumps_and_reopening(tmp_path):
    torch.manual_seed(0)
    trajectories = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=2)
    trajectories.extend(make_batch(20, num_envs=4))
    restored = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=2)
    restored.load_state_dict(trajectories.state_dict())
    assert len(restored) == 4 and restored.sample().batch_size == (2, 5)
    _assert_td_equal(trajectories[:], restored[:])

    def memmap(path, ndim):
        return LazyMemmapStorage(20, scratch_dir=path, existsok=True, ndim=ndim)

    rb = TensorDictReplayBuffer(storage=memmap(tmp_path / "a", 2), batch_size=3)
    rb.extend(make_batch(12, num_envs=3))
    copy = TensorDictReplayBuffer(storage=memmap(tmp_path / "b", 2), batch_size=3)
    copy.load_state_dict(rb.state_dict())
    assert copy.storage.ndim == 2 and len(copy) == 12
    _assert_td_equal(rb[:], copy[:])
    copy.extend(make_batch(4, start=12, num_envs=2))  # still transitions
    assert len(copy) == 16
    rb.dumps(tmp_path / "dump")
    loaded = TensorDictReplayBuffer(storage=memmap(tmp_path / "c", 2), batch_size=3)
    loaded.loads(tmp_path / "dump")
    assert len(loaded) == 12 and loaded.sample().batch_size == (3,)
    _assert_td_equal(rb[:], loaded[:])
    with pytest.raises(ValueError, match="ndim=2"):
        TensorDictReplayBuffer(storage=memmap(tmp_path / "d", 1)).loads(tmp_path / "dump")
    with pytest.raises(ValueError, match="ndim=2"):
        memmap(tmp_path / "a", 1)  # reopening the directory with another ndim
    with pytest.raises(ValueError, match="ndim=2"):
        TensorDictReplayBuffer(storage=LazyTensorStorage(20)).load_state_dict(rb.state_dict())
    reopened = TensorDictReplayBuffer(storage=memmap(tmp_path / "a", 2))
    assert len(reopened) == 12 and reopened.storage.ndim == 2


@pytest.mark.parametrize("reduction", ["max", "mean"])
def test_prioritized_buffer_reduces_per_step_priorities_per_trajectory_item(reduction):
    torch.manual_seed(0)
    rb = TensorDictPrioritizedReplayBuffer(
        alpha=1.0,
        beta=1.0,
        eps=0.0,
        storage=LazyTensorStorage(10),
        batch_size=6,
        reduction=reduction,
    )
    data = make_batch(20, num_envs=4)
    data["td_error"] = torch.arange(20.0).reshape(4, 5)
    rb.extend(data)
    reduce = {"max": lambda x: x.amax(1), "mean": lambda x: x.mean(1)}[reduction]
    priorities = rb.sampler._sum_tree[np.arange(4)]
    assert np.allclose(priorities, reduce(data["td_error"]).numpy())
    sample = rb.sample()
    assert sample.batch_size == (6, 5) and sample["_weight"].shape == (6, 5)
    sample["td_error"] = torch.ones(6, 5)
    sample["td_error"][:, -1] = 5.0
    rb.update_tensordict_priority(sample)
    updated = np.unique(sample["index"][:, 0].numpy())
    expected = {"max": 5.0, "mean": 9.0 / 5}[reduction]
    assert np.allclose(rb.sampler._sum_tree[updated], expected)
    rb.update_priority(sample["index"], torch.full((6, 5), 2.0))  # the (index, priority) form
    assert np.allclose(rb.sampler._sum_tree[updated], 2.0)
    # ndim=2: the same per-step priorities are the transitions' own
    flat = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, eps=0.0, storage=LazyTensorStorage(40, ndim=2), reduction=reduction
    )
    flat.extend(data)
    assert np.allclose(flat.sampler._sum_tree[np.arange(20)], np.arange(20.0))


def test_random_crop_transform_cuts_windows_of_consecutive_steps_from_trajectory_items():
    from rl_trainers.envs.transforms import RandomCropTensorDict

    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), batch_size=8, transform=RandomCropTensorDict(5, sample_dim=1)
    )
    rb.extend(make_batch(80, num_envs=4))  # 4 trajectories of 20 steps, as the DDPG tutorial
    windows = rb.sample()
    assert windows.batch_size == (8, 5)
    assert (windows["id"].diff(dim=1) == 1).all()
    assert (windows["id"][:, 0] // 20 == windows["id"][:, -1] // 20).all()  # one env each


def test_recurrent_pattern_extend_of_unsqueezed_trajectory_stores_one_item():
    # torchrl's recurrent DQN tutorial: rb.extend(data.unsqueeze(0)) with data a [T] rollout
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=2)
    rollout = make_batch(7)
    assert rb.extend(rollout.unsqueeze(0)).tolist() == [0]
    assert len(rb) == 1
    sample = rb.sample()
    assert sample.batch_size == (2, 7) and torch.equal(sample["id"][0], torch.arange(7))


def test_add_and_plain_tensor_buffer():
    rb = ReplayBuffer(storage=LazyTensorStorage(5), batch_size=3)
    rb.extend(torch.arange(4.0))
    assert rb.add(torch.tensor(9.0)) == 4
    sample = rb.sample()
    assert sample.shape == (3,)
    assert set(sample.tolist()) <= {0.0, 1.0, 2.0, 3.0, 9.0}


def test_list_storage_of_objects():
    rb = ReplayBuffer(storage=ListStorage(3), batch_size=2, collate_fn=lambda x: x)
    for obj in ["a", "b", "c", "d"]:
        rb.add(obj)
    assert len(rb) == 3
    assert set(rb.sample()) <= {"b", "c", "d"}


def test_sample_errors():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10))
    with pytest.raises(RuntimeError, match="batch_size"):
        rb.sample()
    with pytest.raises(RuntimeError, match="empty"):
        rb.sample(4)
    with pytest.raises(ValueError, match="max_size must be a positive int, got 0"):
        LazyTensorStorage(0)


def test_write_more_than_capacity_keeps_latest():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(4))
    rb.extend(make_batch(10))
    assert sorted(rb.storage.get(torch.arange(4))["id"].tolist()) == [6, 7, 8, 9]


def test_sampler_without_replacement_covers_each_item_once():
    torch.manual_seed(0)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(20), sampler=SamplerWithoutReplacement(), batch_size=6
    )
    rb.extend(make_batch(20))
    seen = torch.cat([rb.sample()["id"] for _ in range(4)])  # 6+6+6+2
    assert sorted(seen.tolist()) == list(range(20))
    assert rb.sampler.ran_out
    rb2 = TensorDictReplayBuffer(
        storage=LazyTensorStorage(20),
        sampler=SamplerWithoutReplacement(drop_last=True),
        batch_size=6,
    )
    rb2.extend(make_batch(20))
    sizes = [rb2.sample().shape[0] for _ in range(4)]
    assert sizes == [6, 6, 6, 6]


def test_segment_trees_against_numpy():
    rng = np.random.default_rng(0)
    size = 1000
    st, mt = SumSegmentTree(size), MinSegmentTree(size)
    values = rng.random(size) + 0.1
    idx = np.arange(size)
    st[idx] = values
    mt[idx] = values
    upd = rng.integers(0, size, 100)
    new = rng.random(100) + 0.05
    st[upd] = new
    mt[upd] = new
    values[upd] = new  # numpy assignment: last write wins, as in the tree
    assert st.reduce() == pytest.approx(values.sum())
    assert mt.reduce() == pytest.approx(values.min())
    cumsum = np.cumsum(values)
    prefix = rng.random(500) * values.sum()
    expected = np.searchsorted(cumsum, prefix, side="right")
    assert np.array_equal(st.find_prefixsum_index(prefix), expected)


def test_prioritized_sampler_frequencies_match_priorities():
    torch.manual_seed(0)
    n, alpha = 8, 0.7
    sampler = PrioritizedSampler(n, alpha=alpha, beta=0.5)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(n), sampler=sampler, batch_size=1000)
    rb.extend(make_batch(n))
    priorities = torch.arange(1, n + 1, dtype=torch.float64)
    rb.update_priority(torch.arange(n), priorities)
    draws = 50
    counts = torch.zeros(n)
    for _ in range(draws):
        counts += torch.bincount(rb.sample()["index"], minlength=n)
    p = priorities**alpha / (priorities**alpha).sum()
    expected = p * draws * 1000
    chi2 = (((counts - expected) ** 2) / expected).sum().item()
    # 7 degrees of freedom: the 99.9% quantile is 24.3
    assert chi2 < 24.3, (counts, expected)
    # importance weights: (p_i / p_min) ** -beta
    batch = rb.sample(64)
    expected_w = ((priorities[batch["index"]] / 1.0) ** alpha) ** -0.5
    torch.testing.assert_close(batch["_weight"].double(), expected_w, rtol=1e-5, atol=1e-6)


def test_prioritized_new_items_get_max_priority_and_td_update():
    torch.manual_seed(1)
    sampler = PrioritizedSampler(100, alpha=1.0, beta=1.0, eps=0.0)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), sampler=sampler, batch_size=32)
    rb.extend(make_batch(4))
    batch = rb.sample()
    batch["td_error"] = torch.where(batch["id"] == 2, 5.0, 0.0).unsqueeze(-1)
    rb.update_tensordict_priority(batch)
    assert sampler._sum_tree[np.array([2])].item() == 5.0
    rb.extend(make_batch(1, start=4))  # gets max priority = 5
    assert sampler._sum_tree[np.array([4])].item() == 5.0
    # priority given with the data
    data = make_batch(2, start=5)
    data["td_error"] = torch.tensor([3.0, 7.0])
    rb.extend(data)
    assert sampler._sum_tree[np.array([5, 6])].tolist() == [3.0, 7.0]
    with pytest.raises(KeyError, match="td_error"):
        rb.update_tensordict_priority(make_batch(2))


def test_tensordict_prioritized_replay_buffer_torchrl_constructor():
    """torchrl's ``TensorDictPrioritizedReplayBuffer(alpha=, beta=, storage=, ...)``."""
    from rl_trainers.data import TensorDictPrioritizedReplayBuffer

    torch.manual_seed(0)
    rb = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, eps=1e-9, storage=LazyTensorStorage(50), batch_size=16
    )
    assert isinstance(rb, TensorDictReplayBuffer) and rb.priority_key == "td_error"
    assert isinstance(rb.sampler, PrioritizedSampler) and rb.sampler.max_capacity == 50
    assert (rb.sampler.alpha, rb.sampler.beta, rb.sampler.eps) == (1.0, 1.0, 1e-9)
    rb.extend(make_batch(4))
    batch = rb.sample()
    assert batch.shape == (16,) and "_weight" in batch.keys()
    # only item 3 keeps a priority (the others eps): every later draw is item 3
    batch["td_error"] = torch.where(batch["id"] == 3, 2.0, 0.0)
    rb.update_tensordict_priority(batch)
    rb.update_priority(torch.tensor([0, 1, 2]), 0.0)
    assert rb.sample()["id"].tolist() == [3] * 16
    other = TensorDictPrioritizedReplayBuffer(alpha=0.5, beta=0.4, priority_key="prio")
    assert other.priority_key == "prio" and other.sampler.max_capacity == 1000  # ListStorage
    with pytest.raises(TypeError):
        TensorDictPrioritizedReplayBuffer(alpha=0.5)  # beta is required, as in torchrl


def test_prioritized_replay_buffer_of_tensors():
    from rl_trainers.data import PrioritizedReplayBuffer

    torch.manual_seed(0)
    rb = PrioritizedReplayBuffer(alpha=1.0, beta=0.5, eps=1e-9, storage=ListStorage(10))
    assert isinstance(rb, ReplayBuffer) and rb.sampler.max_capacity == 10
    rb.extend(torch.arange(5))
    data, info = rb.sample(8, return_info=True)
    assert data.shape == (8,) and info["_weight"].shape == (8,)
    rb.update_priority(torch.arange(5), torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0]))
    assert rb.sample(8).tolist() == [2] * 8


def test_specs_importable_from_data_are_the_envs_classes():
    import rl_trainers.data as data
    import rl_trainers.envs as envs

    for name in (
        "Composite",
        "CompositeSpec",
        "Bounded",
        "BoundedTensorSpec",
        "Unbounded",
        "OneHot",
        "OneHotDiscreteTensorSpec",
        "Categorical",
        "TensorSpec",
    ):
        assert getattr(data, name) is getattr(envs, name), name


def test_prioritized_sampler_bad_args():
    with pytest.raises(ValueError, match="reduction"):
        PrioritizedSampler(10, 0.5, 0.5, reduction="sum")
    s = PrioritizedSampler(10, 0.5, 0.5, reduction="mean")
    s.extend(torch.arange(2), torch.tensor([[1.0, 3.0], [2.0, 2.0]]))
    assert s._sum_tree[np.arange(2)] == pytest.approx(np.array([2.0, 2.0]) ** 0.5)


def _assert_td_equal(a: TensorDict, b: TensorDict) -> None:
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("sampler_fn", [RandomSampler, lambda: PrioritizedSampler(16, 0.6, 0.4)])
def test_state_dict_round_trip_exact(sampler_fn):
    torch.manual_seed(0)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(16), sampler=sampler_fn(), batch_size=5)
    rb.extend(make_batch(10))
    rb.extend(make_batch(10, start=10))  # wrapped: cursor at 4
    batch = rb.sample()
    rb.update_priority(batch["index"], torch.rand(5) * 4)
    state = rb.state_dict()
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(16), sampler=sampler_fn(), batch_size=5)
    rb2.load_state_dict(state)
    assert len(rb2) == 16
    _assert_td_equal(rb.storage.get(torch.arange(16)), rb2.storage.get(torch.arange(16)))
    assert rb2.writer._cursor == rb.writer._cursor == 4
    torch.manual_seed(5)
    s1 = rb.sample()
    torch.manual_seed(5)
    s2 = rb2.sample()
    _assert_td_equal(s1, s2)
    # both continue writing at the same slot
    assert rb.extend(make_batch(1, 100)).tolist() == rb2.extend(make_batch(1, 100)).tolist() == [4]


def test_sampler_without_replacement_state_round_trip():
    torch.manual_seed(0)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), sampler=SamplerWithoutReplacement(), batch_size=3
    )
    rb.extend(make_batch(10))
    rb.sample()
    rb2 = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), sampler=SamplerWithoutReplacement(), batch_size=3
    )
    rb2.load_state_dict(rb.state_dict())
    assert torch.equal(rb.sample()["index"], rb2.sample()["index"])


def test_memmap_storage_reopens(tmp_path):
    scratch = tmp_path / "buffer"
    rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(8, scratch_dir=scratch))
    rb.extend(make_batch(6))
    rb.extend(make_batch(5, start=6))  # wrapped: cursor at 3
    del rb
    with pytest.raises(FileExistsError, match="existsok=True"):
        LazyMemmapStorage(8, scratch_dir=scratch)
    with pytest.raises(ValueError, match="max_size=8"):
        LazyMemmapStorage(9, scratch_dir=scratch, existsok=True)
    rb2 = TensorDictReplayBuffer(storage=LazyMemmapStorage(8, scratch_dir=scratch, existsok=True))
    assert len(rb2) == 8
    ids = rb2.storage.get(torch.arange(8))["id"]
    assert ids.tolist() == [8, 9, 10, 3, 4, 5, 6, 7]
    assert rb2.extend(make_batch(1, start=50)).tolist() == [3]


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_dumps_loads_round_trip(storage_cls, tmp_path):
    torch.manual_seed(0)
    rb = TensorDictReplayBuffer(
        storage=storage_cls(12), sampler=PrioritizedSampler(12, 0.7, 0.5), batch_size=4
    )
    rb.extend(make_batch(8))
    rb.extend(make_batch(7, start=8))
    rb.update_priority(torch.tensor([0, 5]), torch.tensor([9.0, 0.1]))
    rb.dumps(tmp_path / "dump")
    rb2 = TensorDictReplayBuffer(
        storage=storage_cls(12), sampler=PrioritizedSampler(12, 0.7, 0.5), batch_size=4
    )
    rb2.loads(tmp_path / "dump")
    assert len(rb2) == 12
    _assert_td_equal(rb.storage.get(torch.arange(12)), rb2.storage.get(torch.arange(12)))
    assert np.array_equal(rb.sampler._sum_tree.leaves(), rb2.sampler._sum_tree.leaves())
    assert rb2.writer._cursor == 3


def test_empty_resets_everything():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=2)
    rb.extend(make_batch(5))
    rb.empty()
    assert len(rb) == 0
    assert rb.extend(make_batch(2)).tolist() == [0, 1]


def test_prefetch_and_transform():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10),
        batch_size=4,
        prefetch=2,
        transform=lambda td: td.set("doubled", td["id"] * 2),
    )
    rb.extend(make_batch(10))
    for _ in range(5):
        batch = rb.sample()
        assert torch.equal(batch["doubled"], batch["id"] * 2)


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_keys_that_appear_after_the_first_write(storage_cls, tmp_path):
    """A policy's outputs join the batches once it replaces random actions (SAC's warm-up):
    the storage grows those columns, earlier rows read zeros there, sampling returns them."""
    kwargs = {"scratch_dir": tmp_path / "mm"} if storage_cls is LazyMemmapStorage else {}
    rb = TensorDictReplayBuffer(storage=storage_cls(10, **kwargs), batch_size=4)
    rb.extend(make_batch(3))
    assert "loc" not in rb.sample().keys()  # the first read caches the storage's layout
    later = make_batch(2, start=3)
    later["loc"] = torch.full((2, 2), 7.0)
    later["next", "log_prob"] = torch.full((2,), -1.0)
    rb.extend(later)
    rows = rb.storage.get(torch.arange(5))
    assert rows["loc"].tolist() == [[0.0, 0.0]] * 3 + [[7.0, 7.0]] * 2
    assert rows["next", "log_prob"].tolist() == [0.0] * 3 + [-1.0] * 2
    assert torch.equal(rows["id"], torch.arange(5))
    assert {"loc", ("next", "log_prob")} <= set(rb.sample().keys(True, True))
    if storage_cls is LazyMemmapStorage:
        reopened = LazyMemmapStorage(10, scratch_dir=tmp_path / "mm", existsok=True)
        _assert_td_equal(reopened.get(torch.arange(5)), rows)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_new_column_costs_memory_only_where_written():
    def rss_mib() -> float:
        with open("/proc/self/status") as status:
            line = next(ln for ln in status if ln.startswith("VmRSS"))
        return int(line.split()[1]) / 1024

    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(4_000_000), batch_size=4)
    rb.extend(make_batch(100))
    later = make_batch(1, start=100)
    later["loc"] = torch.ones(1, 4)  # a 64 MB column at full capacity
    before = rss_mib()
    rb.extend(later)
    assert rss_mib() - before < 16
    assert rb.storage.get(torch.arange(99, 101))["loc"].tolist() == [[0.0] * 4, [1.0] * 4]


def test_list_storage_samples_items_with_and_without_policy_outputs():
    """Items stored before a policy took over lack its outputs: they read zeros there."""
    rb = TensorDictReplayBuffer(
        storage=ListStorage(10), sampler=SamplerWithoutReplacement(), batch_size=4
    )
    rb.extend(make_batch(2))
    later = make_batch(2, start=2)
    later["loc"] = torch.full((2, 2), 7.0)
    later["next", "log_prob"] = torch.full((2,), -1.0)
    rb.extend(later)
    rows = rb.sample(4)
    assert rows.batch_size == torch.Size([4])
    expected = torch.where(rows["id"] >= 2, 7.0, 0.0)
    assert torch.equal(rows["loc"], expected.unsqueeze(-1).expand(4, 2))
    assert torch.equal(rows["next", "log_prob"], torch.where(rows["id"] >= 2, -1.0, 0.0))


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage, ListStorage])
def test_indexing_reads_stored_items(storage_cls):
    """``rb[i]``, ``rb[a:b]``, ``rb[[i, j]]`` read storage positions, as in torchrl."""
    rb = TensorDictReplayBuffer(storage=storage_cls(8), batch_size=2)
    rb.extend(make_batch(6))
    assert rb[2]["id"].item() == 2
    assert rb[-1]["id"].item() == 5
    assert rb[1:4]["id"].tolist() == [1, 2, 3]
    assert rb[[5, 0]]["id"].tolist() == [5, 0]
    assert rb[torch.tensor([3])]["next", "observation"].tolist() == [[4.0, 4.0, 4.0]]
    with pytest.raises(IndexError, match="out of range for a buffer of 6 items"):
        rb[6]
    rb.extend(make_batch(4, start=6))  # wraps: positions 0 and 1 now hold ids 8 and 9
    assert rb[:3]["id"].tolist() == [8, 9, 2]


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, ListStorage])
def test_appended_transforms_apply_in_order_to_samples(storage_cls):
    rb = TensorDictReplayBuffer(storage=storage_cls(8), batch_size=4)
    rb.extend(make_batch(8))
    rb.append_transform(lambda td: td.set("scaled", td["id"] * 10))
    assert rb.append_transform(lambda td: td.set("scaled", td["scaled"] + 1)) is rb
    batch = rb.sample()
    assert torch.equal(batch["scaled"], batch["id"] * 10 + 1)
    assert rb[3]["scaled"].item() == 31  # reading stored items goes through it too (torchrl)
    assert "scaled" not in rb.storage.get(torch.tensor([3]))[0].keys()  # stored item intact


def test_iteration_yields_batches_until_the_epoch_ends():
    # torchrl: `for batch in rb` yields rb.sample() until the sampler runs out
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(20),
        sampler=SamplerWithoutReplacement(shuffle=False),
        batch_size=4,
    )
    rb.extend(make_batch(10))
    sizes = [b.batch_size for b in rb]
    assert sizes == [torch.Size([4]), torch.Size([4]), torch.Size([2])]
    assert len(list(rb)) == 3  # a second epoch
    rb = ReplayBuffer(
        storage=LazyTensorStorage(20),
        sampler=SamplerWithoutReplacement(drop_last=True),
        batch_size=4,
    )
    rb.extend(make_batch(10))
    assert len(list(rb)) == 2
    with pytest.raises(RuntimeError, match="Batch_size was not specified"):
        next(iter(ReplayBuffer(storage=ListStorage(5))))


def test_storage_getitem():
    storage = LazyTensorStorage(5)
    rb = TensorDictReplayBuffer(storage=storage, batch_size=2)
    rb.extend(make_batch(5))
    rb.extend(make_batch(2, start=5))  # wraps around: positions 0, 1 hold items 5, 6
    assert storage[0]["observation"][0].item() == 5
    assert storage[-1]["observation"][0].item() == 4
    assert storage[1:3]["observation"][:, 0].tolist() == [6, 2]
    lst = ListStorage(5)
    ReplayBuffer(storage=lst).extend([1, 2, 3])
    assert lst[1] == 2 and lst[:2] == [1, 2]


def test_torchrl_module_paths_of_replay_buffers():
    from rl_trainers.data.replay_buffers import ReplayBuffer as RB
    from rl_trainers.data.replay_buffers.samplers import (
        PrioritizedSampler as PS,
    )
    from rl_trainers.data.replay_buffers.samplers import (
        SamplerWithoutReplacement as SWR,
    )
    from rl_trainers.data.replay_buffers.storages import LazyMemmapStorage as LMS
    from rl_trainers.data.replay_buffers.writers import RoundRobinWriter as RRW

    assert (RB, PS, SWR, LMS) == (
        ReplayBuffer,
        PrioritizedSampler,
        SamplerWithoutReplacement,
        LazyMemmapStorage,
    )
    assert RRW.__name__ == "RoundRobinWriter"


def test_memmap_scratch_dir_accepts_temporary_directory():
    import tempfile

    tempdir = tempfile.TemporaryDirectory()
    rb = ReplayBuffer(storage=LazyMemmapStorage(10, scratch_dir=tempdir))
    rb.extend(TensorDict({"a": torch.arange(3)}, [3]))
    assert str(rb.storage.scratch_dir) == tempdir.name
    assert rb[:]["a"].tolist() == [0, 1, 2]
    tempdir.cleanup()


@pytest.mark.parametrize("storage", ["tensor", "memmap"])
def test_pytree_items_in_tensor_storages(storage):
    make = LazyTensorStorage if storage == "tensor" else LazyMemmapStorage
    rb = ReplayBuffer(storage=make(100))
    data = {"a": torch.randn(3), "b": {"c": (torch.zeros(2), [torch.ones(1)])}, 30: -torch.ones(())}
    assert rb.add(data) == 0
    sample = rb.sample(10)
    assert sample["a"].shape == (10, 3) and torch.equal(sample["a"][0], data["a"])
    assert sample["b"]["c"][0].shape == (10, 2) and sample["b"]["c"][1][0].shape == (10, 1)
    assert sample[30].tolist() == [-1.0] * 10
    rb = ReplayBuffer(storage=make(100), batch_size=4)
    rb.extend((torch.arange(6), torch.arange(6) * 10))
    obs, act = rb.sample()
    assert torch.equal(obs * 10, act)


def test_tensorclass_items_come_back_as_tensorclass():
    from tensordict import tensorclass

    @tensorclass
    class MyData:
        images: torch.Tensor
        labels: torch.Tensor

    data = MyData(images=torch.zeros(20, 2, 2), labels=torch.arange(20), batch_size=[20])
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(50), batch_size=5)
    rb.extend(data)
    sample = rb.sample()
    assert type(sample).__name__ == "MyData" and sample.labels.shape == (5,)
    assert torch.equal(sample.labels, sample._tensordict["index"])
    rb = ReplayBuffer(storage=LazyTensorStorage(50), batch_size=7)
    rb.add(data[3])
    assert rb.sample().labels.tolist() == [3] * 7


def _episodes_td() -> TensorDict:
    episode = torch.cat([torch.full((n,), i) for i, n in enumerate([30, 25, 3, 42])])
    steps = torch.cat([torch.arange(n) for n in [30, 25, 3, 42]])
    done = torch.zeros(100, 1, dtype=torch.bool)
    return TensorDict({"episode": episode, "steps": steps, ("next", "done"): done}, [100])


def test_slice_sampler_returns_consecutive_steps_of_one_trajectory():
    from rl_trainers.data import SliceSampler

    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(1000),
        sampler=SliceSampler(slice_len=4, traj_key="episode"),
        batch_size=32,
    )
    rb.extend(_episodes_td())
    for _ in range(20):
        s = rb.sample()
        assert s.batch_size == (32,)
        s = s.reshape(8, 4)
        assert (s["episode"] == s["episode"][:, :1]).all()  # one trajectory per slice
        assert (s["steps"].diff(dim=1) == 1).all()  # consecutive steps
        assert (s["episode"] != 2).all()  # the 3-step episode is too short (strict_length)
        truncated = s["next", "truncated"].squeeze(-1)
        assert truncated[:, -1].all() and not truncated[:, :-1].any()
        assert torch.equal(s["next", "done"], s["next", "truncated"])


def test_slice_sampler_end_key_num_slices_and_errors():
    from rl_trainers.data.replay_buffers.samplers import SliceSampler

    done = torch.zeros(20, 1, dtype=torch.bool)
    done[6] = done[19] = True
    rb = ReplayBuffer(storage=LazyTensorStorage(100), sampler=SliceSampler(num_slices=2))
    rb.extend(TensorDict({"x": torch.arange(20), ("next", "done"): done}, [20]))
    for _ in range(20):
        x = rb.sample(10)["x"].reshape(2, 5)
        assert (x.diff(dim=1) == 1).all()
        assert ((x[:, 0] <= 6) == (x[:, -1] <= 6)).all()  # no slice crosses the end at 6
    with pytest.raises(ValueError, match="not divisible"):
        rb.sample(9)
    with pytest.raises(RuntimeError, match="no stored trajectory has 14 items"):
        rb.sample(28)
    short = ReplayBuffer(
        storage=LazyTensorStorage(100), sampler=SliceSampler(slice_len=13, strict_length=False)
    )
    short.extend(TensorDict({"x": torch.arange(20), ("next", "done"): done}, [20]))
    assert short.sample(26)["x"].numel() <= 26
    no_keys = ReplayBuffer(storage=LazyTensorStorage(10), sampler=SliceSampler(slice_len=2))
    no_keys.extend(TensorDict({"x": torch.arange(4)}, [4]))
    with pytest.raises(KeyError, match="traj_key"):
        no_keys.sample(2)


def test_write_count_keeps_growing_past_capacity_and_survives_state_dict():
    rb = ReplayBuffer(storage=LazyTensorStorage(5))
    rb.extend(torch.arange(4))
    rb.add(torch.tensor(9))
    rb.extend(torch.arange(3))
    assert (len(rb), rb.write_count) == (5, 8)
    other = ReplayBuffer(storage=LazyTensorStorage(5))
    other.load_state_dict(rb.state_dict())
    assert other.write_count == 8
    rb.empty()
    assert rb.write_count == 0


def test_extend_past_capacity_leaves_torchrl_slot_layout():
    rb = ReplayBuffer(storage=LazyTensorStorage(5))
    rb.extend(torch.arange(8))
    assert rb[:].tolist() == [5, 6, 7, 3, 4]
    rb.extend(torch.tensor([8]))
    assert rb[:].tolist() == [5, 6, 7, 8, 4]


def test_add_stores_one_item_of_the_given_shape():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10),
        sampler=PrioritizedSampler(10, alpha=1.0, beta=1.0),
        batch_size=4,
    )
    trajectory = TensorDict({"obs": torch.arange(6).float(), "td_error": torch.ones(6)}, [6])
    assert rb.add(trajectory) == 0
    assert len(rb) == 1
    sample = rb.sample()
    assert sample.batch_size == (4, 6)
    assert sample["index"].shape == (4, 6) and (sample["index"] == 0).all()
    assert sample["_weight"].shape == (4, 6)
    sample["td_error"] = torch.full((4, 6), 3.0)
    rb.update_tensordict_priority(sample)  # one priority per item (reduced over time)
    tensors = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=3)
    tensors.add(torch.arange(5))
    assert tensors.sample().shape == (3, 5)


def test_tensordict_buffer_takes_dicts_of_tensors():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=3)
    rb.extend({"obs": torch.arange(5), "next": {"obs": torch.arange(5) + 1}})
    sample = rb.sample()
    assert isinstance(sample, TensorDict) and torch.equal(sample["next", "obs"], sample["obs"] + 1)
    rb.add({"obs": torch.tensor(7), "next": {"obs": torch.tensor(8)}})
    assert len(rb) == 6 and rb[5]["next", "obs"].item() == 8


def test_update_priority_takes_a_sampled_tensordict_as_torchrls_scripts_pass_it():
    rb = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, storage=LazyTensorStorage(4), batch_size=4
    )
    rb.extend(TensorDict({"obs": torch.arange(4.0)}, batch_size=[4]))
    sample = rb.sample()
    while not (sample["index"] == 2).any():  # whatever the global RNG's state: item 2 in it
        sample = rb.sample()
    sample.set("td_error", (sample["index"] == 2).float() * 100.0 + 1e-6)
    rb.update_priority(sample)  # torchrl's sota scripts: replay_buffer.update_priority(td)
    torch.manual_seed(0)
    drawn = rb.sample(64)["obs"]
    assert (drawn == 2.0).float().mean() > 0.9
    rb.update_priority(torch.tensor([2]), torch.tensor([1e-6]))  # the (index, priority) form
    with pytest.raises(TypeError, match="needs a priority"):
        rb.update_priority(torch.tensor([1]))


@pytest.mark.parametrize("buffer_type", [TensorDictReplayBuffer, ReplayBuffer])
def test_saved_buffer_size_follows_its_items_not_its_capacity(buffer_type):
    import io

    rb = buffer_type(storage=LazyTensorStorage(1_000_000), batch_size=4)
    rb.extend(make_batch(600) if buffer_type is TensorDictReplayBuffer else torch.randn(600, 17))
    out = io.BytesIO()
    torch.save(rb.state_dict(), out)
    assert out.tell() < 1_000_000  # 600 items, not the 1M rows the storage has room for
    out.seek(0)
    restored = buffer_type(storage=LazyTensorStorage(1_000_000), batch_size=4)
    restored.load_state_dict(torch.load(out, weights_only=False))
    assert len(restored) == 600
    held, back = rb.storage.get(torch.arange(600)), restored.storage.get(torch.arange(600))
    if buffer_type is TensorDictReplayBuffer:
        _assert_td_equal(held, back)
    else:
        assert torch.equal(held, back)


def test_non_tensor_entries_are_stored_sampled_and_restored():
    from tensordict import NonTensorData, NonTensorStack

    words = [f"step {i}" for i in range(6)]
    data = TensorDict(
        {
            "obs": torch.arange(6.0).unsqueeze(-1),
            "text": NonTensorStack(*[NonTensorData(w) for w in words]),
        },
        [6],
    )
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=4)
    rb.extend(data)
    sample = rb.sample()
    for i, text in zip(sample["index"].tolist(), sample["text"]):
        assert text == words[i]
        assert sample["obs"][sample["index"] == i][0].item() == i
    restored = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=4)
    restored.load_state_dict(rb.state_dict())
    assert list(restored[2:5]["text"]) == words[2:5]


# --------------------------------------------------------------------------- torchrl's options
def _transitions(n=40):
    return TensorDict({"obs": torch.arange(n, dtype=torch.float32)[:, None]}, [n])


@pytest.mark.parametrize("compilable", [False, True])
def test_torchrl_script_keywords_shared_and_compilable_accepted(tmp_path, compilable):
    """torchrl's SAC/TD3 scripts build their buffers with ``shared=False`` and
    ``compilable=...`` (buffer and storage): accepted, the same samples either way."""
    from rl_trainers.data import PrioritizedReplayBuffer

    samples = []
    for storage in (
        LazyTensorStorage(100, device="cpu", compilable=compilable),
        LazyMemmapStorage(100, scratch_dir=tmp_path / f"m{compilable}", compilable=compilable),
    ):
        torch.manual_seed(0)
        rb = TensorDictReplayBuffer(
            pin_memory=False,
            prefetch=3,
            storage=storage,
            batch_size=8,
            shared=False,
            compilable=compilable,
        )
        rb.extend(_transitions())
        samples.append(rb.sample()["obs"])
    assert torch.equal(samples[0], samples[1])
    torch.manual_seed(0)
    reference = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=8, prefetch=3)
    reference.extend(_transitions())
    assert torch.equal(reference.sample()["obs"], samples[0])

    prb = TensorDictPrioritizedReplayBuffer(
        alpha=0.7,
        beta=0.5,
        pin_memory=False,
        storage=LazyTensorStorage(100, compilable=compilable),
        batch_size=8,
        shared=False,
        compilable=compilable,
    )
    prb.extend(_transitions())
    assert prb.sample().shape == (8,)
    assert len(PrioritizedReplayBuffer(alpha=0.7, beta=0.5, shared=False, compilable=True)) == 0


@pytest.mark.parametrize("name", ["ReplayBuffer", "TensorDictReplayBuffer"])
def test_shared_buffer_is_refused_with_what_to_do(name):
    import rl_trainers.data as data

    with pytest.raises(ValueError) as err:
        getattr(data, name)(storage=LazyTensorStorage(10), shared=True)
    assert str(err.value).startswith(f"{name}(shared=True) is not supported: ")
    assert "extend the buffer with each collected batch" in str(err.value)
    with pytest.raises(ValueError, match=r"TensorDictPrioritizedReplayBuffer\(shared=True\)"):
        data.TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, shared=True)
