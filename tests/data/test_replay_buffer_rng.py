"""Seeded replay buffers sample the same items: with prefetch (a background thread draws)
as without, across save and load, and without disturbing the main thread's random stream."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.data import (
    LazyTensorStorage,
    PrioritizedSampler,
    RandomSampler,
    ReplayBufferEnsemble,
    SamplerWithoutReplacement,
    TensorDictReplayBuffer,
)

SAMPLERS = {
    "random": RandomSampler,
    "without_replacement": SamplerWithoutReplacement,
    "prioritized": lambda: PrioritizedSampler(200, alpha=0.7, beta=0.5),
}


def items(n, start=0):
    return TensorDict({"obs": torch.arange(start, start + n, dtype=torch.float32)}, [n])


def buffer(sampler, prefetch=2, batch_size=8):
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(200),
        sampler=SAMPLERS[sampler](),
        batch_size=batch_size,
        prefetch=prefetch,
    )


def training_like_run(rb, batches=5, steps=6):
    """What a trainer does: extend, then sample while the main thread draws random
    numbers (policy, exploration) and updates priorities; returns everything drawn."""
    indices, main_draws = [], []
    for b in range(batches):
        rb.extend(items(10, start=10 * b))
        for _ in range(steps):
            sample = rb.sample()
            indices.append(sample["index"].tolist())
            main_draws.append(torch.rand(4).tolist())
            rb.update_priority(sample["index"], torch.rand(sample.shape[0]) + 0.1)
    return indices, main_draws


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_seeded_prefetching_runs_sample_the_same_items(sampler):
    def run(seed):
        torch.manual_seed(seed)  # before building, as the entry points seed
        return training_like_run(buffer(sampler, prefetch=2))

    first, second = run(0), run(0)
    assert first == second  # sampled indices and the main thread's draws
    assert run(1)[0] != first[0]


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_prefetching_leaves_the_main_threads_random_stream_alone(sampler):
    """The main thread draws the same numbers however far the prefetch thread got."""
    torch.manual_seed(0)
    rb = buffer(sampler, prefetch=3)
    after_build = torch.get_rng_state()
    rb.extend(items(50))
    for _ in range(5):
        rb.sample()
    drawn = torch.rand(16)
    torch.set_rng_state(after_build)
    assert torch.equal(drawn, torch.rand(16))


@pytest.mark.parametrize("how", ["state_dict", "dumps"])
@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_a_loaded_buffer_continues_the_same_samples(sampler, how, tmp_path):
    torch.manual_seed(0)
    rb = buffer(sampler)
    training_like_run(rb, batches=2)
    if how == "state_dict":
        state = rb.state_dict()
    else:
        rb.dumps(tmp_path / "rb")
    global_rng = torch.get_rng_state()  # a trainer's checkpoint restores it as well
    continued = training_like_run(rb, batches=2)

    torch.manual_seed(123)  # built from another seed: the loaded state decides the draws
    resumed = buffer(sampler)
    if how == "state_dict":
        resumed.load_state_dict(state)
    else:
        resumed.loads(tmp_path / "rb")
    torch.set_rng_state(global_rng)
    assert training_like_run(resumed, batches=2) == continued


def test_a_failed_prefetch_is_reported_once_by_sample():
    rb = buffer("random")
    with pytest.raises(RuntimeError, match="empty replay buffer"):
        rb.sample()
    rb.extend(items(10))  # the failed batches queued behind it are not raised here
    assert rb.state_dict()["writer"] is not None
    assert rb.sample().shape == (8,)


def test_a_buffer_without_prefetch_draws_from_the_global_generator_as_before():
    """No prefetch: building draws nothing and samples are torch's global draws, so seeded
    runs and recorded figures are unchanged."""
    torch.manual_seed(5)
    rb = buffer("random", prefetch=None)
    rb.extend(items(30))
    drawn = [rb.sample()["index"] for _ in range(3)]
    torch.manual_seed(5)
    assert all(torch.equal(d, torch.randint(30, (8,))) for d in drawn)

    torch.manual_seed(5)
    rb = buffer("without_replacement", prefetch=None, batch_size=10)
    rb.extend(items(30))
    drawn = torch.cat([rb.sample()["index"] for _ in range(3)])
    torch.manual_seed(5)
    assert torch.equal(drawn, torch.randperm(30))


def test_a_generator_given_decides_the_draws():
    def drawn(seed):
        rb = TensorDictReplayBuffer(
            storage=LazyTensorStorage(50),
            batch_size=8,
            generator=torch.Generator().manual_seed(seed),
        )
        rb.extend(items(50))
        torch.manual_seed(seed + 1000)  # the global generator plays no part
        return [rb.sample()["index"].tolist() for _ in range(3)]

    assert drawn(0) == drawn(0) != drawn(1)
    rb = buffer("random", prefetch=None)
    rb.extend(items(50))
    rb.set_rng(torch.Generator().manual_seed(0))
    torch.manual_seed(99)
    assert [rb.sample()["index"].tolist() for _ in range(3)] == drawn(0)


def test_seeded_prefetching_ensembles_sample_the_same_items():
    def run(seed):
        torch.manual_seed(seed)
        members = [buffer("random", prefetch=None, batch_size=None) for _ in range(2)]
        for i, member in enumerate(members):
            member.extend(items(20, start=100 * i))
        rb = ReplayBufferEnsemble(*members, batch_size=8, num_buffer_sampled=2, prefetch=2)
        record = []
        for _ in range(10):
            index = rb.sample()["index"]
            record.append((index["buffer_ids"].tolist(), index["index"].tolist()))
            record.append(torch.rand(2).tolist())
        return record

    assert run(0) == run(0)
