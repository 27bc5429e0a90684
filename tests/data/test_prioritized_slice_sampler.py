"""``PrioritizedSliceSampler``: trajectory slices whose start points are drawn by priority."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    LazyTensorStorage,
    PrioritizedSampler,
    PrioritizedSliceSampler,
    SliceSampler,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers.samplers import PrioritizedSliceSampler as FromSamplers

SLICE = 4


def _episodes(lengths: list[int]) -> TensorDict:
    """Trajectories one after the other: ``episode`` ids, ``obs`` = storage position, and
    the ``("next", "done")`` flag on each last step."""
    episode = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    done = torch.zeros(len(episode), 1, dtype=torch.bool)
    done[torch.tensor(lengths).cumsum(0) - 1] = True
    n = len(episode)
    return TensorDict(
        {"episode": episode, "obs": torch.arange(n), ("next", "done"): done}, batch_size=[n]
    )


def _buffer(data: TensorDict, batch_size: int = 16, **kwargs) -> TensorDictReplayBuffer:
    kwargs = {"alpha": 1.0, "beta": 0.5, "slice_len": SLICE, **kwargs}
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=PrioritizedSliceSampler(100, **kwargs),
        batch_size=batch_size,
    )
    rb.extend(data)
    return rb


def _prefer_episode(rb: TensorDictReplayBuffer, data: TensorDict, episode: int) -> None:
    priority = torch.where(data["episode"] == episode, 1000.0, 1e-3)
    rb.update_priority(torch.arange(data.shape[0]), priority)


def test_import_paths_and_types():
    assert FromSamplers is PrioritizedSliceSampler
    sampler = PrioritizedSliceSampler(10, 0.7, 0.5, num_slices=2)
    assert isinstance(sampler, SliceSampler) and isinstance(sampler, PrioritizedSampler)
    with pytest.raises(TypeError, match="exactly one of num_slices and slice_len"):
        PrioritizedSliceSampler(10, 0.7, 0.5)


def test_slices_come_mostly_from_the_high_priority_trajectory():
    torch.manual_seed(0)
    data = _episodes([10, 10, 10, 10])
    rb = _buffer(data, batch_size=400)
    before = rb.sample().reshape(-1, SLICE)["episode"][:, 0]
    assert set(before.tolist()) == {0, 1, 2, 3}  # equal priorities: every trajectory
    _prefer_episode(rb, data, 2)
    after = rb.sample().reshape(-1, SLICE)["episode"][:, 0]
    assert (after == 2).float().mean() > 0.95


@pytest.mark.parametrize("delimiter", ["traj_key", "end_key"])
def test_slices_are_contiguous_within_one_trajectory(delimiter):
    torch.manual_seed(1)
    data = _episodes([7, 5, 12, 4, 9])
    if delimiter == "end_key":  # no trajectory ids stored: the done flags end trajectories
        data = data.rename_key_("episode", "ep")
        rb, key = _buffer(data, batch_size=200, end_key=("next", "done")), "ep"
    else:
        rb, key = _buffer(data, batch_size=200, traj_key="episode"), "episode"
    rb.update_priority(torch.arange(37), torch.where(data[key] == 2, 1000.0, 1e-3))
    slices = rb.sample().reshape(-1, SLICE)
    assert (slices[key][:, 0] == 2).float().mean() > 0.9
    assert (slices["obs"].diff(dim=1) == 1).all()
    assert (slices[key] == slices[key][:, :1]).all()
    assert slices["next", "truncated"][:, -1].all()
    assert not slices["next", "truncated"][:, :-1].any()
    assert torch.equal(slices["index"], slices["obs"])


def test_weights_shape_and_values():
    torch.manual_seed(2)
    data = _episodes([10, 10, 10, 10])
    rb = _buffer(data, batch_size=64, beta=0.5)
    sample = rb.sample()
    assert sample["_weight"].shape == torch.Size([64])
    assert torch.allclose(sample["_weight"], torch.ones(64))  # equal priorities
    priority = torch.where(data["episode"] == 0, 100.0, 1.0)
    rb.update_priority(torch.arange(40), priority)
    slices = rb.sample(400).reshape(-1, SLICE)
    weight, first = slices["_weight"], slices["episode"][:, 0]
    assert (weight <= 1).all()
    assert (weight == weight[:, :1]).all()  # one weight per slice, from its start
    # (p / p_min) ** -beta: 100 ** -0.5 for starts in episode 0, 1 elsewhere
    assert torch.allclose(weight[first == 0], torch.tensor(0.1), rtol=1e-4)
    assert torch.allclose(weight[first != 0], torch.tensor(1.0), rtol=1e-4)


@pytest.mark.parametrize("method", ["update_priority", "update_tensordict_priority"])
def test_update_priority_from_a_sampled_tensordict(method):
    torch.manual_seed(3)
    data = _episodes([10, 10, 10, 10])
    rb = _buffer(data, batch_size=160)
    rb.update_priority(torch.arange(40), torch.full((40,), 1e-3))
    sample = rb.sample()
    sample.set("td_error", torch.where(sample["episode"] == 3, 1000.0, 1e-3))
    getattr(rb, method)(sample)  # rb.update_priority(sample): torchrl's off-policy scripts
    assert (rb.sample().reshape(-1, SLICE)["episode"][:, 0] == 3).float().mean() > 0.9


def test_strict_length():
    torch.manual_seed(4)
    data = _episodes([2, 10, 3])
    strict = _buffer(data, batch_size=200)
    assert (strict.sample()["episode"] == 1).all()  # the only trajectory with 4 steps
    loose = _buffer(data, batch_size=200, strict_length=False)
    sample = loose.sample()
    assert {0, 1, 2} <= set(sample["episode"].tolist())
    assert sample.shape[0] < 200  # slices cut at a trajectory's end are shorter
    assert sample["_weight"].shape == sample.shape
    # every slice is contiguous and inside one trajectory: cut at the truncated flags
    ends = torch.nonzero(sample["next", "truncated"].squeeze(-1)).squeeze(-1) + 1
    for piece in torch.tensor_split(sample, ends[:-1].tolist()):
        assert (piece["obs"].diff() == 1).all()
        assert (piece["episode"] == piece["episode"][0]).all()
        assert 1 <= piece.shape[0] <= SLICE
    too_short = _buffer(_episodes([2, 3]), batch_size=8)
    with pytest.raises(RuntimeError, match="no stored trajectory has 4 items"):
        too_short.sample()


def test_checkpoint_round_trip_keeps_priorities(tmp_path):
    data = _episodes([10, 10, 10, 10])
    rb = _buffer(data, batch_size=40)
    _prefer_episode(rb, data, 1)
    path = tmp_path / "rb.pt"
    torch.save(rb.state_dict(), path)
    restored = TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=PrioritizedSliceSampler(100, alpha=1.0, beta=0.5, slice_len=SLICE),
        batch_size=40,
    )
    restored.load_state_dict(torch.load(path, weights_only=True))
    torch.manual_seed(5)
    expected = rb.sample()
    torch.manual_seed(5)
    got = restored.sample()
    assert torch.equal(got["index"], expected["index"])
    assert torch.equal(got["_weight"], expected["_weight"])
    assert (got.reshape(-1, SLICE)["episode"][:, 0] == 1).float().mean() > 0.9


def test_new_items_priority_and_max_priority_within_buffer():
    data = _episodes([10, 10])
    for within, expected in ((False, 50.0), (True, 2.0)):
        rb = _buffer(data, max_priority_within_buffer=within)
        rb.update_priority(torch.arange(20), torch.full((20,), 50.0))
        rb.update_priority(torch.arange(20), torch.full((20,), 2.0))
        rb.extend(_episodes([10]))  # no priority given: the "max priority"
        leaves = rb.sampler.state_dict()["priorities"][20:30]
        assert torch.allclose(leaves, torch.full((10,), expected, dtype=leaves.dtype))


def test_unsupported_options_raise():
    with pytest.raises(NotImplementedError, match="pad_output"):
        PrioritizedSliceSampler(10, 0.7, 0.5, slice_len=2, pad_output=True)
    with pytest.raises(NotImplementedError, match="span"):
        PrioritizedSliceSampler(10, 0.7, 0.5, slice_len=2, span=True)
    with pytest.raises(TypeError, match="dtype must be a float dtype"):
        PrioritizedSliceSampler(10, 0.7, 0.5, dtype=torch.int64, slice_len=2)
    # torchrl's tree dtype is accepted
    PrioritizedSliceSampler(10, 0.7, 0.5, 1e-6, torch.float64, "mean", slice_len=2)
