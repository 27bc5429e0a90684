"""The CPU fast paths' switches, in one place, and one switch for all of them.

Each fast path computes what its plain path computes (bit for bit, or to float rounding
where numpy's kernels stand in for torch's), and each has a test comparing the two. A fast
path runs only where it applies (CPU tensors, plain modules, nothing compiled or traced);
anywhere else the plain path runs by itself.

======================  ====================================================================
switch                  fast path (plain path when off)
======================  ====================================================================
``FUSE_MLP``            an ``MLP`` (and an ensemble of them) as one autograd node with a
                        hand-written backward; PPO's clipped terms with the actor-critic's
                        networks as one node (layer by layer, op by op)
``NUMPY_TANH``          ``FastTanh``: numpy's SIMD ``tanh`` on CPU tensors (``torch.tanh``)
``SAC_ONE_NODE``        SAC's actor and critic losses as two nodes with closed-form
                        backwards (the loss op by op)
``LEAN_ACTING``         collector acting on tensors: the network, the categorical or Gaussian
                        sample, log-probabilities once per batch (the policy's forward on a
                        TensorDict per step)
``ARRAY_ROLLOUT``       a gymnasium env's batch rolled out on arrays, one TensorDict per
                        batch (``env.step_and_maybe_reset`` per step)
``VECNORM_ON_HOST``     ``VecNorm``'s statistics in float64 on numpy views (its tensor maths)
``LEAN_ADAM``           ``optimizer_step``: torch's fused Adam kernel on the optimiser's state
                        without ``Optimizer.step``'s wrappers (``optimizer.step()``)
======================  ====================================================================

Every switch starts on, or off when the environment variable ``RL_TRAINERS_FAST_PATHS`` is
``0`` (read once, when this module is first imported). In code::

    from rl_trainers import fast

    with fast.plain():        # every plain path, e.g. to rule the fast paths out
        trainer.train()
    fast.FUSE_MLP = False     # one of them, e.g. in a benchmark

The choice of matrix-product library (``RL_TRAINERS_GEMM``, :mod:`rl_trainers.fast.gemm`)
is not among them: both libraries compute the same products.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: Whether the switches start on (``RL_TRAINERS_FAST_PATHS=0`` starts them off).
DEFAULT = os.environ.get("RL_TRAINERS_FAST_PATHS", "1").strip().lower() not in {
    "0",
    "false",
    "off",
    "no",
}

FUSE_MLP = DEFAULT
NUMPY_TANH = DEFAULT
SAC_ONE_NODE = DEFAULT
LEAN_ACTING = DEFAULT
ARRAY_ROLLOUT = DEFAULT
VECNORM_ON_HOST = DEFAULT
LEAN_ADAM = DEFAULT

#: Every switch, by name.
SWITCHES = (
    "FUSE_MLP",
    "NUMPY_TANH",
    "SAC_ONE_NODE",
    "LEAN_ACTING",
    "ARRAY_ROLLOUT",
    "VECNORM_ON_HOST",
    "LEAN_ADAM",
)


def state() -> dict[str, bool]:
    """Every switch's current value."""
    return {name: globals()[name] for name in SWITCHES}


def set_all(enabled: bool) -> None:
    """Turn every fast path on or off."""
    for name in SWITCHES:
        globals()[name] = bool(enabled)


@contextlib.contextmanager
def plain(*names: str) -> Iterator[None]:
    """Inside the block the named fast paths (all of them when none is named) are off;
    afterwards every switch is as it was."""
    unknown = set(names) - set(SWITCHES)
    if unknown:
        raise ValueError(f"unknown fast paths {sorted(unknown)}; the switches are {SWITCHES}")
    before = state()
    for name in names or SWITCHES:
        globals()[name] = False
    try:
        yield
    finally:
        globals().update(before)


__all__ = ["DEFAULT", "SWITCHES", "plain", "set_all", "state", *SWITCHES]
