"""Cost of the Trainer loop and its standard hooks over a bare loop on the same components.

Run: ``python benchmarks/trainer_overhead.py [--repeats 3] [--frames 100000]``

Both sides train the default PPO CartPole recipe (``configs/ppo_trainer.yaml``) from components
built by ``PPOTrainer.from_config`` with the same seed (env, collector, actor, critic, loss with
GAE, fused Adam, linear learning-rate schedule):

* **bare**: a hand-written loop over those components: collect, GAE, flatten, ``num_epochs``
  minibatch steps (the loss's gradients from ``loss.loss_and_grads`` into the parameters'
  flat buffer, grad-norm clip, step), learning-rate and clip-range annealing. It uses the
  same primitives as the Trainer's optimizer hook (``FlatParameters``, ``optimizer_step``)
  and, logging nothing, computes no loss diagnostics, so the difference is the loop and its
  hooks only.
* **trainer**: ``PPOTrainer.train()`` with its standard hooks (minibatch sampler, advantage,
  episode-return and loss logging to the CSV logger, scheduler, clip annealing, progress bar
  off). The end-of-run checkpoint is disabled on this side (the bare loop writes none).

Each repeat builds both sides afresh and times the training loop only, alternating which side
goes first. Prints the median of each side and the overhead ``trainer / bare - 1`` in percent.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir

from rl_trainers.algorithms import build_trainer
from rl_trainers.app import RECIPES_DIR
from rl_trainers.core.flat_params import FlatParameters
from rl_trainers.core.loop import clip_grad_norm_
from rl_trainers.core.optimizer_step import optimizer_step


def build(frames: int):
    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(
            config_name="ppo_trainer",
            overrides=["trainer.progress_bar=false", f"trainer.total_frames={frames}"],
        )
    trainer = build_trainer(cfg, Path(tempfile.mkdtemp(prefix="overhead_")))
    return cfg, trainer


def run_trainer(frames: int) -> float:
    _, trainer = build(frames)
    trainer.save_trainer_file = None
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def run_bare(frames: int) -> float:
    cfg, trainer = build(frames)  # only its components are used
    collector, loss, optimizer = trainer.collector, trainer.loss_module, trainer.optimizer
    scheduler = trainer._modules["lr_scheduler"]
    loop = cfg.trainer
    minibatch, epochs, clip_norm = loop.minibatch_size, loop.num_epochs, loop.clip_norm
    params = [p for g in optimizer.param_groups for p in g["params"]]
    flat_params = FlatParameters(params)  # parameters and gradients in one buffer each
    clip0, total, collected = loss.clip_epsilon, loop.total_frames, 0
    loss.diagnostics = False
    start = time.perf_counter()
    for batch in collector:
        collected += batch.numel()
        with torch.no_grad():
            loss.value_estimator(batch)
        flat = batch.select(*loss.in_keys).reshape(-1)
        n = flat.numel()
        for _ in range(epochs):
            order = torch.arange(n) if minibatch == n else torch.randperm(n)
            for i in range(0, n - minibatch + 1, minibatch):
                sub = flat if minibatch == n else flat[order[i : i + minibatch]]
                # the gradients of the summed loss terms, written into the flat buffer
                if loss.loss_and_grads(sub) is not None:
                    flat_params.clip_grad_norm_(clip_norm)
                    optimizer_step(optimizer, flat_params)
                    continue
                out = loss(sub)  # a loss without loss_and_grads: autograd
                total_loss = out["loss_objective"] + out["loss_critic"]
                if "loss_entropy" in out.keys():
                    total_loss = total_loss + out["loss_entropy"]
                for p in params:
                    p.grad = None
                total_loss.backward()
                clip_grad_norm_(params, clip_norm)
                optimizer_step(optimizer)
                flat_params.attach_grads()
        scheduler.step()
        loss.clip_epsilon = clip0 * max(1.0 - collected / total, 0.0)
    elapsed = time.perf_counter() - start
    collector.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frames", type=int, default=100_000)
    args = parser.parse_args()
    bare: list[float] = []
    trainer: list[float] = []
    for i in range(args.repeats):
        order = [("bare", run_bare, bare), ("trainer", run_trainer, trainer)]
        if i % 2:
            order.reverse()
        for name, fn, times in order:
            times.append(fn(args.frames))
            print(f"repeat {i} {name:8} {times[-1]:.2f}s", flush=True)
    b, t = statistics.median(bare), statistics.median(trainer)
    print(f"bare median {b:.2f}s  trainer median {t:.2f}s  threads {torch.get_num_threads()}")
    print(f"overhead {100 * (t / b - 1):.1f}%")


if __name__ == "__main__":
    main()
