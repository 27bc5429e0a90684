"""``SliceSamplerWithoutReplacement``: slices of trajectories drawn without replacement."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    LazyTensorStorage,
    ReplayBuffer,
    SamplerWithoutReplacement,
    SliceSampler,
    SliceSamplerWithoutReplacement,
    TensorDictReplayBuffer,
)
from rl_trainers.data.replay_buffers.samplers import (
    SliceSamplerWithoutReplacement as FromSamplers,
)


def _episodes(n: int, length: int) -> TensorDict:
    episode = torch.arange(n).repeat_interleave(length)
    return TensorDict({"episode": episode, "obs": torch.arange(n * length)}, [n * length])


def _buffer(sampler, data, batch_size):
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(1000), sampler=sampler, batch_size=batch_size
    )
    rb.extend(data)
    return rb


def test_import_paths_and_types():
    assert FromSamplers is SliceSamplerWithoutReplacement
    s = SliceSamplerWithoutReplacement(num_slices=2)
    assert isinstance(s, SliceSampler) and isinstance(s, SamplerWithoutReplacement)
    with pytest.raises(TypeError, match="exactly one of num_slices and slice_len"):
        SliceSamplerWithoutReplacement()


def test_an_epoch_visits_each_trajectory_once():
    torch.manual_seed(0)
    rb = _buffer(SliceSamplerWithoutReplacement(num_slices=10), _episodes(25, 20), 50)
    batches = list(rb)  # one epoch: 10 + 10 + 5 slices (drop_last=False)
    assert [b.shape[0] for b in batches] == [50, 50, 25]
    seen = []
    for b in batches:
        slices = b.reshape(-1, 5)
        # each slice: 5 consecutive steps of one trajectory
        assert (slices["obs"].diff(dim=1) == 1).all()
        assert (slices["episode"] == slices["episode"][:, :1]).all()
        firsts = slices["episode"][:, 0].tolist()
        assert len(set(firsts)) == len(firsts)  # no trajectory twice in a sample
        seen += firsts
        # slice ends are marked truncated (and done) for value estimators
        assert slices["next", "truncated"][:, -1].all()
        assert not slices["next", "truncated"][:, :-1].any()
    assert sorted(seen) == list(range(25))
    assert sorted(sum((b.reshape(-1, 5)["episode"][:, 0].tolist() for b in rb), [])) == list(
        range(25)
    )  # the next epoch again visits all of them


def test_drop_last_and_no_shuffle():
    rb = _buffer(
        SliceSamplerWithoutReplacement(num_slices=10, drop_last=True, shuffle=False),
        _episodes(25, 20),
        50,
    )
    firsts = [b.reshape(-1, 5)["episode"][:, 0].tolist() for b in rb]
    assert firsts == [list(range(10)), list(range(10, 20))]  # the 5 left are dropped
    assert rb.sampler.ran_out
    by_len = _buffer(
        SliceSamplerWithoutReplacement(slice_len=5, drop_last=True), _episodes(25, 20), 50
    )
    with pytest.raises(ValueError, match="30 slices per sample exceed the 25 trajectories"):
        by_len.sample(150)


def test_fewer_trajectories_than_slices_gives_a_shorter_sample():
    # torchrl's docstring example: 4 episodes, 10 slices of 32 asked, 4 x 32 returned
    episode = torch.zeros(1000, dtype=torch.int)
    episode[:300], episode[300:550], episode[550:700], episode[700:] = 1, 2, 3, 4
    data = TensorDict({"episode": episode, "obs": torch.arange(1000)}, [1000])
    rb = _buffer(SliceSamplerWithoutReplacement(num_slices=10), data, 320)
    sample = rb.sample()
    assert sample.shape == (128,)
    assert sample["episode"].unique().tolist() == [1, 2, 3, 4]


def test_strict_length_skips_short_trajectories_and_end_key_works():
    done = torch.zeros(30, 1, dtype=torch.bool)
    done[[2, 14, 29]] = True  # trajectories of 3, 12 and 15 steps
    data = TensorDict({"obs": torch.arange(30), ("next", "done"): done}, [30])
    rb = _buffer(SliceSamplerWithoutReplacement(slice_len=4), data, 8)
    sample = rb.sample()
    starts = sorted(sample["obs"].reshape(-1, 4)[:, 0].tolist())
    assert 3 <= starts[0] <= 11 and 15 <= starts[1] <= 26
    assert rb.sampler.ran_out  # both long trajectories used: the epoch is over
    loose = _buffer(SliceSamplerWithoutReplacement(slice_len=4, strict_length=False), data, 12)
    assert loose.sample().shape == (11,)  # the 3-step trajectory comes whole


def test_state_dict_resumes_the_epoch_and_extend_restarts_it():
    torch.manual_seed(3)
    data = _episodes(12, 10)
    rb = _buffer(SliceSamplerWithoutReplacement(num_slices=4), data, 20)
    rb.sample()
    state = rb.state_dict()
    assert state["sampler"]["pos"] == 4 and state["sampler"]["order"].shape == (12,)
    rest = [rb.sample()["episode"][::5].tolist() for _ in range(2)]
    rb2 = _buffer(SliceSamplerWithoutReplacement(num_slices=4), data, 20)
    rb2.load_state_dict(state)
    assert [rb2.sample()["episode"][::5].tolist() for _ in range(2)] == rest
    rb2.extend(_episodes(1, 10).apply(lambda x: x + 100))
    assert rb2.sampler.state_dict()["order"] is None  # new data: a new epoch


def test_plain_replay_buffer_returns_truncation_in_info():
    rb = ReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSamplerWithoutReplacement(slice_len=5, traj_key="episode"),
    )
    rb.extend(_episodes(3, 10))
    data, info = rb.sample(10, return_info=True)
    assert data.shape == (10,)
    assert info[("next", "truncated")].squeeze(-1).tolist() == [False] * 4 + [True] + [
        False
    ] * 4 + [True]
