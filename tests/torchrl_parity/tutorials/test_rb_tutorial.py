"""The "Using Replay Buffers" tutorial, ported by replacing ``torchrl`` with ``rl_trainers``.

Both the earlier text of the tutorial (tensorclass data in a TensorDictReplayBuffer, a pytree
buffer built with its transform) and the current one (``rb.append_transform``, a storage
smaller than the data, "Storing trajectories" with a ``SliceSampler``) are covered.

Each test is a section of the tutorial with its user code kept (image batches and buffer
sizes shrunk) and the tutorial's printed claims checked: buffer lengths, sample shapes and
contents, the ``"index"`` entry, iteration lengths, prioritized sampling that follows the
priorities and their updates, and buffer transforms that rebuild what the env produced.
"""

from __future__ import annotations

import importlib.util
import tempfile

import pytest
import torch
from tensordict import TensorDict, tensorclass
from torch.utils._pytree import tree_map

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    SliceSampler,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers.samplers import PrioritizedSampler, SamplerWithoutReplacement
from rl_trainers.envs import (
    CatFrames,
    Compose,
    ExcludeTransform,
    GrayScale,
    Resize,
    ToTensorImage,
    TransformedEnv,
    UnsqueezeTransform,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import RandomPolicy

size = 10_000

needs_pygame = pytest.mark.skipif(
    importlib.util.find_spec("pygame") is None, reason="CartPole's pixels need pygame"
)


def make_data():
    return TensorDict(
        {
            "a": torch.arange(12).view(3, 4),
            ("b", "c"): torch.arange(15).view(3, 5),
        },
        batch_size=[3],
    )


@tensorclass
class MyData:
    images: torch.Tensor
    labels: torch.Tensor


def make_images(n=100):  # 1000 in the tutorial
    return MyData(
        images=torch.randint(
            255,
            (n, 64, 64, 3),
        ),
        labels=torch.randint(100, (n,)),
        batch_size=[n],
    )


def test_vanilla_buffer_default_size():
    buffer = ReplayBuffer()
    assert len(buffer) == 0  # "length before adding elements"
    buffer.extend(range(2000))
    assert len(buffer) == 1000  # capped at the default size


def test_storages():
    buffer_list = ReplayBuffer(storage=ListStorage(size), collate_fn=lambda x: x)
    buffer_list.extend(["a", 0, "b"])
    sample = buffer_list.sample(3)
    assert len(sample) == 3 and all(s in ("a", 0, "b") for s in sample)

    buffer_lazytensor = ReplayBuffer(storage=LazyTensorStorage(size))
    data = make_data()
    buffer_lazytensor.extend(data)
    assert len(buffer_lazytensor) == 3  # "The buffer has 3 elements"
    sample = buffer_lazytensor.sample(5)
    assert sample["a"].shape == (5, 4) and sample["b", "c"].shape == (5, 5)
    # each sampled row is one of the stored rows, "a" and ("b", "c") from the same item
    rows = sample["a"][:, 0] // 4
    assert torch.equal(sample["b", "c"], data["b", "c"][rows])

    buffer_lazymemmap = ReplayBuffer(storage=LazyMemmapStorage(size))
    buffer_lazymemmap.extend(data)
    assert len(buffer_lazymemmap) == 3
    sample = buffer_lazytensor.sample(5)
    assert sample["a"].shape == (5, 4)


def test_memmap_storage_location(tmp_path):
    data = make_data()
    tempdir = tempfile.TemporaryDirectory(dir=tmp_path)
    buffer_lazymemmap = ReplayBuffer(storage=LazyMemmapStorage(size, scratch_dir=tempdir))
    buffer_lazymemmap.extend(data)
    assert len(buffer_lazymemmap) == 3
    filename_a = buffer_lazymemmap._storage._storage["a"].filename
    filename_bc = buffer_lazymemmap._storage._storage["b", "c"].filename
    # the files follow the structure of the TensorDict
    assert str(filename_a).startswith(tempdir.name)
    assert str(filename_bc).startswith(tempdir.name) and "b" in str(filename_bc)


def test_tensordict_replay_buffer_and_tensorclass():
    data = make_data()
    tempdir = tempfile.TemporaryDirectory()
    buffer_lazymemmap = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(size, scratch_dir=tempdir), batch_size=12
    )
    buffer_lazymemmap.extend(data)
    sample = buffer_lazymemmap.sample()
    assert sample.batch_size == (12,)
    # Our sample now has an extra "index" key that indicates what indices were sampled
    assert ((sample["index"] >= 0) & (sample["index"] < 3)).all()
    torch.testing.assert_close(sample["a"], data["a"][sample["index"]])

    data = make_images()
    tempdir = tempfile.TemporaryDirectory()
    buffer_lazymemmap = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(size, scratch_dir=tempdir), batch_size=12
    )
    buffer_lazymemmap.extend(data)
    assert len(buffer_lazymemmap) == 100
    sample = buffer_lazymemmap.sample()
    # As expected. the data has the proper class and shape!
    assert isinstance(sample, MyData)
    assert sample.images.shape == (12, 64, 64, 3) and sample.labels.shape == (12,)


def test_pytree_data_and_transform():
    # With pytrees, any callable can be used as a transform:
    def transform(x):
        # Zeros all the data in the pytree
        return tree_map(lambda y: y * 0, x)

    rb = ReplayBuffer(storage=LazyMemmapStorage(100), transform=transform)
    data = {
        "a": torch.randn(3),
        "b": {"c": (torch.zeros(2), [torch.ones(1)])},
        30: -torch.ones(()),  # non-string keys also work
    }
    rb.add(data)
    # The sample has a similar structure to the data (with a leading dimension of 10)
    sample = rb.sample(10)

    def assert0(x):
        assert (x == 0).all()

    tree_map(assert0, sample)
    assert sample["a"].shape == (10, 3)
    assert sample["b"]["c"][1][0].shape == (10, 1)
    assert sample[30].shape == (10,)


def test_fixed_batch_size_prefetch_and_iteration():
    data = make_images(4)  # 1000 images in the tutorial
    batch_size = 16  # 128
    buffer_lazymemmap = ReplayBuffer(storage=LazyMemmapStorage(size), batch_size=batch_size)
    buffer_lazymemmap.add(data)
    sample = buffer_lazymemmap.sample()  # will produces identical samples
    assert sample.batch_size == (batch_size, 4)
    assert (sample.images == data.images).all()

    buffer_lazymemmap = ReplayBuffer(
        storage=LazyMemmapStorage(size), batch_size=batch_size, prefetch=10
    )  # creates a queue of 10 elements to be prefetched in the background
    buffer_lazymemmap.add(data)
    assert buffer_lazymemmap.sample().batch_size == (batch_size, 4)

    for i, data in enumerate(buffer_lazymemmap):
        if i == 3:
            assert data.batch_size == (batch_size, 4)
            break
    assert i == 3  # sampling with replacement: an infinite iterator


def test_sampler_without_replacement_and_dynamic_batch_size():
    buffer_lazymemmap = ReplayBuffer(
        storage=LazyMemmapStorage(size), batch_size=32, sampler=SamplerWithoutReplacement()
    )
    data = TensorDict(
        {
            "a": torch.arange(512).view(128, 4),
            ("b", "c"): torch.arange(1024).view(128, 8),
        },
        batch_size=[128],
    )
    buffer_lazymemmap.extend(data)
    seen = []
    for _i, batch in enumerate(buffer_lazymemmap):  # noqa: B007
        seen.append(batch["a"][:, 0] // 4)
        continue
    assert _i + 1 == 4  # "A total of 4 batches have been collected"
    assert torch.cat(seen).sort().values.tolist() == list(range(128))  # each item once

    buffer_lazymemmap = ReplayBuffer(
        storage=LazyMemmapStorage(size), sampler=SamplerWithoutReplacement()
    )
    buffer_lazymemmap.extend(data)
    three = buffer_lazymemmap.sample(3)
    five = buffer_lazymemmap.sample(5)
    assert three.batch_size == (3,) and five.batch_size == (5,)
    rows = torch.cat([three["a"][:, 0], five["a"][:, 0]]) // 4
    assert rows.unique().numel() == 8  # without replacement


def test_prioritized_sampler_with_any_data():
    size = 1000
    rb = ReplayBuffer(
        storage=ListStorage(size),
        sampler=PrioritizedSampler(max_capacity=size, alpha=0.8, beta=1.1),
        collate_fn=lambda x: x,
    )
    # Extending the replay buffer returns the items indices
    indices = rb.extend([1, "foo", None])
    assert list(torch.as_tensor(indices).tolist()) == [0, 1, 2]
    rb.update_priority(index=indices, priority=torch.tensor([0, 1_000, 0.1]))
    torch.manual_seed(0)
    sample, info = rb.sample(10, return_info=True)
    # sampling from the buffer returns mostly the second sample ("foo")
    assert sum(s == "foo" for s in sample) >= 9
    # The info contains the relative weights of the items as well as the indices
    assert set(info.keys()) >= {"_weight", "index"}
    index = torch.as_tensor(info["index"])
    assert len(index) == 10 and len(info["_weight"]) == 10


def test_prioritized_tensordict_buffer_follows_and_updates_priorities():
    size = 1000
    data = TensorDict(
        {"a": torch.arange(512).view(128, 4), ("b", "c"): torch.arange(1024).view(128, 8)},
        batch_size=[128],
    )
    rb = TensorDictReplayBuffer(
        storage=ListStorage(size),
        sampler=PrioritizedSampler(size, alpha=0.8, beta=1.1),
        priority_key="td_error",
        batch_size=1024,
    )
    # a priority signal proportional to the storage index
    data["td_error"] = torch.arange(data.numel())
    rb.extend(data)
    torch.manual_seed(0)
    sample = rb.sample()
    # higher indices should occur more frequently
    low, high = (sample["index"] < 64).sum(), (sample["index"] >= 64).sum()
    assert high > 2 * low
    assert (sample["index"] == 0).sum() == 0  # priority 0 (plus eps): never drawn
    assert sample["_weight"].shape == (1024,)

    # revert the priority of the sampled items
    sample = rb.sample()
    sample["td_error"] = data.numel() - sample["index"]
    rb.update_tensordict_priority(sample)
    # Now, higher indices should occur less frequently (among the items updated)
    sample = rb.sample()
    low, high = (sample["index"] < 64).sum(), (sample["index"] >= 64).sum()
    assert low > 2 * high


def make_pixel_env():
    return TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True),
        Compose(
            ToTensorImage(in_keys=["pixels"], out_keys=["pixels_trsf"]),
            Resize(in_keys=["pixels_trsf"], w=64, h=64),
            GrayScale(in_keys=["pixels_trsf"]),
        ),
    )


@needs_pygame
def test_transforms_saving_raw_images():
    env = make_pixel_env()
    rollout = env.rollout(3)
    assert rollout["pixels"].dtype == torch.uint8
    assert rollout["pixels_trsf"].shape == (3, 1, 64, 64)

    collector = SyncDataCollector(
        env,
        RandomPolicy(env.action_spec),
        frames_per_batch=10,
        total_frames=1000,
        postproc=ExcludeTransform("pixels_trsf", ("next", "pixels_trsf"), "collector"),
    )
    for data in collector:  # noqa: B007 - the tutorial keeps the first batch
        break
    collector.shutdown()
    # the "pixels_trsf" keys have been discarded
    assert "pixels_trsf" not in data.keys() and ("next", "pixels_trsf") not in data.keys(True)
    assert "collector" not in data.keys() and data["pixels"].dtype == torch.uint8

    t = Compose(
        ToTensorImage(
            in_keys=["pixels", ("next", "pixels")],
            out_keys=["pixels_trsf", ("next", "pixels_trsf")],
        ),
        Resize(in_keys=["pixels_trsf", ("next", "pixels_trsf")], w=64, h=64),
        GrayScale(in_keys=["pixels_trsf", ("next", "pixels_trsf")]),
    )
    rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(1000), transform=t, batch_size=16)
    rb.extend(data)
    # a ``sample`` sees the transformed images reappear
    sample = rb.sample()
    assert sample["pixels_trsf"].shape == (16, 1, 64, 64)
    assert sample["next", "pixels_trsf"].shape == (16, 1, 64, 64)
    # the same images as the env's transforms make
    env_view = env.transform(data[sample["index"]].clone())
    torch.testing.assert_close(sample["pixels_trsf"], env_view["pixels_trsf"])


@needs_pygame
def test_transforms_with_catframes_match_online_data():
    env = TransformedEnv(
        GymEnv("CartPole-v1", from_pixels=True),
        Compose(
            ToTensorImage(in_keys=["pixels"], out_keys=["pixels_trsf"]),
            Resize(in_keys=["pixels_trsf"], w=64, h=64),
            GrayScale(in_keys=["pixels_trsf"]),
            UnsqueezeTransform(-4, in_keys=["pixels_trsf"]),
            CatFrames(dim=-4, N=4, in_keys=["pixels_trsf"]),
        ),
    )
    collector = SyncDataCollector(
        env,
        RandomPolicy(env.action_spec),
        frames_per_batch=10,
        total_frames=1000,
    )
    for data in collector:  # noqa: B007 - the tutorial keeps the first batch
        break
    collector.shutdown()
    assert data["pixels_trsf"].shape == (10, 4, 1, 64, 64)

    t = Compose(
        ToTensorImage(
            in_keys=["pixels", ("next", "pixels")],
            out_keys=["pixels_trsf", ("next", "pixels_trsf")],
        ),
        Resize(in_keys=["pixels_trsf", ("next", "pixels_trsf")], w=64, h=64),
        GrayScale(in_keys=["pixels_trsf", ("next", "pixels_trsf")]),
        CatFrames(dim=-4, N=4, in_keys=["pixels_trsf", ("next", "pixels_trsf")]),
    )
    rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(1000), transform=t, batch_size=16)
    data_exclude = data.exclude("pixels_trsf", ("next", "pixels_trsf"))
    rb.add(data_exclude)

    s = rb.sample(1)  # the buffer has only one element
    assert s["pixels_trsf"].shape == (1, 10, 4, 1, 64, 64)
    # the data generated online and offline match!
    assert (data.exclude("collector") == s.squeeze(0).exclude("index", "collector")).all()


def test_current_text_tensorclass_pytree_append_transform_and_small_storage():
    size = 100
    data = make_images(10)
    tempdir = tempfile.TemporaryDirectory()
    buffer_lazymemmap = ReplayBuffer(
        storage=LazyMemmapStorage(size, scratch_dir=tempdir), batch_size=12
    )
    buffer_lazymemmap.extend(data)
    assert len(buffer_lazymemmap) == 10
    sample = buffer_lazymemmap.sample()
    assert isinstance(sample, MyData) and sample.images.shape == (12, 64, 64, 3)

    rb = ReplayBuffer(storage=LazyMemmapStorage(size))
    data = {
        "a": torch.randn(3),
        "b": {"c": (torch.zeros(2), [torch.ones(1)])},
        30: -torch.ones(()),  # non-string keys also work
    }
    rb.add(data)
    sample = rb.sample(10)
    assert (sample[30] == -1).all()

    def transform(x):
        # Zeros all the data in the pytree
        return tree_map(lambda y: y * 0, x)

    rb.append_transform(transform)
    sample = rb.sample(batch_size=12)

    def assert0(x):
        assert (x == 0).all()

    tree_map(assert0, sample)
    assert sample["a"].shape == (12, 3)

    data = make_images(200)
    buffer_lazymemmap = ReplayBuffer(storage=LazyMemmapStorage(size), batch_size=128)
    buffer_lazymemmap.extend(data)
    assert len(buffer_lazymemmap) == size  # the storage keeps the last 100 of 200 items
    sample = buffer_lazymemmap.sample()
    assert sample.batch_size == (128,)

    buffer_lazymemmap = ReplayBuffer(
        storage=LazyMemmapStorage(size), batch_size=32, sampler=SamplerWithoutReplacement()
    )
    data = TensorDict(
        {
            "a": torch.arange(64).view(16, 4),
            ("b", "c"): torch.arange(128).view(16, 8),
        },
        batch_size=[16],
    )
    buffer_lazymemmap.extend(data)
    for _i, batch in enumerate(buffer_lazymemmap):  # noqa: B007
        continue
    assert _i + 1 == 1  # "A total of 1 batches have been collected" (16 items, batch 32)
    assert batch.batch_size == (16,)


def test_storing_trajectories_with_a_slice_sampler():
    size = 100
    rb = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(size),
        sampler=SliceSampler(traj_key="episode", num_slices=4),
        batch_size=8,
    )
    episode = torch.zeros(10, dtype=torch.int)
    episode[:3] = 1
    episode[3:5] = 2
    episode[5:7] = 3
    episode[7:] = 4
    steps = torch.cat([torch.arange(3), torch.arange(2), torch.arange(2), torch.arange(3)])
    data = TensorDict(
        {
            "episode": episode,
            "obs": torch.randn((3, 4, 5)).expand(10, 3, 4, 5),
            "act": torch.randn((20,)).expand(10, 20),
            "other": torch.randn((20, 50)).expand(10, 20, 50),
            "steps": steps,
        },
        [10],
    )
    rb.extend(data)
    for _ in range(5):
        sample = rb.sample()
        # episode are grouped: 4 slices of 2 steps, each from one episode
        pairs = sample["episode"].view(4, 2)
        assert (pairs[:, 0] == pairs[:, 1]).all()
        # steps are successive
        step_pairs = sample["steps"].view(4, 2)
        assert (step_pairs[:, 1] == step_pairs[:, 0] + 1).all()
        assert sample["other"].shape == (8, 20, 50)
