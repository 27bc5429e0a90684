"""Specs: sampling, membership, projection, Composite indexing, conversion from gym spaces."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rl_trainers.envs import (
    Binary,
    Bounded,
    BoundedTensorSpec,
    Categorical,
    Composite,
    CompositeSpec,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
    specs_from_gym_space,
)


def test_bounded_rand_is_in_project():
    spec = Bounded(low=-2.0, high=torch.tensor([1.0, 3.0]))
    assert spec.shape == (2,)
    x = spec.rand((100,))
    assert x.shape == (100, 2) and spec.is_in(x)
    assert torch.equal(spec.project(torch.tensor([-5.0, 5.0])), torch.tensor([-2.0, 3.0]))
    assert not spec.is_in(torch.tensor([0.0, 4.0]))
    assert torch.equal(spec.zero(), torch.zeros(2))


def test_bounded_with_infinite_bounds_samples_finite_values():
    spec = Bounded(torch.tensor([-1.0, -float("inf")]), torch.tensor([1.0, float("inf")]))
    x = spec.rand((50,))
    assert torch.isfinite(x).all() and spec.is_in(x)


def test_bounded_rejects_low_above_high():
    with pytest.raises(ValueError, match="low must be <= high"):
        Bounded(1.0, 0.0, shape=(1,))


def test_onehot_and_categorical():
    oh = OneHot(3)
    x = oh.rand((10,))
    assert x.shape == (10, 3) and x.dtype == torch.bool and oh.is_in(x)
    assert (x.sum(-1) == 1).all()
    assert torch.equal(
        oh.project(torch.tensor([0.1, 0.7, 0.2])), torch.tensor([False, True, False])
    )
    cat = Categorical(4)
    y = cat.rand((20,))
    assert y.dtype == torch.int64 and ((y >= 0) & (y < 4)).all()
    assert not cat.is_in(torch.tensor(4))
    assert cat.project(torch.tensor(9)) == 3
    assert oh.n == 3 and cat.n == 4 and oh.space.n == 3


def test_multicategorical_binary_unbounded():
    mc = MultiCategorical([2, 5])
    x = mc.rand((100,))
    assert (x[:, 0] < 2).all() and (x[:, 1] < 5).all() and mc.is_in(x)
    b = Binary(4)
    assert b.is_in(b.rand()) and not b.is_in(torch.full((4,), 2, dtype=torch.int8))
    u = Unbounded((3,))
    assert u.rand((2,)).shape == (2, 3) and u.dtype == torch.float32


def test_multi_one_hot_blocks():
    # torchrl's example: nvec (3, 2, 3), one hot entry per block of the 8 entries
    spec = MultiOneHot((3, 2, 3))
    assert spec.shape == (8,) and spec.dtype == torch.bool and spec.cardinality() == 18
    good = torch.tensor([0, 0, 1, 0, 1, 1, 0, 0], dtype=torch.bool)
    assert spec.is_in(good)
    assert not spec.is_in(torch.tensor([1, 0, 1, 0, 1, 1, 0, 0], dtype=torch.bool))
    assert not spec.is_in(torch.tensor([0, 0, 1, 0, 0, 1, 0, 0], dtype=torch.bool))
    assert torch.equal(spec.to_categorical(good), torch.tensor([2, 1, 0]))
    x = spec.rand((500,))
    assert x.shape == (500, 8) and spec.is_in(x)
    # every category of every block is drawn, and each value maps back through its indices
    index = spec.to_categorical(x)
    assert [set(index[:, i].tolist()) for i in range(3)] == [{0, 1, 2}, {0, 1}, {0, 1, 2}]
    assert torch.equal(spec.to_one_hot(index), x)
    cat = spec.to_categorical_spec()
    assert isinstance(cat, MultiCategorical) and cat.is_in(index)
    assert cat.to_one_hot_spec() == spec and torch.equal(cat.to_one_hot(index), x)
    # projection: the largest entry of each block
    scores = torch.tensor([0.1, 0.5, 0.2, 2.0, -1.0, 0.0, 0.0, 3.0])
    assert torch.equal(spec.project(scores), torch.tensor([0, 1, 0, 1, 0, 0, 0, 1]).bool())
    batched = MultiOneHot([2, 2], shape=(4, 4), dtype=torch.int64)
    assert batched.rand().shape == (4, 4) and batched.is_in(batched.rand())
    assert batched.expand(3, 4, 4).shape == (3, 4, 4)
    with pytest.raises(ValueError, match="sum\\(nvec\\)=4"):
        MultiOneHot([2, 2], shape=(5,))
    with pytest.raises(NotImplementedError, match="mask"):
        MultiOneHot([2], mask=torch.ones(2, dtype=torch.bool))


def test_expand_and_wrong_expand():
    spec = Bounded(-1.0, 1.0, shape=(2,))
    e = spec.expand(4, 2)
    assert e.shape == (4, 2) and e.low.shape == (4, 2)
    with pytest.raises(ValueError, match="must end with"):
        spec.expand(4, 3)


def test_composite_nested_keys_rand_zero():
    spec = Composite(observation=Unbounded((4,)), next=Composite(reward=Unbounded((1,))))
    assert spec[("next", "reward")].shape == (1,)
    spec[("a", "b")] = Categorical(2)
    assert ("a", "b") in spec.keys(include_nested=True, leaves_only=True)
    td = spec.rand()
    assert td["observation"].shape == (4,) and td["next", "reward"].shape == (1,)
    assert spec.is_in(spec.zero())
    with pytest.raises(KeyError, match="keys present"):
        spec["missing"]


def test_composite_batch_shape_is_checked():
    spec = Composite(shape=(3,))
    spec["x"] = Unbounded((3, 2))
    assert spec.rand().batch_size == (3,)
    with pytest.raises(ValueError, match="batch shape"):
        spec["y"] = Unbounded((2,))
    assert spec.expand(5, 3)["x"].shape == (5, 3, 2)


def test_old_names_are_aliases():
    assert BoundedTensorSpec is Bounded and CompositeSpec is Composite


def test_specs_from_each_gym_space():
    box = specs_from_gym_space(spaces.Box(-1.0, 2.0, (3,), dtype=np.float64))
    assert isinstance(box, Bounded) and box.dtype == torch.float32
    assert torch.equal(box.high, torch.full((3,), 2.0))
    unb = specs_from_gym_space(spaces.Box(-np.inf, np.inf, (2,)))
    assert isinstance(unb, Unbounded)
    assert isinstance(specs_from_gym_space(spaces.Discrete(5)), OneHot)
    cat = specs_from_gym_space(spaces.Discrete(5), categorical_action_encoding=True)
    assert isinstance(cat, Categorical) and cat.n == 5
    mc = specs_from_gym_space(spaces.MultiDiscrete([3, 4]))
    assert isinstance(mc, MultiCategorical) and mc.nvec.tolist() == [3, 4]
    mb = specs_from_gym_space(spaces.MultiBinary(6))
    assert isinstance(mb, Binary) and mb.shape == (6,)
    d = specs_from_gym_space(
        spaces.Dict(
            {"pos": spaces.Box(-1, 1, (2,)), "inner": spaces.Dict({"k": spaces.Discrete(2)})}
        )
    )
    assert isinstance(d, Composite) and d[("inner", "k")].n == 2
    t = specs_from_gym_space(spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (1,)))))
    assert set(t.keys()) == {"0", "1"}
    batched = specs_from_gym_space(spaces.Box(-1, 1, (3,)), batch_size=(4,))
    assert batched.shape == (4, 3)
