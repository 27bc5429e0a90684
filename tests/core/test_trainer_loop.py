"""The Trainer loop: hook order, counters, stopping, logging gate, registry errors."""

from __future__ import annotations

import os
import signal

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.core import HOOK_POINTS, HookPoint, Trainer, TrainerHookBase
from rl_trainers.hooks import LogScalar

PER_STEP = ["process_optim_batch", "loss", "post_loss", "optimizer", "post_optim", "post_optim_log"]


def make_trainer(collector, loss_module, **kw):
    kw.setdefault("total_frames", 10_000)
    kw.setdefault("optim_steps_per_batch", 2)
    kw.setdefault("progress_bar", False)
    return Trainer(
        collector=collector,
        frame_skip=kw.pop("frame_skip", 1),
        loss_module=loss_module,
        **kw,
    )


def test_hook_points_are_the_seed_order():
    assert HOOK_POINTS == (
        "batch_process",
        "pre_steps_log",
        "pre_optim_steps",
        "pre_epoch",
        "process_optim_batch",
        "post_loss",
        "optimizer",
        "post_optim",
        "post_optim_log",
        "post_epoch",
        "post_steps",
        "post_steps_log",
    )
    assert HookPoint.POST_LOSS == "post_loss"


def test_exact_order_of_the_ten_points_and_counters(collector, loss_module):
    calls: list[str] = []
    frames_per_batch = collector.num_envs * collector.T
    trainer = make_trainer(
        collector,
        loss_module,
        total_frames=2 * frames_per_batch * 3,
        frame_skip=3,
        optimizer=torch.optim.SGD(loss_module.parameters(), lr=0.1),
    )
    original_forward = loss_module.forward

    def recording_forward(td):
        calls.append("loss")
        return original_forward(td)

    loss_module.forward = recording_forward
    for point in HOOK_POINTS:
        trainer.register_op(point, lambda *a, _p=point, **k: calls.append(_p))

    trainer.train()

    one_iteration = (
        ["batch_process", "pre_steps_log", "pre_optim_steps", "pre_epoch"]
        + PER_STEP * 2
        + ["post_epoch", "post_steps", "post_steps_log"]
    )
    assert calls == one_iteration * 2
    assert trainer.collected_frames == 2 * frames_per_batch * 3
    assert trainer._optim_count == 4
    assert trainer.iteration == 2
    assert collector.batches_yielded == 2
    assert collector.shutdown_calls == 1


def test_optimizer_steps_change_parameters(collector, loss_module):
    before = loss_module.net.weight.detach().clone()
    trainer = make_trainer(
        collector,
        loss_module,
        total_frames=16,
        optim_steps_per_batch=3,
        optimizer=torch.optim.SGD(loss_module.parameters(), lr=0.1),
    )
    trainer.train()
    assert loss_module.calls == 3
    assert not torch.equal(before, loss_module.net.weight)


def test_stops_at_total_frames_when_not_a_multiple(collector, loss_module):
    trainer = make_trainer(collector, loss_module, total_frames=40, optim_steps_per_batch=0)
    trainer.train()
    assert trainer.collected_frames == 48  # 3 batches of 16 frames
    assert collector.batches_yielded == 3
    assert loss_module.calls == 0


def test_finish_ends_training_after_the_batch_as_complete(collector, loss_module, tmp_path):
    ckpt = tmp_path / "trainer.pt"
    trainer = make_trainer(collector, loss_module, save_trainer_file=ckpt, optim_steps_per_batch=0)

    def finish_on_the_second_batch():
        if trainer.collected_frames >= 32:
            trainer.finish("target reached")

    trainer.register_op("post_steps", finish_on_the_second_batch)
    trainer.train()
    assert collector.batches_yielded == 2 and trainer.collected_frames == 32
    assert trainer.finished_early == "target reached" and trainer.interrupted is None
    restored = make_trainer(collector, loss_module)
    restored.load_from_file(ckpt)
    assert restored.collected_frames == 32


def test_shutdown_on_keyboard_interrupt(collector, loss_module):
    trainer = make_trainer(collector, loss_module)

    def boom():
        raise KeyboardInterrupt

    trainer.register_op("post_steps", boom)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert collector.shutdown_calls == 1


def test_batch_process_can_replace_the_batch(collector, loss_module):
    seen = []
    trainer = make_trainer(collector, loss_module, total_frames=16, optim_steps_per_batch=1)
    trainer.register_op("batch_process", lambda b: b.select("observation", ("next", "reward")))
    trainer.register_op("batch_process", lambda b: seen.append(sorted(b.keys())))
    trainer.register_op("process_optim_batch", lambda b: b[0])
    trainer.register_op("post_loss", lambda b: seen.append(tuple(b.shape)))
    trainer.train()
    assert seen == [["next", "observation"], (collector.T,)]


def test_register_op_errors_and_filters(collector, loss_module):
    trainer = make_trainer(collector, loss_module, total_frames=16 * 6, optim_steps_per_batch=0)
    with pytest.raises(ValueError, match="valid points are .*batch_process.*post_steps_log"):
        trainer.register_op("post_step", print)
    with pytest.raises(TypeError, match="callable"):
        trainer.register_op("post_steps", 3)
    counts = {"every": 0, "kw": []}

    def every_op():
        counts["every"] += 1

    trainer.register_op("post_steps", every_op, every=3)
    trainer.register_op("post_steps", lambda scale: counts["kw"].append(scale), scale=2)
    trainer.train()
    assert counts["every"] == 2
    assert counts["kw"] == [2] * 6


def test_register_module_both_orders_and_duplicates(collector, loss_module):
    trainer = make_trainer(collector, loss_module)
    a, b = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    trainer.register_module("a", a)
    trainer.register_module(b, "b")
    assert trainer._modules["a"] is a and trainer._modules["b"] is b
    with pytest.raises(ValueError, match="already registered"):
        trainer.register_module("a", b)
    with pytest.raises(TypeError, match="state_dict"):
        trainer.register_module("c", object())


@pytest.mark.parametrize(
    "kw",
    [{"total_frames": 0}, {"frame_skip": 0}, {"log_interval": -1}, {"optim_steps_per_batch": 1.5}],
)
def test_constructor_validation(collector, loss_module, kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        make_trainer(collector, loss_module, **kw)


@pytest.mark.parametrize("clip_norm", ["1.0", True, 0, -1.0])
def test_clip_norm_must_be_a_positive_number(collector, loss_module, clip_norm):
    with pytest.raises(
        ValueError, match=f"clip_norm must be None or a positive number, got {clip_norm!r}"
    ):
        make_trainer(collector, loss_module, clip_norm=clip_norm)


def test_an_env_given_as_the_collector_is_refused_naming_the_collector_to_wrap_it_in(loss_module):
    from rl_trainers.envs import GymEnv

    env = GymEnv("CartPole-v1")
    with pytest.raises(
        TypeError, match=r"collector is an environment \(GymEnv\).*SyncDataCollector\(env, policy"
    ):
        make_trainer(env, loss_module)
    with pytest.raises(TypeError, match="collector must be an iterable of TensorDict batches"):
        make_trainer(None, loss_module)


def test_log_interval_logs_when_a_multiple_is_crossed(collector, loss_module, logger):
    # 16 frames per batch, interval 40: counts 16, 32, 48*, 64, 80*, 96, 112, 128* (crossings)
    trainer = make_trainer(
        collector,
        loss_module,
        total_frames=128,
        log_interval=40,
        logger=logger,
        optim_steps_per_batch=2,
        optimizer=torch.optim.SGD(loss_module.parameters(), lr=0.01),
    )
    LogScalar().register(trainer)
    trainer.train()
    assert [s for s, _ in logger.values("r_training")] == [48, 80, 128]
    assert [s for s, _ in logger.values("r_training_std")] == [48, 80, 128]
    assert [s for s, _ in logger.values("loss_value")] == [48, 80, 128]
    assert logger.values("optim_steps") == [(48, 6), (80, 10), (128, 16)]
    assert all(isinstance(v, float) for _, v, _ in logger.records)


def test_loss_logged_is_the_mean_over_optim_steps(collector, loss_module, logger):
    values = iter([1.0, 2.0, 6.0])

    def loss(td):
        return TensorDict(loss_a=torch.tensor(next(values), requires_grad=True))

    trainer = make_trainer(
        collector, loss, total_frames=16, log_interval=16, logger=logger, optim_steps_per_batch=3
    )
    trainer.train()
    assert logger.values("loss_a") == [(16, pytest.approx(3.0))]


def test_an_entry_written_on_some_steps_is_the_mean_over_those_steps(
    collector, loss_module, logger
):
    """TD3's actor loss exists on every policy_delay-th step only: its logged value is the
    mean over the steps that wrote it, not diluted by the others."""
    values = iter([1.0, 2.0, 6.0])
    step = iter(range(3))

    def loss(td):
        out = TensorDict(loss_a=torch.tensor(next(values), requires_grad=True))
        if next(step) != 1:
            out["extra"] = torch.tensor(4.0)
        return out

    trainer = make_trainer(
        collector, loss, total_frames=16, log_interval=16, logger=logger, optim_steps_per_batch=3
    )
    trainer.train()
    assert logger.values("loss_a") == [(16, pytest.approx(3.0))]
    assert logger.values("extra") == [(16, pytest.approx(4.0))]


def test_progress_bar_shows_log_pbar_values(collector, loss_module, capsys):
    trainer = make_trainer(
        collector, loss_module, total_frames=32, optim_steps_per_batch=0, progress_bar=True
    )
    LogScalar(logname="r_train", log_pbar=True, include_std=False).register(trainer)
    trainer.train()
    err = capsys.readouterr().err
    assert "r_train=" in err and "frames" in err


def test_seed_sets_collector_seed_and_rngs(collector, loss_module):
    make_trainer(collector, loss_module, seed=7)
    a = torch.rand(3)
    make_trainer(collector, loss_module, seed=7)
    assert torch.equal(a, torch.rand(3))
    assert collector.seed == 7


def test_seed_000_logging_hook_example_runs(collector, loss_module, logger, tmp_path):
    class LoggingHook(TrainerHookBase):
        def __init__(self):
            self.counter = 0

        def register(self, trainer, name):
            trainer.register_module(self, "logging_hook")
            trainer.register_op("post_optim_log", self)

        def save_dict(self):
            return {"counter": self.counter}

        def load_state_dict(self, state_dict):
            self.counter = state_dict["counter"]

        def __call__(self, batch):
            if self.counter % 10 == 0:
                self.counter += 1
                out = {"some_value": batch["some_value"].item(), "log_pbar": False}
            else:
                out = None
            self.counter += 1
            return out

    trainer = make_trainer(
        collector,
        loss_module,
        total_frames=32,
        optim_steps_per_batch=10,
        log_interval=16,
        logger=logger,
        save_trainer_file=tmp_path / "ckpt.pt",
    )
    trainer.register_op("process_optim_batch", lambda b: b[0, 0].set("some_value", 5.0 * 1))
    hook = LoggingHook()
    hook.register(trainer, "logging_hook")
    trainer.train()
    # counter: call 1 -> 0 logs (counter 2); calls with counter 10, 20 log again; the two
    # values returned while step 16 is logged give one point (a key is logged once per step)
    assert logger.values("some_value") == [(16, 5.0), (32, 5.0)]
    assert hook.counter == 23
    assert trainer.state_dict()["modules"]["logging_hook"] == {"counter": 23}
    hook.counter = 0
    trainer.load_from_file()
    assert hook.counter == 23


def test_diagnostics_only_on_logged_batches(collector, loss_module, logger):
    """The loss computes its diagnostics for the batches whose losses are logged, and only those."""

    class Loss(torch.nn.Module):
        diagnostics = True

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))
            self.seen: list[bool] = []

        def forward(self, td):
            self.seen.append(self.diagnostics)
            out = {"loss_a": self.w * 2}
            if self.diagnostics:
                out["entropy"] = torch.tensor(0.5)
            return TensorDict(out)

    loss = Loss()
    # 16 frames per batch, interval 40: losses of batches 3, 5 and 8 are logged
    trainer = make_trainer(
        collector, loss, total_frames=128, log_interval=40, logger=logger, optim_steps_per_batch=2
    )
    trainer.train()
    logged_batches = {3, 5, 8}
    assert loss.seen == [b in logged_batches for b in range(1, 9) for _ in range(2)]
    assert [s for s, _ in logger.values("entropy")] == [48, 80, 128]
    assert loss.diagnostics is True  # restored after training


# --------------------------------------------------------------------------- torchrl's loop
def test_no_optimisation_during_the_random_warm_up(collector, loss_module):
    """As torchrl's loop: optimisation starts once more frames than the collector's
    ``init_random_frames`` were counted (16 frames per batch here)."""
    collector.init_random_frames = 32
    calls: list[int] = []
    trainer = make_trainer(collector, loss_module, total_frames=64, optim_steps_per_batch=1)
    trainer.register_op("pre_optim_steps", lambda: calls.append(trainer.collected_frames))
    trainer.train()
    assert calls == [48, 64]
    assert loss_module.calls == 2


def test_optimizer_ops_get_torchrl_arguments_and_may_replace_losses(collector, loss_module):
    """An "optimizer" op written for torchrl's loop is called as ``op(losses,
    clip_grad_norm, clip_norm, index)``; a one-argument op still gets the losses only."""
    seen: list[tuple] = []

    def torchrl_style(losses_td, clip_grad_norm, clip_norm, index):
        seen.append((clip_grad_norm, clip_norm, index))
        return losses_td.set("marker", torch.tensor(1.0))

    def one_arg(losses):
        seen.append(("one", sorted(losses.keys())))

    trainer = make_trainer(
        collector, loss_module, total_frames=16, optim_steps_per_batch=1, clip_norm=2.0
    )
    trainer.register_op("optimizer", torchrl_style)
    trainer.register_op("optimizer", one_arg)
    trainer.train()
    assert seen == [(True, 2.0, 0), ("one", ["abs_error", "loss_value", "marker"])]


def test_optimizer_hook_placed_with_register_op_clips(collector, loss_module):
    """torchrl's docs place an OptimizerHook with ``register_op``: the trainer's clipping
    settings must apply then too (an SGD step of lr 1 moves each weight by at most the
    clipped gradient)."""
    from rl_trainers.hooks import OptimizerHook

    before = [p.detach().clone() for p in loss_module.parameters()]
    optimizer = torch.optim.SGD(loss_module.parameters(), lr=1.0)
    trainer = make_trainer(
        collector, loss_module, total_frames=16, optim_steps_per_batch=1, clip_norm=1e-3
    )
    trainer.register_op("optimizer", OptimizerHook(optimizer))
    trainer.train()
    moved = torch.cat(
        [(p.detach() - b).flatten() for p, b in zip(loss_module.parameters(), before)]
    )
    assert 0 < moved.norm() <= 1e-3 * (1 + 1e-4)


def test_optim_steps_per_batch_none_takes_the_number_of_workers(collector, loss_module):
    trainer = make_trainer(collector, loss_module, optim_steps_per_batch=None)
    assert trainer.optim_steps_per_batch == 1
    collector.num_workers = 3
    trainer = make_trainer(collector, loss_module, optim_steps_per_batch=None)
    assert trainer.optim_steps_per_batch == 3


def test_csv_logs_are_on_disk_when_train_returns(collector, loss_module, tmp_path):
    """torchrl's tutorial reads the CSV files right after ``trainer.train()``."""
    from rl_trainers.hooks import LogScalar
    from rl_trainers.record.loggers import CSVLogger

    logger = CSVLogger("exp", log_dir=str(tmp_path))
    trainer = make_trainer(
        collector,
        loss_module,
        total_frames=32,
        optim_steps_per_batch=1,
        logger=logger,
        log_interval=16,
    )
    LogScalar().register(trainer)
    trainer.train()
    files = list(tmp_path.rglob("r_training.csv"))
    assert files and files[0].read_text().strip().count("\n") >= 1


def test_stop_on_signal_ends_train_after_the_batch_a_sigint_arrives_in(collector, loss_module):
    """torchrl's ``with trainer.stop_on_signal(): trainer.train()``, even for a trainer
    built with ``handle_signals=False``."""
    trainer = make_trainer(collector, loss_module, optim_steps_per_batch=0, handle_signals=False)

    def interrupt_on_the_second_batch():
        if trainer.collected_frames == 32:
            os.kill(os.getpid(), signal.SIGINT)

    trainer.register_op("post_steps", interrupt_on_the_second_batch)
    with trainer.stop_on_signal():
        trainer.train()
    assert trainer.interrupted == "SIGINT" and collector.batches_yielded == 2
    assert trainer.handle_signals is False


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ({"obs_mean": torch.zeros(4)}, r"returned a Tensor of shape \(4,\) for 'obs_mean'"),
        ({"note": "hello"}, r"returned str 'hello' for 'note'"),
        ({"none": None}, r"returned NoneType None for 'none'"),
        (0.5, r"returned a float; a logging hook returns a dict of scalars"),
    ],
)
def test_a_logging_hook_returning_a_non_scalar_fails_at_its_first_call(
    collector, loss_module, logger, returned, expected
):
    """Refused when the hook returns it, not log_interval frames later at the first logged
    step, and the message names the hook point, the hook and the key."""
    calls = []

    def bad_stats(batch):
        calls.append(1)
        return returned

    trainer = make_trainer(collector, loss_module, total_frames=160, log_interval=10_000,
                           logger=logger, optim_steps_per_batch=0)  # fmt: skip
    trainer.register_op("pre_steps_log", bad_stats)
    with pytest.raises(TypeError, match=f"bad_stats at 'pre_steps_log' {expected}"):
        trainer.train()
    assert len(calls) == 1


def test_logging_hooks_may_return_numbers_and_one_element_tensors(collector, loss_module, logger):
    import numpy as np

    trainer = make_trainer(collector, loss_module, total_frames=32, log_interval=16,
                           logger=logger, optim_steps_per_batch=0)  # fmt: skip
    values = {"i": 1, "f": 0.5, "t": torch.ones(1, 1), "n": np.float32(2), "a": np.ones(())}
    trainer.register_op("post_steps_log", lambda batch: {**values, "log_pbar": True})
    trainer.train()
    assert {key: logger.values(key)[-1][1] for key in values} == {
        "i": 1, "f": 0.5, "t": 1.0, "n": 2.0, "a": 1.0
    }  # fmt: skip


@pytest.mark.parametrize("point", ["batch_process", "pre_epoch", "process_optim_batch"])
def test_a_data_hook_returning_a_dict_is_refused(collector, loss_module, point):
    """A dict meant to replace the batch was dropped without a word."""
    trainer = make_trainer(collector, loss_module, total_frames=16, optim_steps_per_batch=1)
    trainer.register_op(point, lambda b: {"observation": b["observation"] * 0})
    with pytest.raises(TypeError, match=f"<lambda> at '{point}' returned a dict; to replace"):
        trainer.train()
