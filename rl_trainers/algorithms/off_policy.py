"""OffPolicyTrainer: what SAC and DQN share, learning from a replay buffer.

Every collected frame, warm-up frames included, is written to the replay buffer
(``batch_process``). Once the buffer holds ``learning_starts`` transitions, each batch is
followed by ``utd_ratio * frames_per_batch`` updates (the fractions carried from batch to
batch: 0.5 per batch is one update after every second batch), each on a fresh sample
(``process_optim_batch``), and the target updater steps after every update (``post_optim``).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from omegaconf import DictConfig

from rl_trainers.algorithms.base import AlgorithmTrainer
from rl_trainers.algorithms.build import build
from rl_trainers.configs.validation import updates_through
from rl_trainers.errors import ConfigError
from rl_trainers.hooks import ReplayBufferTrainer, TargetNetUpdaterHook
from rl_trainers.modules.device import module_device


class OffPolicyTrainer(AlgorithmTrainer):
    """An :class:`AlgorithmTrainer` updating from a replay buffer after a warm-up.

    Keyword Args:
        collector: yields batches of transitions.
        total_frames: frames to train for.
        loss_module: the algorithm's loss (with target networks).
        optimizer: optimizer over ``loss_module.parameters()``.
        replay_buffer: the buffer every collected frame is written to.
        target_updater: steps after every update (``SoftUpdate``, ``HardUpdate``...);
            checkpointed when it has a state dict. None: the subclass updates its targets
            itself (TD3, after its delayed actor updates).
        frames_per_batch: frames in each collected batch.
        utd_ratio: updates per collected frame.
        learning_starts: transitions in the buffer before the first update.
        sample_size: transitions per update (None: the buffer's ``batch_size``).
        **kwargs: the :class:`AlgorithmTrainer` arguments (lr_scheduler, eval_env, logger...).
    """

    def __init__(
        self,
        *,
        collector,
        total_frames: int,
        loss_module,
        optimizer: torch.optim.Optimizer | None,
        replay_buffer,
        target_updater,
        frames_per_batch: int = 1,
        utd_ratio: float = 1.0,
        learning_starts: int = 100,
        sample_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        if utd_ratio <= 0:
            raise ConfigError(
                "trainer.utd_ratio", utd_ratio, "a positive number of updates per frame"
            )
        self.utd_ratio = utd_ratio
        super().__init__(
            collector=collector,
            total_frames=total_frames,
            loss_module=loss_module,
            optimizer=optimizer,
            frames_per_batch=frames_per_batch,
            optim_steps_per_batch=0,
            **kwargs,
        )
        self.learning_starts = learning_starts
        self.replay_buffer = replay_buffer
        # samples go where the loss runs (a no-op on the CPU, or for a buffer stored there)
        device = module_device(loss_module, torch.device("cpu"))
        ReplayBufferTrainer(
            replay_buffer,
            sample_size,
            device=None if device.type == "cpu" else device,
            flatten_tensordicts=True,
        ).register(self)
        self.register_op("pre_optim_steps", self._start_learning)
        if target_updater is not None:
            TargetNetUpdaterHook(target_updater).register(self)

    def _start_learning(self) -> None:
        """This batch's updates: ``utd_ratio * frames_per_batch``, fractions carried over
        from batch to batch; none until the buffer holds ``learning_starts`` transitions."""
        if len(self.replay_buffer) < self.learning_starts:
            self.optim_steps_per_batch = 0
            return
        batch = self.iteration + 1  # this one, counted from 1 (a resumed run restores it)
        self.optim_steps_per_batch = updates_through(
            batch, self.utd_ratio, self.frames_per_batch
        ) - updates_through(batch - 1, self.utd_ratio, self.frames_per_batch)


def build_replay_buffer(cfg: DictConfig):
    """The ``replay_buffer`` node; a ``lazy_tensor`` storage lives on ``replay_buffer.device``
    (null: the root ``device``, where the loss samples it)."""
    device = cfg.replay_buffer.get("device") or cfg.device
    return build(cfg, "replay_buffer", device=str(device))


def check_buffer_fits_memory(cfg: DictConfig, env) -> None:
    """A RAM replay buffer of ``replay_buffer.size`` transitions (observation and next
    observation each) must fit in the machine's memory: pixel observations easily do not."""
    if cfg.replay_buffer.get("storage") != "lazy_tensor":
        return
    per_env = env.observation_spec.shape.numel() or 1
    obs_bytes = sum(
        spec.shape.numel() // per_env * spec.dtype.itemsize
        for spec in env.observation_spec.values(True, True)
    )
    needed = 2 * obs_bytes * cfg.replay_buffer.size
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if needed > memory:
        fits = int(memory // (4 * obs_bytes))
        raise ConfigError(
            "replay_buffer.size",
            cfg.replay_buffer.size,
            f"its observations alone need {needed / 2**30:.0f} GiB ({2 * obs_bytes / 1024:.0f} "
            f"KiB per transition) of {memory / 2**30:.0f} GiB of RAM; e.g. "
            f"replay_buffer.size={fits} or replay_buffer.storage=lazy_memmap",
        )
