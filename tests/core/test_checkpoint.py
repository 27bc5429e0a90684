"""Checkpoints: round trips with both backends, RNG restore and clear errors."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import torch

from rl_trainers.core import CheckpointError, Trainer, TrainerHookBase
from rl_trainers.core.checkpoint import decode, encode
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.hooks import CountFramesLog, ReplayBufferTrainer, RewardNormalizer, UpdateWeights

try:
    import torchsnapshot  # noqa: F401

    HAS_TORCHSNAPSHOT = True
except ImportError:  # the test is skipped, with the reason, when it cannot be imported
    HAS_TORCHSNAPSHOT = False
BACKENDS = [
    "torch",
    pytest.param(
        "torchsnapshot",
        marks=pytest.mark.skipif(
            not HAS_TORCHSNAPSHOT,
            reason="torchsnapshot is not installed (pip install torchsnapshot)",
        ),
    ),
]


def build(fakes, path, seed=None, optimizer=lambda params: torch.optim.Adam(params, lr=1e-2)):
    collector = fakes.Collector()
    loss = fakes.Loss()
    optim = optimizer(loss.parameters())
    trainer = Trainer(
        collector=collector,
        total_frames=64,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=optim,
        progress_bar=False,
        save_trainer_file=path,
        save_trainer_interval=1000,
        seed=seed,
    )
    CountFramesLog().register(trainer)
    RewardNormalizer().register(trainer)
    UpdateWeights(collector, 1).register(trainer)
    return trainer


@pytest.mark.parametrize("backend", BACKENDS)
def test_round_trip_restores_everything(fakes, tmp_path, monkeypatch, backend):
    monkeypatch.setenv("CKPT_BACKEND", backend)
    path = tmp_path / ("ckpt.pt" if backend == "torch" else "ckpt_dir")
    t1 = build(fakes, path, seed=0)
    t1.train()  # saves at the end (forced)
    assert path.exists()
    torch_next, np_next, py_next = torch.rand(4), np.random.rand(3), random.random()

    t2 = build(fakes, path, seed=1)
    t2.load_from_file(path)
    assert (t2.collected_frames, t2._optim_count, t2.iteration) == (64, 8, 4)
    for p1, p2 in zip(t1.loss_module.parameters(), t2.loss_module.parameters()):
        assert torch.equal(p1, p2)
    s1, s2 = t1.optimizer.state_dict(), t2.optimizer.state_dict()
    assert s1["param_groups"] == s2["param_groups"]
    for k, st in s1["state"].items():
        for name, value in st.items():
            assert torch.equal(value, s2["state"][k][name]), name
    sd1, sd2 = t1.state_dict()["modules"], t2.state_dict()["modules"]
    assert sd1["count_frames_log"] == sd2["count_frames_log"] == {"frame_count": 64}
    assert sd1["update_weights"] == sd2["update_weights"] == {"counter": 4}
    for k in ("sum", "ssq", "count"):
        assert torch.equal(sd1["reward_normalizer"][k], sd2["reward_normalizer"][k])
    assert t2.collector.batches_yielded == 4
    # RNG states restored: the same draws follow
    assert torch.equal(torch.rand(4), torch_next)
    assert np.array_equal(np.random.rand(3), np_next)
    assert random.random() == py_next


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prefetching_buffer_continues_its_draws_after_a_resume(
    fakes, tmp_path, monkeypatch, backend
):
    """The buffer's own generator (prefetch) is in the checkpoint: a resumed trainer's
    buffer draws what the saving one draws next."""
    monkeypatch.setenv("CKPT_BACKEND", backend)
    path = tmp_path / ("ckpt.pt" if backend == "torch" else "ckpt_dir")

    def build_with_buffer(seed):
        torch.manual_seed(seed)
        trainer = build(fakes, path, seed=seed)
        rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4, prefetch=2)
        ReplayBufferTrainer(rb, flatten_tensordicts=True).register(trainer)
        return trainer, rb

    t1, rb1 = build_with_buffer(0)
    t1.train()  # saves at the end (forced)
    t2, rb2 = build_with_buffer(1)
    t2.load_from_file(path)
    for _ in range(5):
        assert torch.equal(rb1.sample()["index"], rb2.sample()["index"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_resave_overwrites(fakes, tmp_path, monkeypatch, backend):
    monkeypatch.setenv("CKPT_BACKEND", backend)
    path = tmp_path / "ckpt"
    t = build(fakes, path)
    t.save_trainer(force=True)
    t.collected_frames = 5
    t.save_trainer(force=True)
    t2 = build(fakes, path)
    t2.load_from_file()
    assert t2.collected_frames == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no temp files left


def test_save_interval_crossing(fakes, tmp_path, monkeypatch):
    from rl_trainers.core import checkpoint

    saved = []
    monkeypatch.setattr(checkpoint, "save_checkpoint", lambda sd, p: saved.append(sd["counters"]))
    t = build(fakes, tmp_path / "c.pt")
    t.total_frames, t.save_trainer_interval = 80, 40  # batches of 16: 16 32 48* 64 80*
    t.train()
    assert [c["collected_frames"] for c in saved] == [48, 80]


def test_save_without_file_forced_raises(fakes):
    t = build(fakes, None)
    t.save_trainer()  # silently nothing
    with pytest.raises(ValueError, match="save_trainer_file"):
        t.save_trainer(force=True)


def test_unknown_backend(fakes, tmp_path, monkeypatch):
    monkeypatch.setenv("CKPT_BACKEND", "pickle")
    with pytest.raises(ValueError, match="CKPT_BACKEND='pickle'.*torchsnapshot"):
        build(fakes, tmp_path / "c.pt").save_trainer(force=True)


def test_missing_file(fakes, tmp_path):
    path = tmp_path / "nope.pt"
    with pytest.raises(CheckpointError, match=f"{path}.*does not exist"):
        build(fakes, None).load_from_file(path)


def test_truncated_file(fakes, tmp_path):
    path = tmp_path / "c.pt"
    t = build(fakes, path)
    t.save_trainer(force=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{path} is truncated or corrupted"):
        t.load_from_file()


def test_random_bytes(fakes, tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(CheckpointError, match=str(path)):
        build(fakes, None).load_from_file(path)


def test_foreign_torch_file(fakes, tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"a": 1}, path)
    with pytest.raises(CheckpointError, match=rf"{path} is not an rl_trainers.*found \['a'\]"):
        build(fakes, None).load_from_file(path)


class Evil:
    pass


def test_file_with_code_is_refused(fakes, tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": "rl_trainers.trainer", "x": Evil()}, path)
    with pytest.raises(CheckpointError, match=f"{path} cannot be loaded safely"):
        build(fakes, None).load_from_file(path)


def test_mismatched_modules_are_listed(fakes, tmp_path):
    path = tmp_path / "c.pt"
    build(fakes, path).save_trainer(force=True)
    other = build(fakes, None)
    other.register_module("extra", torch.nn.Linear(2, 2))
    del other._modules["update_weights"]
    with pytest.raises(
        CheckpointError,
        match=r"missing from the checkpoint: \['extra'\].*"
        r"not registered: \['update_weights'\]",
    ):
        other.load_from_file(path)


def test_modules_only_in_the_checkpoint_are_skipped_with_a_warning(fakes, tmp_path):
    """Loading a full run's checkpoint into a trainer with fewer hooks (torchrl ignores the
    extra entries): what is registered is restored, the rest is named in a warning when
    training starts without it."""
    path = tmp_path / "c.pt"
    saved = build(fakes, path)
    saved.save_trainer(force_save=True)  # torchrl's keyword
    bare = build(fakes, None)
    del bare._modules["update_weights"]
    torch.nn.init.zeros_(bare.loss_module.net.weight)
    bare.load_from_file(path)
    assert torch.equal(bare.loss_module.net.weight, saved.loss_module.net.weight)
    bare.total_frames = 0
    with pytest.warns(UserWarning, match=r"not loaded: \['update_weights'\]"):
        bare.train()


class _Counter(TrainerHookBase):
    """A user's hook: counts its calls, checkpointed under ``counter``."""

    def __init__(self) -> None:
        self.calls = 0

    def register(self, trainer, name="counter"):
        trainer.register_op("post_steps", self)
        trainer.register_op("post_steps", self.every_fifth, every=5)
        trainer.register_module(name, self)

    def __call__(self):
        self.calls += 1

    def every_fifth(self):
        self.fifths = getattr(self, "fifths", 0) + 1

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state_dict):
        self.calls = state_dict["calls"]


def test_a_hook_registered_after_the_load_gets_its_state_and_phase(fakes, tmp_path):
    """A trainer resumed before its caller registers a hook (what instantiate(cfg.trainer)
    with trainer.resume=true does): the hook's state and its every=N phase come from the
    checkpoint when it is registered, and the run goes on as one that never stopped."""
    path = tmp_path / "c.pt"
    straight = build(fakes, None)
    straight.total_frames = 112  # 7 batches of 16
    _Counter().register(straight)
    straight.train()

    first = build(fakes, path)
    first.total_frames = 64
    _Counter().register(first)
    first.train()  # 4 batches: the every=5 op is one pass from its first call

    resumed = build(fakes, path)
    resumed.total_frames = 112
    resumed.load_from_file(path)
    hook = _Counter()
    hook.register(resumed)
    assert hook.calls == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left unclaimed
        resumed.train()
    assert hook.calls == 7
    assert hook.fifths == 1  # the 5th batch (without the phase kept, none in 3 batches)
    assert resumed.state_dict()["counters"]["every"] == straight.state_dict()["counters"]["every"]


def test_a_hook_registered_after_the_load_with_another_shape_is_refused(fakes, tmp_path):
    path = tmp_path / "c.pt"
    saved = build(fakes, path)
    saved.register_module("extra_net", torch.nn.Linear(2, 2))
    saved.save_trainer(force=True)
    resumed = build(fakes, None)
    resumed.load_from_file(path)
    with pytest.raises(CheckpointError, match=r"'extra_net'.weight: size mismatch"):
        resumed.register_module("extra_net", torch.nn.Linear(3, 2))


def test_mismatched_module_state_names_module(fakes, tmp_path):
    path = tmp_path / "c.pt"
    t = build(fakes, path)
    t.save_trainer(force=True)
    other = build(fakes, None)
    other.loss_module.net = torch.nn.Linear(3, 2)
    with pytest.raises(CheckpointError, match=f"(?s){path}.*'loss_module'.*size mismatch"):
        other.load_from_file(path)


def test_missing_top_level_entries(fakes, tmp_path):
    path = tmp_path / "c.pt"
    t = build(fakes, path)
    sd = t.state_dict()
    del sd["rng"], sd["counters"]
    with pytest.raises(CheckpointError, match=r"missing the entries \['counters', 'rng'\]"):
        t.load_state_dict(sd)


def test_unsafe_object_refused_at_save(fakes, tmp_path):
    t = build(fakes, tmp_path / "c.pt")
    t.register_module(
        "bad",
        type(
            "Bad", (), {"state_dict": lambda s: {"x": Evil()}, "load_state_dict": lambda s, d: None}
        )(),
    )
    with pytest.raises(TypeError, match=r"state\['modules'\]\['bad'\]\['x'\].*Evil"):
        t.save_trainer(force=True)


def test_codec_round_trip_numpy_and_tensordict():
    from tensordict import TensorDict

    obj = {
        "a": np.arange(3, dtype=np.uint32),
        "b": TensorDict(x=torch.ones(2, 1), batch_size=[2]),
        "c": (np.float32(1.5), [1, None]),
    }
    out = decode(encode(obj))
    assert out["a"].dtype == np.uint32 and np.array_equal(out["a"], obj["a"])
    assert out["b"].batch_size == torch.Size([2]) and torch.equal(out["b"]["x"], torch.ones(2, 1))
    assert out["c"] == (1.5, [1, None])


@pytest.mark.skipif(not HAS_TORCHSNAPSHOT, reason="torchsnapshot is not installed")
def test_torchsnapshot_errors(fakes, tmp_path, monkeypatch):
    monkeypatch.setenv("CKPT_BACKEND", "torchsnapshot")
    t = build(fakes, None)
    with pytest.raises(CheckpointError, match="does not exist"):
        t.load_from_file(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match=f"{empty} is not a readable torchsnapshot"):
        t.load_from_file(empty)
    f = tmp_path / "f.pt"
    f.write_bytes(b"x")
    with pytest.raises(CheckpointError, match="is a file"):
        t.load_from_file(f)


def test_a_checkpoint_of_another_optimizer_class_is_refused_at_load(fakes, tmp_path):
    path = tmp_path / "c.pt"
    build(fakes, path).save_trainer(force=True)  # Adam
    other = build(fakes, None, optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    sgd = other.optimizer
    with pytest.raises(CheckpointError, match=r"'optimizer'.*lacks SGD's settings.*'momentum'"):
        other.load_from_file(path)
    assert sgd.param_groups[0]["lr"] == 0.1 and sgd.param_groups[0]["momentum"] == 0.9
    other.total_frames = 16
    other.train()  # left as it was: it trains


def test_an_optimizer_state_from_an_older_torch_is_filled_in(fakes, tmp_path):
    """A setting a later torch added (absent from an older checkpoint) is not a mismatch."""
    path = tmp_path / "c.pt"
    trainer = build(fakes, path)
    trainer.save_trainer(force=True)
    state = torch.load(path, weights_only=True)
    for group in state["modules"]["optimizer"]["optimizer"]["param_groups"]:
        del group["maximize"]
    torch.save(state, path)
    resumed = build(fakes, None)
    resumed.load_from_file(path)
    assert resumed.optimizer.param_groups[0]["maximize"] is False
