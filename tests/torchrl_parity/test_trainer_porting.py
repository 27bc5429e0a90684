"""Trainer and hook behaviour a torchrl script relies on after changing the import prefix."""

from __future__ import annotations

import argparse

import pytest
import torch
from tensordict import TensorDict

from rl_trainers.trainers import LogValidationReward, OptimizerHook, Trainer


def _trainer(collector, loss_module, **kw):
    return Trainer(
        collector=collector,
        total_frames=kw.pop("total_frames", 32),
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss_module,
        progress_bar=False,
        **kw,
    )


def test_trainer_shutdown_shuts_the_collector_down(collector, loss_module):
    """torchrl scripts call ``trainer.shutdown()`` after (or instead of) training."""
    trainer = _trainer(collector, loss_module)
    trainer.shutdown()
    assert collector.shutdown_calls == 1
    trainer.train()  # train() ends with the same shutdown
    assert collector.shutdown_calls == 2


def test_optimizer_hook_rejects_empty_loss_components(loss_module):
    """An empty list of loss components raises at construction, as torchrl's does."""
    optim = torch.optim.SGD(loss_module.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="empty loss_components; pass None"):
        OptimizerHook(optim, [])
    assert OptimizerHook(optim, ["loss_value"]).loss_components == ["loss_value"]


class _Recorder:
    """A recorder transform: counts ``dump`` calls and the suffixes it gets."""

    def __init__(self):
        self.suffixes = []

    def dump(self, suffix=None):
        self.suffixes.append(suffix)


class _Compose:
    def __init__(self, *transforms):
        self.transforms = list(transforms)


class _Env:
    """An env whose transform is a Compose holding a recorder (``env.append_transform``)."""

    def __init__(self, transform, base_env=None):
        self.transform = transform
        self.base_env = base_env

    def rollout(self, max_steps, policy=None, auto_reset=True, break_when_any_done=True):
        td = TensorDict({"observation": torch.zeros(max_steps, 1)}, [max_steps])
        td.set(("next", "reward"), torch.ones(max_steps, 1))
        td.set(("next", "done"), torch.zeros(max_steps, 1, dtype=torch.bool))
        return td


def test_log_validation_reward_dumps_recorders_with_the_video_suffix():
    """torchrl: ``environment.transform.dump(suffix=suffix)``; suffix names the video only."""
    inner, outer = _Recorder(), _Recorder()
    base = _Env(_Compose(inner, outer))  # a nested env's transforms; outer is shared
    env = _Env(_Compose(object(), outer), base_env=base)
    hook = LogValidationReward(
        record_interval=1,
        record_frames=5,
        policy_exploration=lambda td: td,
        environment=env,
        suffix="exploration",
    )
    out = hook()
    assert outer.suffixes == ["exploration"] and inner.suffixes == ["exploration"]
    assert out["r_evaluation"] == 1.0 and out["total_r_evaluation"] == 5.0
    assert "eval/num_episodes_exploration" in out  # rl_trainers' extra stats keep it apart
    LogValidationReward(
        record_interval=1, record_frames=5, policy_exploration=lambda td: td, environment=env
    )()
    assert outer.suffixes == ["exploration", None]


def test_log_validation_reward_video_suffix_with_a_real_video_recorder(tmp_path):
    from rl_trainers.envs import Compose, TransformedEnv
    from rl_trainers.envs.libs.gym import GymEnv
    from rl_trainers.envs.transforms import StepCounter
    from rl_trainers.record import VideoRecorder
    from rl_trainers.record.loggers.csv import CSVLogger

    logger = CSVLogger("exp", log_dir=str(tmp_path))
    env = TransformedEnv(
        GymEnv("Pendulum-v1", from_pixels=True, pixels_only=False),
        Compose(StepCounter(), VideoRecorder(logger, tag="eval", skip=1)),
    )
    try:
        hook = LogValidationReward(
            record_interval=1,
            record_frames=3,
            policy_exploration=lambda td: td.set("action", torch.zeros(*td.batch_size, 1)),
            environment=env,
            suffix="det",
        )
        hook()
    finally:
        env.close()
    videos = sorted(p.name for p in (tmp_path / "exp" / "videos").iterdir())
    assert videos == ["eval_det_0.pt"]
    assert torch.load(tmp_path / "exp" / "videos" / videos[0]).shape[0] == 4  # reset + 3 steps


def test_make_trainer_logs_the_config_as_hparams(tmp_path):
    """torchrl's ``make_trainer`` calls ``logger.log_hparams(cfg)``."""
    import yaml

    from rl_trainers.record.loggers.csv import CSVLogger
    from rl_trainers.trainers.helpers import make_trainer

    class NoCollector:
        def __iter__(self):
            return iter(())

    cfg = argparse.Namespace(
        frames_per_batch=16, total_frames=64, batch_size=8, lr=1e-3, lr_scheduler=""
    )
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    make_trainer(NoCollector(), torch.nn.Linear(2, 2), logger=logger, cfg=cfg)
    hparams = yaml.safe_load((tmp_path / "exp" / "hparams.yaml").read_text())
    assert hparams["lr"] == 1e-3 and hparams["total_frames"] == 64


def test_two_optimizer_hooks_placed_with_register_op_keep_their_grad_norms(
    collector, fakes, logger
):
    """torchrl's ``trainer.register_op("optimizer", OptimizerHook(opt, [...]))``, twice."""
    from torch import nn

    class TwoLosses(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 1), nn.Linear(3, 1)

        def forward(self, td):
            obs = td["observation"]
            return TensorDict(
                {"loss_a": self.a(obs).pow(2).mean(), "loss_b": (self.b(obs) - 9).pow(2).mean()},
                [],
            )

    torch.manual_seed(0)
    loss = TwoLosses()
    trainer = _trainer(collector, loss, logger=logger, log_interval=16, clip_norm=1e-3)
    for net, key in ((loss.a, "loss_a"), (loss.b, "loss_b")):
        trainer.register_op("optimizer", OptimizerHook(torch.optim.SGD(net.parameters()), [key]))
    trainer.train()
    first, second = logger.values("grad_norm"), logger.values("grad_norm_1")
    assert [s for s, _ in first] == [s for s, _ in second] == [16, 32]
    assert all(b > 2 * a for (_, a), (_, b) in zip(first, second))  # loss_b's larger grads


def test_log_scalar_without_logname_logs_under_the_key(collector):
    """torchrl (0.10+): ``logname=None`` uses the key as the logged name."""
    from rl_trainers.trainers import LogScalar

    batch = collector.make_batch()
    out = LogScalar("action", include_std=False)(batch)
    assert set(out) == {"action", "log_pbar"}
    assert out["action"].item() == pytest.approx(batch["action"].mean().item())
    assert LogScalar(("next", "done"), reduction="max").logname == "next_done"
    assert LogScalar(["next", "done"]).key == ("next", "done")  # a key from a config file
    assert LogScalar().logname == "r_training"  # the reward keeps torchrl's name
    assert LogScalar(("next", "reward"), "r_train", log_pbar=True).logname == "r_train"


def test_load_from_file_accepts_torch_load_keywords(collector, loss_module, fakes, tmp_path):
    """torchrl forwards ``load_from_file(file, **kwargs)`` to ``torch.load``."""
    path = tmp_path / "trainer.pt"
    trainer = _trainer(collector, loss_module, save_trainer_file=path)
    trainer.train()
    other = _trainer(fakes.Collector(), fakes.Loss())
    other.load_from_file(path, map_location="cpu", weights_only=False)
    assert other.collected_frames == 32
    assert torch.equal(other.loss_module.net.weight, loss_module.net.weight)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['strict'\]"):
        other.load_from_file(path, strict=False)


@pytest.mark.parametrize(
    "module, names",
    [
        ("trainers.trainers", ["Trainer", "TrainerHookBase", "LogScalar", "ReplayBufferTrainer"]),
        ("trainers.helpers.collectors", ["make_collector_offpolicy", "sync_sync_collector"]),
        ("trainers.helpers.envs", ["transformed_env_constructor", "correct_for_frame_skip"]),
        ("trainers.helpers.losses", ["make_dqn_loss", "make_target_updater"]),
        ("trainers.helpers.replay_buffer", ["make_replay_buffer"]),
        ("trainers.helpers.trainers", ["make_trainer"]),
    ],
)
def test_torchrl_module_paths_import(module, names):
    """``from torchrl.trainers.trainers import LogScalar`` (also a Hydra ``_target_``) and
    ``from torchrl.trainers.helpers.envs import ...`` port by changing the prefix."""
    import importlib

    import rl_trainers.trainers as trainers
    import rl_trainers.trainers.helpers as helpers

    mod = importlib.import_module(f"rl_trainers.{module}")
    for name in names:
        assert getattr(mod, name) in (getattr(trainers, name, 0), getattr(helpers, name, 0))
    from hydra.utils import instantiate

    hook = instantiate({"_target_": "rl_trainers.trainers.trainers.LogScalar", "key": "action"})
    assert hook.key == "action" and hook.logname == "action"


def test_update_weights_policy_weights_getter(collector):
    """torchrl's ``UpdateWeights(collector, interval, policy_weights_getter=...)``."""
    from rl_trainers.trainers import UpdateWeights

    sent = []
    collector.update_policy_weights_ = lambda weights=None: sent.append(weights)
    hook = UpdateWeights(collector, 2, policy_weights_getter=lambda: {"w": len(sent)})
    for _ in range(4):
        hook()
    assert sent == [{"w": 0}, {"w": 1}]
    UpdateWeights(collector)()  # interval 1 by default (torchrl 0.14)
    assert sent[-1] is None


def test_a_key_is_logged_once_per_step(collector, loss_module, logger):
    """A post_optim_log hook returns a value on every optimisation step; a logged batch
    gives one point per key (the first value, as torchrl's gate), not one per step."""
    calls = []

    def hook(batch):
        calls.append(1)
        return {"calls": float(len(calls))}

    trainer = _trainer(
        collector,
        loss_module,
        optimizer=torch.optim.SGD(loss_module.parameters(), lr=0.1),
        logger=logger,
        log_interval=16,
    )
    trainer.optim_steps_per_batch = 4
    trainer.register_op("post_optim_log", hook)
    trainer.train()
    assert logger.values("calls") == [(16, 1.0), (32, 5.0)]


def test_async_collection_with_reward_and_frame_hooks(loss_module, logger):
    """With async_collection the logging hooks get no collected batch: LogScalar and
    CountFramesLog log nothing instead of failing; UTDRHook and the trainer's own
    utd_ratio give one point per logged step."""
    import threading

    from rl_trainers.trainers import CountFramesLog, LogScalar, UTDRHook

    class Background:
        def __init__(self):
            self.collected_frames, self._stop = 0, threading.Event()

        def start(self):
            def work():
                while not self._stop.is_set():
                    self.collected_frames += 8
                    self._stop.wait(0.001)

            self._thread = threading.Thread(target=work, daemon=True)
            self._thread.start()

        def shutdown(self):
            self._stop.set()
            self._thread.join()

    def loss(td):
        return TensorDict(loss_x=torch.zeros((), requires_grad=True))

    trainer = Trainer(
        collector=Background(),
        total_frames=200,
        frame_skip=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        logger=logger,
        log_interval=50,
        progress_bar=False,
        async_collection=True,
    )
    LogScalar(logname="r_training").register(trainer)
    CountFramesLog().register(trainer)
    UTDRHook(trainer).register(trainer)
    trainer.train()
    steps = [s for s, _ in logger.values("utd_ratio")]
    assert steps and len(steps) == len(set(steps))
    assert logger.values("r_training") == [] and logger.values("n_frames") == []


def test_whole_float_counts_are_accepted(collector, loss_module):
    """``total_frames=1e6`` (a float, common in scripts and configs) works as in torchrl."""
    trainer = _trainer(collector, loss_module, total_frames=64.0, log_interval=1e4)
    assert (trainer.total_frames, trainer.log_interval) == (64, 10_000)
    assert isinstance(trainer.total_frames, int)
    trainer.train()
    assert trainer.collected_frames == 64
    with pytest.raises(ValueError, match="total_frames must be an integer >= 1, got 64.5"):
        _trainer(collector, loss_module, total_frames=64.5)


def test_data_hooks_returning_non_tensordicts_keep_the_batch(collector, loss_module):
    """``register_op("batch_process", rb.extend)``: extend returns indices, which must not
    replace the batch (torchrl replaces it only with a TensorDict)."""
    from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
    from rl_trainers.trainers import LogScalar

    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
    trainer = _trainer(collector, loss_module, optimizer=torch.optim.SGD(loss_module.parameters()))
    trainer.register_op("batch_process", lambda batch: rb.extend(batch.reshape(-1)))
    trainer.register_op("process_optim_batch", lambda batch: rb.sample())
    trainer.register_op("process_optim_batch", lambda batch: batch.numel())  # an int: ignored
    seen = []
    trainer.register_op("post_loss", lambda batch: seen.append(batch.shape))
    LogScalar().register(trainer)
    trainer.train()
    assert len(rb) == 32 and seen == [torch.Size([4])] * 2


@pytest.mark.parametrize("interval, steps", [("batch", 3), ("optim", 6)])
def test_lr_scheduler_hook_skips_the_random_warm_up(collector, loss_module, interval, steps):
    """torchrl 0.14's ``LRSchedulerHook(scheduler, interval)``: no decay before the first
    optimisation step; checkpointed under ``lr_scheduler``."""
    from rl_trainers.trainers import LRSchedulerHook

    collector.init_random_frames = 16  # the first batch (16 frames) is warm-up only
    optim = torch.optim.SGD(loss_module.parameters(), lr=1.0)
    trainer = _trainer(collector, loss_module, total_frames=64, optimizer=optim)
    trainer.optim_steps_per_batch = 2
    scheduler = torch.optim.lr_scheduler.StepLR(optim, step_size=1, gamma=0.5)
    LRSchedulerHook(scheduler, interval=interval).register(trainer)
    trainer.train()
    assert trainer._optim_count == 6
    assert optim.param_groups[0]["lr"] == pytest.approx(0.5**steps)
    assert trainer.state_dict()["modules"]["lr_scheduler"]["scheduler"]["last_epoch"] == steps
    with pytest.raises(ValueError, match="'batch' or 'optim'"):
        LRSchedulerHook(scheduler, interval="epoch")


def test_log_scalar_names_the_next_key_when_the_root_has_none(collector):
    """torchrl's quick example ``LogScalar("reward")``: collected batches hold the reward
    under ``("next", "reward")``; the error says so."""
    from rl_trainers.trainers import LogScalar

    with pytest.raises(KeyError, match=r"LogScalar\(\('next', 'reward'\)\)"):
        LogScalar("reward")(collector.make_batch())
    with pytest.raises(KeyError, match="logname='r_eval'"):
        LogScalar("r_eval")(collector.make_batch())


def test_log_validation_reward_record_frames_are_env_steps():
    """torchrl rolls out ``max_steps=record_frames`` (its helpers divide record_frames by the
    frame skip beforehand with ``correct_for_frame_skip``); frame_skip only scales the mean."""
    steps = []

    class Env:
        def rollout(self, max_steps, policy=None, auto_reset=True, break_when_any_done=True):
            steps.append(max_steps)
            td = TensorDict({"next": {"reward": torch.ones(max_steps, 1)}}, [max_steps])
            td.set(("next", "done"), torch.zeros(max_steps, 1, dtype=torch.bool))
            return td

    out = LogValidationReward(
        record_interval=1,
        record_frames=250,
        frame_skip=4,
        policy_exploration=None,
        environment=Env(),
    )()
    assert steps == [250] and out["r_evaluation"] == 0.25


def test_register_module_with_torchrl_keywords(collector, loss_module):
    """torchrl's signature is ``register_module(module_name, module)``."""
    from rl_trainers.trainers import CountFramesLog

    trainer = _trainer(collector, loss_module)
    hook = CountFramesLog()
    trainer.register_module(module_name="frames", module=hook)
    assert trainer.state_dict()["modules"]["frames"] == {"frame_count": 0}


def test_steps_logged_again_after_rolling_back_to_a_checkpoint(fakes, tmp_path):
    """Loading an earlier checkpoint into the same trainer and training on logs the
    re-run steps (the once-per-step rule does not hide them)."""
    from rl_trainers.trainers import LogScalar

    logger = fakes.Logger()
    trainer = _trainer(
        fakes.Collector(), fakes.Loss(), logger=logger, log_interval=16, total_frames=48
    )
    LogScalar().register(trainer)
    trainer.save_trainer_file = tmp_path / "ckpt.pt"
    trainer.train()  # 16, 32, 48
    state_at_48 = tmp_path / "at_48.pt"
    state_at_48.write_bytes((tmp_path / "ckpt.pt").read_bytes())
    trainer.total_frames = 64
    trainer.collector = fakes.Collector()
    trainer.train()  # 64
    trainer.load_from_file(state_at_48)
    trainer.collector = fakes.Collector()
    trainer.train()  # 64 again
    steps = [s for s, _ in logger.values("r_training")]
    assert steps == [16, 32, 48, 64, 64]
