"""``Trainer(num_epochs=)``: passes over each batch between ``pre_epoch``/``post_epoch``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from trainer_fakes import Collector, Loss, MemLogger, make_trainer

from rl_trainers.core import HOOK_POINTS, HookPoint


def test_epoch_points_fire_around_each_pass():
    calls: list[str] = []
    trainer = make_trainer([0.0, 0.0], num_epochs=3, optim_steps_per_batch=2)
    for point in ("pre_optim_steps", "pre_epoch", "process_optim_batch", "post_epoch"):
        trainer.register_op(point, lambda *a, _p=point: calls.append(_p))
    trainer.train()
    one_epoch = ["pre_epoch", "process_optim_batch", "process_optim_batch", "post_epoch"]
    assert calls == (["pre_optim_steps"] + one_epoch * 3) * 2
    assert trainer._optim_count == 2 * 3 * 2
    assert HookPoint.PRE_EPOCH == "pre_epoch" and "post_epoch" in HOOK_POINTS


def test_pre_epoch_returns_the_batch_the_epoch_uses():
    seen: list[float] = []
    trainer = make_trainer([0.0], num_epochs=2, optim_steps_per_batch=1)
    epoch = iter([10.0, 20.0])

    def relabel(batch):
        out = batch.clone()
        out["next", "reward"] = torch.full_like(out["next", "reward"], next(epoch))
        return out

    trainer.register_op("pre_epoch", relabel)
    trainer.register_op(
        "process_optim_batch", lambda b: seen.append(b["next", "reward"][0, 0, 0].item())
    )
    trainer.train()
    assert seen == [10.0, 20.0]


class CountingLoss(Loss):
    """loss_value = 1, 2, 3... on successive calls (plus 0 * a parameter for the graph)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, td):
        self.calls += 1
        return TensorDict({"loss_value": self.net.bias.sum() * 0 + self.calls}, batch_size=[])


def test_logged_losses_average_every_step_of_every_epoch():
    logger = MemLogger()
    trainer = make_trainer(
        [0.0],
        loss_module=CountingLoss(),
        num_epochs=3,
        optim_steps_per_batch=2,
        logger=logger,
        log_interval=1,
    )
    trainer.train()
    # six steps with losses 1..6: mean 3.5; optim_steps counts all of them
    assert logger.values("loss_value") == [(8, pytest.approx(3.5))]
    assert logger.values("optim_steps") == [(8, 6)]


def test_stop_iteration_in_process_optim_batch_ends_the_epoch():
    logger = MemLogger()
    trainer = make_trainer(
        [0.0],
        loss_module=CountingLoss(),
        num_epochs=2,
        optim_steps_per_batch=5,
        logger=logger,
        log_interval=1,
    )
    calls = {"n": 0}

    def three_per_epoch(batch):
        calls["n"] += 1
        if calls["n"] % 4 == 0:  # the 4th draw of each epoch finds the iterator exhausted
            raise StopIteration
        return batch

    trainer.register_op("process_optim_batch", three_per_epoch)
    trainer.train()
    assert trainer._optim_count == 6
    assert trainer.loss_module.calls == 6
    assert logger.values("loss_value") == [(8, pytest.approx(3.5))]  # mean of 1..6


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_num_epochs_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="num_epochs must be an integer >= 1"):
        make_trainer([0.0], num_epochs=bad)


def test_one_epoch_is_the_default_loop():
    trainer = make_trainer([0.0, 0.0], optim_steps_per_batch=3)
    assert trainer.num_epochs == 1
    trainer.train()
    assert trainer._optim_count == 6
    assert isinstance(Collector().rewards, list)


class WarmUpCollector(Collector):
    init_random_frames = 16  # two batches of 8 frames without optimisation


@pytest.mark.parametrize("placement", ["register", "register_op"])
def test_lr_scheduler_skips_the_warm_up_and_steps_per_epoch_step(placement):
    from rl_trainers.hooks import LRSchedulerHook

    trainer = make_trainer(
        collector=WarmUpCollector([0.0] * 4), num_epochs=2, optim_steps_per_batch=3
    )
    scheduler = torch.optim.lr_scheduler.StepLR(trainer.optimizer, step_size=1, gamma=0.5)
    batch_hook = LRSchedulerHook(scheduler)
    if placement == "register":
        batch_hook.register(trainer)
    else:  # torchrl's docstring form
        trainer.register_op("post_steps", batch_hook)
    trainer.train()
    # batches 3 and 4 optimise (frames 24 and 32 > 16): two scheduler steps, not four
    assert trainer._optim_count == 2 * 2 * 3
    assert scheduler.last_epoch == 2
