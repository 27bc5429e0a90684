"""Matrix products of the hand-written network nodes, on the faster of torch's CPU GEMMs.

torch multiplies float32 CPU matrices with MKL's ``sgemm``. On AMD processors MKL runs its
AVX2 code even where the CPU has AVX-512: on the 2-core AMD EPYC of docs/performance.md a
256x256x256 product takes ~340 us on one thread (~95 GFLOP/s). oneDNN, which torch also
ships (``torch.ops.mkldnn._linear_pointwise``, the op ``torch.compile`` emits for CPU
linears), picks its kernels by instruction set and takes ~165 us; on two threads ~190
against ~100 us, the same for the transposed products of a backward pass. Its fixed cost
per call (~13 us against ~3) makes it slower on small products, so only an ``[m, k] @ [k,
n]`` product with ``k`` and ``n`` of at least 128 and ``m`` of at least 32 takes it (for a
layer: a batch of 32 or more through 128-wide layers); PPO's 64-wide networks and the
narrow first and last layers stay on MKL. Measured by ``benchmarks/gemm_backends.py``,
which also shows the two side by side on another machine.

On Intel processors MKL runs its AVX-512 kernels and is the faster of the two: on a 2-core
Intel Xeon a 256x256x256 product took 116 / 99 / 102 us on MKL against 142 / 202 / 115 us on
oneDNN (forward, weight gradient, input gradient), a whole SAC update 4.5 against 5.5 ms.
So the big products go to oneDNN only on non-Intel x86 processors (AMD) and other
architectures; on an Intel CPU every product stays on MKL. ``RL_TRAINERS_GEMM=mkl`` or
``onednn`` overrides the choice for a process (``auto``, the default, picks by vendor);
``gemm.USE_ONEDNN`` can also be set from code. The choice is fixed per machine, not timed at
start-up, so a seed gives the same results on every run there.

:func:`mm` and :func:`addmm` serve the fused MLP and critic-ensemble nodes, which run their
products outside autograd. Results agree with MKL's to float rounding; both libraries are
deterministic for a given shape and thread count.
"""

from __future__ import annotations

import os
import platform

import torch
import torch.nn.functional as F

__all__ = ["mm", "addmm", "linear", "USE_ONEDNN"]

_BACKEND_ENV = "RL_TRAINERS_GEMM"


def _cpu_vendor() -> str:
    """The x86 vendor string (``GenuineIntel``, ``AuthenticAMD``), or '' where unknown."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "GenuineIntel" if "GenuineIntel" in platform.processor() else ""


def _default_use_onednn() -> bool:
    """oneDNN for the big products unless the CPU is an Intel one, where MKL is faster;
    ``RL_TRAINERS_GEMM`` (``auto``, ``mkl``, ``onednn``) overrides."""
    choice = os.environ.get(_BACKEND_ENV, "auto").strip().lower()
    if choice not in ("auto", "mkl", "onednn"):
        raise ValueError(f"{_BACKEND_ENV}={choice!r}: expected 'auto', 'mkl' or 'onednn'")
    if choice != "auto":
        return choice == "onednn"
    return _cpu_vendor() != "GenuineIntel"


#: False computes every product with torch's own ops (MKL on CPU); the default depends on
#: the CPU vendor (see the module docstring).
USE_ONEDNN = _default_use_onednn()
_MIN_ROWS, _MIN_WIDTH = 32, 128  # from where oneDNN's per-call cost pays off


_UNPROBED = object()
_LINEAR = _UNPROBED  # the op, once probed: None if this torch build has no working one


def _onednn_linear():
    """``torch.ops.mkldnn._linear_pointwise`` if this torch build has a working one, else
    None. Probed on the first big product, not at import: running oneDNN maps its code
    (~5 MiB of resident memory), which runs that use only small products do without."""
    global _LINEAR
    if _LINEAR is _UNPROBED:
        _LINEAR = None
        if torch.backends.mkldnn.is_available():
            try:
                op = torch.ops.mkldnn._linear_pointwise
                x = torch.ones(2, 3)
                if torch.equal(
                    op(x, torch.ones(4, 3), None, "none", [], ""), torch.full((2, 4), 3.0)
                ):
                    _LINEAR = op
            except (AttributeError, RuntimeError):
                pass
    return _LINEAR


def _big_enough(m: int, k: int, n: int) -> bool:
    """Whether an ``[m, k] @ [k, n]`` product is big enough for oneDNN's fixed cost."""
    return n >= _MIN_WIDTH and k >= _MIN_WIDTH and m >= _MIN_ROWS


def _use_onednn(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a @ b`` (2-D) goes to oneDNN. The sizes are checked first: the small
    products of PPO-sized networks are decided in ~0.1 us instead of ~0.8."""
    return (
        _big_enough(a.shape[0], a.shape[1], b.shape[1])
        and USE_ONEDNN
        and a.dtype is torch.float32
        and b.dtype is torch.float32
        and a.device.type == "cpu"
        and _onednn_linear() is not None
    )


def linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, relu: bool = False
) -> torch.Tensor:
    """``addmm(bias, x, weight.t(), relu)``, the same values, for a 2-D ``x`` and a layer's
    ``[out, in]`` weight: on MKL through ``torch.nn.functional.linear``, which transposes in
    C++ (one Python-level op fewer per layer, ~1-3 us on small networks)."""
    maybe_onednn = USE_ONEDNN and _big_enough(x.shape[0], x.shape[1], weight.shape[0])
    if maybe_onednn or bias is None or not x.is_contiguous():
        return addmm(bias, x, weight.t(), relu)
    y = F.linear(x, weight, bias)
    return y.relu_() if relu else y


def mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` for 2-D tensors of any strides; written into ``out`` (a contiguous tensor
    of the result's shape) when given, bitwise equal to the product without it."""
    if out is None:
        return addmm(None, a, b)
    if _use_onednn(a, b):
        return out.copy_(addmm(None, a, b))
    return torch.mm(a, b, out=out)


def addmm(
    bias: torch.Tensor | None, a: torch.Tensor, b: torch.Tensor, relu: bool = False
) -> torch.Tensor:
    """``bias + a @ b`` (then ReLU if ``relu``) as a fresh tensor, for 2-D ``a``, ``b`` and a
    ``bias`` of shape ``[n]`` or None.

    oneDNN computes ``x @ w.T`` with ``x`` row-major (it copies any other ``x`` first) and
    ``w`` of any strides, and runs the bias and the ReLU inside the same call. Without a bias,
    a product whose operands are both transposed views is computed as ``(b.T @ a.T).T``,
    which needs no copy; the result is then a transposed view.
    """
    if _use_onednn(a, b):
        attr = "relu" if relu else "none"
        if bias is None and not a.is_contiguous() and b.t().is_contiguous():
            return _LINEAR(b.t(), a, None, attr, [], "").t()
        return _LINEAR(a, b.t(), bias, attr, [], "")
    y = a.mm(b) if bias is None else torch.addmm(bias, a, b)
    return y.relu_() if relu else y
