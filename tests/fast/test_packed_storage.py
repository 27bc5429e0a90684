"""The packed replay-buffer storage (``fast.PACKED_STORAGE``: every leaf a column of one
tensor per dtype) holds, hands out and saves what one tensor per leaf does."""

from __future__ import annotations

import io

import pytest
import torch
from tensordict import TensorDict

from rl_trainers import fast
from rl_trainers.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    PrioritizedSampler,
    RandomSampler,
    TensorDictReplayBuffer,
)
from rl_trainers.hooks import ReplayBufferTrainer


def frames(n: int, start: int, with_policy_outputs: bool, num_envs: int = 1) -> TensorDict:
    """``n`` steps of ``num_envs`` envs as a collector hands them out (``[num_envs, n]``):
    float, bool and int64 leaves, nested, of several item shapes; ``loc``/``scale`` once the
    policy acts."""
    g = torch.Generator().manual_seed(start)
    shape = (num_envs, n)
    step = torch.arange(start, start + n).expand(shape)
    td = TensorDict(
        {
            "observation": torch.randn(*shape, 5, generator=g),
            "pixels": torch.randint(0, 255, (*shape, 2, 3), dtype=torch.uint8, generator=g),
            "action": torch.randn(*shape, 2, generator=g, dtype=torch.float64),
            "done": step[..., None] % 7 == 0,
            "collector": {"traj_ids": step // 7},
            "next": {
                "observation": torch.randn(*shape, 5, generator=g),
                "reward": torch.randn(*shape, 1, generator=g),
                "done": step[..., None] % 7 == 6,
            },
        },
        batch_size=shape,
    )
    if with_policy_outputs:
        td["loc"] = torch.randn(*shape, 2, generator=g)
        td["scale"] = torch.rand(*shape, 2, generator=g)
    return td


def fill(packed: bool, sampler, ndim: int = 2) -> tuple[TensorDictReplayBuffer, list]:
    """A buffer of 64 transitions (``ndim=2``) or 8 ten-step trajectories (``ndim=1``) after
    random frames, then the policy's (new leaves), a wrap past its capacity and a write
    lacking a leaf; returns it and the samples drawn on the way."""
    fast.PACKED_STORAGE = packed
    try:
        rb = TensorDictReplayBuffer(
            storage=LazyTensorStorage(64 if ndim == 2 else 8, ndim=ndim),
            sampler=sampler,
            batch_size=16,
        )
        samples = []
        torch.manual_seed(0)
        for start in range(0, 110, 10):
            policy_acts = 20 <= start < 100
            rb.extend(frames(10, start, with_policy_outputs=policy_acts, num_envs=2))
            samples.append(rb.sample())
        return rb, samples
    finally:
        fast.PACKED_STORAGE = True


def assert_same(a: TensorDict, b: TensorDict) -> None:
    assert a.batch_size == b.batch_size
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("sampler", [RandomSampler, lambda: PrioritizedSampler(64, 0.7, 0.5)])
def test_packed_and_per_leaf_storages_hold_and_sample_the_same(sampler, ndim):
    packed_rb, packed_samples = fill(True, sampler(), ndim)
    plain_rb, plain_samples = fill(False, sampler(), ndim)
    assert packed_rb.storage._packed is not None and plain_rb.storage._packed is None
    for got, expected in zip(packed_samples, plain_samples):
        assert_same(got, expected)
    assert len(packed_rb) == len(plain_rb)
    everything = torch.arange(len(plain_rb))
    assert_same(packed_rb.storage.get(everything), plain_rb.storage.get(everything))
    assert_same(packed_rb[3:9], plain_rb[3:9])


def test_packed_samples_have_contiguous_leaves_of_the_written_types():
    rb, samples = fill(True, RandomSampler())
    sample = samples[-1]
    for key, leaf in sample.items(True, True):
        assert leaf.is_contiguous(), key
    assert sample["pixels"].dtype == torch.uint8 and sample["pixels"].shape == (16, 2, 3)
    assert sample["collector", "traj_ids"].shape == (16,)
    # the storage's dtype, as one tensor per leaf would hold it
    assert sample["action"].dtype == torch.float64
    assert sample["observation"].view(-1).shape == (16 * 5,)


def test_state_dicts_move_between_packed_and_per_leaf_storages():
    packed_rb, _ = fill(True, RandomSampler())
    plain_rb, _ = fill(False, RandomSampler())
    for source, packed in ((packed_rb, False), (plain_rb, True)):
        buffer = io.BytesIO()
        torch.save(source.state_dict(), buffer)
        buffer.seek(0)
        fast.PACKED_STORAGE = packed
        try:
            restored = TensorDictReplayBuffer(storage=LazyTensorStorage(64, ndim=2), batch_size=16)
            restored.load_state_dict(torch.load(buffer, weights_only=False))
        finally:
            fast.PACKED_STORAGE = True
        assert (restored.storage._packed is not None) is packed
        everything = torch.arange(len(source))
        assert_same(restored.storage.get(everything), source.storage.get(everything))
        torch.manual_seed(3)
        a = restored.sample()
        torch.manual_seed(3)
        assert_same(a, source.sample())


def test_the_off_policy_hook_writes_one_frame_at_a_time_into_a_packed_storage():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1_000_000), batch_size=4)
    hook = ReplayBufferTrainer(rb, flatten_tensordicts=True)
    written = [frames(1, k, with_policy_outputs=k >= 3) for k in range(6)]  # [1, 1] each
    for frame in written:
        hook.extend(frame)
    assert rb.storage._packed is not None and len(rb) == 6
    held = rb.storage.get(torch.arange(6))
    for k, frame in enumerate(written):
        for key, leaf in frame.reshape(-1).items(True, True):
            assert torch.equal(held[key][k], leaf[0].to(held[key].dtype)), (k, key)
    assert torch.equal(held["loc"][:3], torch.zeros(3, 2))  # written before the policy acted


def test_memory_mapped_storages_keep_a_file_per_leaf(tmp_path):
    rb = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(64, scratch_dir=tmp_path / "rb", ndim=2), batch_size=4
    )
    rb.extend(frames(10, 0, with_policy_outputs=True))
    assert rb.storage._packed is None
    reopened = LazyMemmapStorage(64, scratch_dir=tmp_path / "rb", existsok=True, ndim=2)
    assert_same(reopened.get(torch.arange(10)), rb.storage.get(torch.arange(10)))
