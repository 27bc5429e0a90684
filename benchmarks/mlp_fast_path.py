"""Fused MLP forward+backward against the layer-by-layer ``nn.Sequential`` path.

Run: ``python benchmarks/mlp_fast_path.py [--repeats 7] [--no-ppo]``

Part 1, one thread: median microseconds of one forward+backward (sum of the outputs, all
parameter gradients) for the PPO CartPole actor ([256, 4] -> 64 -> 64 -> 2, tanh) and a SAC
Pendulum-sized network ([256, 4] -> 256 -> 256 -> 1, ReLU), fused path against plain path,
alternating blocks of calls in one process.

Part 2: median milliseconds of one PPO minibatch update (loss, backward, grad-norm clip, Adam
step) of the default recipe (``configs/ppo_trainer.yaml``), ``fast.FUSE_MLP`` on against off,
alternating blocks, with the trainer's own thread setting.

Part 3: the same for one SAC update of the default Pendulum recipe (``trainer.optim_steps`` on a
buffer of 1000 frames). The actor is an ``MLP`` call there; the twin critics are a
``CriticEnsemble`` of stacked parameters, whose fused node (the fused MLP maths copy by copy,
``objectives/ensemble.py``) the same flag switches on and off. Then, with the fused nodes on,
SAC's loss op by op around them against its two one-node paths (``fast.SAC_ONE_NODE``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from rl_trainers import fast
from rl_trainers.modules import MLP


def _block(fn: Callable[[], None], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def compare(fns: dict[str, Callable[[], None]], n: int, repeats: int) -> dict[str, float]:
    """Median seconds per call of each function, timed in alternating blocks of ``n`` calls."""
    for fn in fns.values():
        _block(fn, max(n // 5, 1))  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(repeats):
        names = list(fns) if i % 2 == 0 else list(fns)[::-1]
        for name in names:
            times[name].append(_block(fns[name], n))
    return {name: statistics.median(t) for name, t in times.items()}


def mlp_step(mlp: MLP, x: torch.Tensor, fused: bool) -> Callable[[], None]:
    params = list(mlp.parameters())

    def step() -> None:
        for p in params:
            p.grad = None
        out = mlp(x) if fused else nn.Sequential.forward(mlp, x)
        out.sum().backward()

    return step


def micro(repeats: int) -> None:
    torch.set_num_threads(1)
    cases = {
        "[256,4]->64->64->2 tanh": (MLP(4, 2, num_cells=[64, 64], activation_class=nn.Tanh), 4),
        "[256,4]->256->256->1 relu": (MLP(4, 1, num_cells=[256, 256], activation_class=nn.ReLU), 4),
    }
    print("forward+backward, 1 thread, median us per call")
    for name, (mlp, n_in) in cases.items():
        x = torch.randn(256, n_in)
        res = compare(
            {"plain": mlp_step(mlp, x, False), "fused": mlp_step(mlp, x, True)}, 200, 3 * repeats
        )
        plain, fused = res["plain"] * 1e6, res["fused"] * 1e6
        print(f"  {name:28} plain {plain:7.1f}  fused {fused:7.1f}  speed-up {plain / fused:.2f}x")


def ppo_update(repeats: int) -> None:
    from hydra import compose, initialize_config_dir

    from rl_trainers.algorithms import build_trainer
    from rl_trainers.app import RECIPES_DIR

    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=["trainer.progress_bar=false"])
    trainer = build_trainer(cfg, Path(tempfile.mkdtemp(prefix="mlp_fast_path_")))
    loss, optimizer = trainer.loss_module, trainer.optimizer
    params = [p for g in optimizer.param_groups for p in g["params"]]
    batch = next(iter(trainer.collector))
    with torch.no_grad():
        loss.value_estimator(batch)
    flat = batch.select(*loss.in_keys).reshape(-1)
    sub = flat[: cfg.trainer.minibatch_size]

    def update() -> None:
        out = loss(sub)
        total = out["loss_objective"] + out["loss_critic"]
        optimizer.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.trainer.clip_norm)
        optimizer.step()

    label = f"PPO update (minibatch {sub.numel()}, {torch.get_num_threads()} threads)"
    try:
        switch_ab(label, update, 100, repeats, fast, "FUSE_MLP")
    finally:
        trainer.collector.shutdown()


def sac_update_fn(overrides: list[str] | None = None):
    """``(update, trainer)``: one SAC update of the default Pendulum recipe on a replay buffer
    filled with 1000 frames as the trainer fills it."""
    from hydra import compose, initialize_config_dir

    from rl_trainers.algorithms import build_trainer
    from rl_trainers.app import RECIPES_DIR

    with initialize_config_dir(config_dir=RECIPES_DIR, version_base=None):
        cfg = compose(
            config_name="sac_trainer", overrides=["trainer.progress_bar=false", *(overrides or [])]
        )
    trainer = build_trainer(cfg, Path(tempfile.mkdtemp(prefix="sac_update_")))
    collector = iter(trainer.collector)
    for _ in range(1000):
        batch = next(collector)
        for op in trainer._ops["batch_process"]:
            op(batch)
    trainer.optim_steps_per_batch = 1
    return (lambda: trainer.optim_steps(batch)), trainer


def sac_update(repeats: int) -> None:
    update, trainer = sac_update_fn()
    label = f"SAC update (batch 256, {torch.get_num_threads()} threads)"
    try:
        switch_ab(label, update, 30, repeats, fast, "FUSE_MLP")
        names = ("loss op by op", "one node per path")
        switch_ab(label, update, 30, repeats, fast, "SAC_ONE_NODE", names)
    finally:
        trainer.collector.shutdown()


def switch_ab(label, update, number, repeats, module, flag, names=("plain", "fused")):
    """Time ``update`` with the switch ``module.<flag>`` off and on (alternating blocks), print
    the median milliseconds of each and leave the switch on."""

    def with_switch(value: bool) -> Callable[[], None]:
        def run() -> None:
            setattr(module, flag, value)
            update()

        return run

    off, on = names
    try:
        res = compare({off: with_switch(False), on: with_switch(True)}, number, 3 * repeats)
    finally:
        setattr(module, flag, True)
    t_off, t_on = res[off] * 1e3, res[on] * 1e3
    print(f"{label}, median ms")
    print(f"  {off} {t_off:.3f}  {on} {t_on:.3f}  speed-up {t_off / t_on:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-ppo", action="store_true", help="skip the PPO update timing")
    parser.add_argument("--no-sac", action="store_true", help="skip the SAC update timing")
    args = parser.parse_args()
    micro(args.repeats)
    if not args.no_ppo:
        ppo_update(args.repeats)
    if not args.no_sac:
        sac_update(args.repeats)


if __name__ == "__main__":
    main()
