"""MKL against oneDNN for the matrix products of the fused network nodes.

Run: ``python benchmarks/gemm_backends.py [--threads 2] [--repeats 7] [--no-sac]``

Part 1: median microseconds of one product, ``torch.mm`` (MKL's sgemm) against
:func:`rl_trainers.fast.gemm.mm` with oneDNN forced on, for the shapes of a SAC update
(256-wide layers, batch 256: forward ``x @ W.T``, weight gradient ``G.T @ x``, input gradient
``G @ W``) and of a PPO update (64-wide), alternating blocks in one process. ``auto`` is the
choice ``gemm.mm`` makes (by CPU vendor, then by size).

Part 2: median milliseconds of one SAC update of the default Pendulum recipe
(``trainer.optim_steps`` on a buffer of 1000 frames) with ``gemm.USE_ONEDNN`` off and on.
"""

from __future__ import annotations

import argparse

import torch
from mlp_fast_path import compare, sac_update_fn, switch_ab

from rl_trainers.fast import gemm

SHAPES = {  # name: (a, b) builders of the product a @ b
    "SAC fwd   [256,256]x[256,256]^T": lambda: (torch.randn(256, 256), torch.randn(256, 256).t()),
    "SAC dW    [256,256]^T x[256,256]": lambda: (torch.randn(256, 256).t(), torch.randn(256, 256)),
    "SAC dx    [256,256]x[256,256]": lambda: (torch.randn(256, 256), torch.randn(256, 256)),
    "SAC in    [256,4]x[4,256]": lambda: (torch.randn(256, 4), torch.randn(256, 4).t()),
    "PPO fwd   [256,64]x[64,64]^T": lambda: (torch.randn(256, 64), torch.randn(64, 64).t()),
    "TD3 fwd   [256,400]x[400,300]^T": lambda: (torch.randn(256, 400), torch.randn(300, 400).t()),
}


def _forced(a: torch.Tensor, b: torch.Tensor):
    return lambda: gemm._onednn_linear()(a, b.t(), None, "none", [], "")


def products(repeats: int) -> None:
    print(f"one product, {torch.get_num_threads()} threads, median us")
    for name, build in SHAPES.items():
        a, b = build()
        res = compare(
            {
                "mkl": lambda a=a, b=b: a.mm(b),
                "onednn": _forced(a, b),
                "auto": lambda a=a, b=b: gemm.mm(a, b),
            },
            200,
            3 * repeats,
        )
        mkl, dnn, auto = (res[k] * 1e6 for k in ("mkl", "onednn", "auto"))
        print(
            f"  {name:34} mkl {mkl:7.1f}  onednn {dnn:7.1f}  auto {auto:7.1f}  mkl/onednn {mkl / dnn:.2f}"
        )


def sac(repeats: int, threads: int) -> None:
    update, trainer = sac_update_fn([f"trainer.num_threads={threads}"])
    label = f"SAC update (batch 256, {torch.get_num_threads()} threads)"
    try:
        switch_ab(label, update, 30, repeats, gemm, "USE_ONEDNN", ("mkl", "onednn"))
    finally:
        trainer.collector.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-sac", action="store_true", help="skip the SAC update timing")
    args = parser.parse_args()
    if gemm._onednn_linear() is None:
        raise SystemExit("this torch build has no usable oneDNN linear op")
    torch.set_num_threads(args.threads)
    products(args.repeats)
    if not args.no_sac:
        sac(args.repeats, args.threads)


if __name__ == "__main__":
    main()
