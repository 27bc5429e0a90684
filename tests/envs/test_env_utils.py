"""Helpers on collector batches: ``flatten_batch`` against tensordict's ``reshape``/``flatten``."""

from __future__ import annotations

import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_trainers.envs.utils import flatten_batch


def _batch() -> TensorDict:
    return TensorDict(
        {
            "observation": torch.arange(24.0).reshape(2, 3, 4),
            "action": torch.arange(6).reshape(2, 3),
            "next": {"reward": torch.rand(2, 3, 1), "done": torch.zeros(2, 3, 1, dtype=bool)},
            "collector": {"traj_ids": torch.arange(6).reshape(2, 3)},
            "pixels": TensorDict({"frame": torch.rand(2, 3, 5, 2)}, batch_size=[2, 3, 5]),
        },
        batch_size=[2, 3],
    )


def _assert_same(a: TensorDict, b: TensorDict) -> None:
    assert a.batch_size == b.batch_size
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        assert torch.equal(a.get(key), b.get(key)), key
    for key in a.keys(True):
        value = a.get(key)
        if isinstance(value, TensorDict):
            assert value.batch_size == b.get(key).batch_size, key


def test_flatten_batch_equals_reshape():
    batch = _batch()
    _assert_same(flatten_batch(batch), batch.reshape(-1))
    without_deeper = batch.exclude("pixels")  # the fast path: every entry flattened directly
    _assert_same(flatten_batch(without_deeper), without_deeper.reshape(-1))
    one_step = without_deeper[:1, :1]
    assert flatten_batch(one_step).batch_size == torch.Size([1])


def test_flatten_batch_of_a_lazy_stack():
    batch = _batch().exclude("pixels")
    lazy = LazyStackedTensorDict.lazy_stack(list(batch.unbind(0)), 0)
    _assert_same(flatten_batch(lazy), batch.reshape(-1))


def test_flatten_batch_merges_only_the_first_dims_given():
    batch = TensorDict(
        {"obs": torch.arange(24.0).reshape(2, 3, 4), "next": {"reward": torch.rand(2, 3, 4, 1)}},
        batch_size=[2, 3, 4],
    )
    merged = flatten_batch(batch, 2)
    assert merged.batch_size == (6, 4) and merged["next"].batch_size == (6, 4)
    _assert_same(merged, batch.flatten(0, 1))
    _assert_same(flatten_batch(batch, 3), batch.reshape(-1))
    lazy = LazyStackedTensorDict.lazy_stack(list(batch.unbind(0)), 0)
    _assert_same(flatten_batch(lazy, 2), batch.flatten(0, 1))
