"""Wall milliseconds per SAC update, rl_trainers against SB3, in one process, and the part of
it that no implementation of the same update can avoid.

Run: ``python benchmarks/sac_update.py [--threads 2] [--blocks 4]``

Both sides fill their replay buffer with 1000 Pendulum frames, then run alternating blocks of
100 updates (batch 256, 256x256 nets, the default recipes). A third contender, ``products
alone``, replays the big matrix products one of our updates issues (every ``[m, k] @ [k, n]``
product with ``m, k, n >= 128``: the 256-wide layers' forward, weight-gradient and
input-gradient products over the batch; the narrow first and last layers left out), on copies of their
operands, with the same GEMM backend and thread count, and nothing else. SB3 computes at
least as many such products per update (the same networks, plus the critics' weight
gradients in its actor loss), so ``products alone / SB3`` is a lower bound on any
rl_trainers/SB3 update ratio on this machine.

Prints the medians and the two ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from mlp_fast_path import sac_update_fn

from rl_trainers.fast import gemm


def _big(m: int, k: int, n: int) -> bool:
    return min(m, k, n) >= 128


def _copy(tensor):
    return None if tensor is None else tensor.clone()  # clone keeps a transposed view's strides


def record_big_products(update) -> list:
    """The ``[m, k] @ [k, n]`` products with ``m, k, n >= 128`` that one ``update()`` computes
    through :mod:`rl_trainers.fast.gemm`, as ``(bias, a, b, relu)`` with copies of the
    operands (``a @ b`` plus ``bias`` or None, then ReLU if ``relu``), in call order."""
    calls: list = []
    inner = [False]
    originals = gemm.linear, gemm.addmm

    def linear(x, weight, bias, relu=False):
        if not inner[0] and _big(x.shape[0], x.shape[1], weight.shape[0]):
            calls.append((_copy(bias), x.clone(), weight.clone().t(), relu))
        inner[0] = True
        try:
            return originals[0](x, weight, bias, relu)
        finally:
            inner[0] = False

    def addmm(bias, a, b, relu=False):
        if not inner[0] and _big(a.shape[0], a.shape[1], b.shape[1]):
            calls.append((_copy(bias), a.clone(), b.clone(), relu))
        return originals[1](bias, a, b, relu)

    gemm.linear, gemm.addmm = linear, addmm
    try:
        update()
    finally:
        gemm.linear, gemm.addmm = originals
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    update, _ = sac_update_fn([f"trainer.num_threads={args.threads}"])

    from stable_baselines3 import SAC

    torch.set_num_threads(args.threads)
    model = SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, seed=0, device="cpu")
    model.learn(1000)
    for _ in range(5):
        update()
    products = record_big_products(update)

    def timed(fn, n: int) -> float:
        start = time.perf_counter()
        fn(n)
        return (time.perf_counter() - start) / n * 1e3

    def ours(n: int) -> None:
        for _ in range(n):
            update()

    def sb3(n: int) -> None:
        model.train(gradient_steps=n, batch_size=256)

    def products_alone(n: int) -> None:
        for _ in range(n):
            for bias, a, b, relu in products:
                gemm.addmm(bias, a, b, relu)

    contenders = {"rl_trainers": ours, "SB3": sb3, "products alone": products_alone}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():
        timed(fn, 20)
    for _ in range(args.blocks):
        for name, fn in contenders.items():
            times[name].append(timed(fn, 100))
    med = {name: statistics.median(t) for name, t in times.items()}
    shapes = sorted({(a.shape[0], a.shape[1], b.shape[1]) for _, a, b, _ in products})
    print(
        f"threads={args.threads}  per update: {len(products)} products with m, k, n >= 128 "
        f"(m x k x n: {', '.join('x'.join(map(str, s)) for s in shapes)})"
    )
    print(
        f"rl_trainers {med['rl_trainers']:.2f} ms  SB3 {med['SB3']:.2f} ms  "
        f"products alone {med['products alone']:.2f} ms"
    )
    print(
        f"ratio rl_trainers/SB3 {med['rl_trainers'] / med['SB3']:.2f}  "
        f"products alone/SB3 {med['products alone'] / med['SB3']:.2f}"
    )


if __name__ == "__main__":
    main()
