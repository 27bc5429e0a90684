"""The CPU fast paths, fenced in one package, and the switches that turn them on and off.

Each fast path computes what a plain path of the library computes (bit for bit, or to float
rounding where numpy's kernels stand in for torch's), and each has a test comparing the two
(``tests/fast/``). A fast path runs only where it applies (CPU tensors, plain modules,
nothing compiled or traced); anywhere else the plain path runs by itself.

How the fence is built: this package sits below every other package of rl_trainers and
imports none of them (the ``fast-at-the-bottom`` contract of ``.importlinter``). It holds
tensor-level kernels only, on torch, numpy and tensordict: autograd nodes with hand-written
backwards, samplers, optimiser kernels. The library keeps its plain path and, where a fast
path applies, the check that it does (the module's type and layout, hooks, dtypes) and one
call into a kernel here, with the parameters it extracted. Library types a kernel needs
(the ``TanhNormal`` class, the critic distance ``distance_loss``) come in as arguments. So
no import runs from here back into the library, and nothing is patched at import time.

Each switch, its modules here, the fast path, and (in parentheses) the plain path it replaces
and where the library calls it:

* ``FUSE_MLP``: :mod:`.mlp`, an ``MLP`` as one autograd node with a hand-written backward
  (layer by layer, ``MLP.forward``), also DQN's step without autograd
  (``DQNLoss.loss_and_grads``); :mod:`.ensemble`, a ``CriticEnsemble`` of MLPs as one node
  (batched products, ``CriticEnsemble.forward``); :mod:`.ppo`, PPO's clipped terms with the
  actor-critic's networks as one node, for categorical policies and SB3's Gaussian (op by
  op, ``ClipPPOLoss.forward``).
* ``NUMPY_TANH``: :mod:`.tanh`, ``FastTanh``, numpy's SIMD ``tanh`` on CPU tensors
  (``torch.tanh``; ``MLP`` builds it for ``nn.Tanh``).
* ``SAC_ONE_NODE``: :mod:`.sac`, SAC's actor and critic losses as two nodes with
  closed-form backwards (the loss op by op, ``SACLoss``).
* ``LEAN_ACTING``: :mod:`.acting`, collector acting on tensors: the network, the
  categorical or Gaussian sample, log-probabilities once per batch (the policy's forward on
  a TensorDict per step; ``collectors.utils.lean_acting`` picks the path).
* ``ARRAY_ROLLOUT``: a gymnasium env's batch rolled out on arrays, one TensorDict per batch
  (``env.step_and_maybe_reset`` per step; the collector's ``_rollout_batch``).
* ``VECNORM_ON_HOST``: :mod:`.vecnorm`, ``VecNorm``'s statistics in float64 on numpy views
  (its tensor maths).
* ``LEAN_ADAM``: :mod:`.adam`, torch's fused Adam kernel on the optimiser's state without
  ``Optimizer.step``'s wrappers (``optimizer.step()``; ``core.optimizer_step``).
* ``PACKED_STORAGE``: :mod:`.packed`, a replay buffer's in-memory TensorDict storage with
  its leaves as column views of one table per dtype, so a sample gathers each dtype's rows
  at once (one tensor per leaf, gathered and written leaf by leaf;
  ``TensorStorage._allocate`` picks the layout).

The array rollout is the one fast path outside this package: it is ``GymWrapper``'s own
batch loop over the env's arrays (``GymWrapper.rollout_batch``), so it stays with the env;
its switch is here. PPO's categorical terms after the networks
(:class:`.ppo.ClipPPOCategoricalTerms`) are used whatever the switches say.

Every switch starts on, or off when the environment variable ``RL_TRAINERS_FAST_PATHS`` is
``0`` (read once, when this package is first imported). In code::

    from rl_trainers import fast

    with fast.plain():        # every plain path, e.g. to rule the fast paths out
        trainer.train()
    fast.FUSE_MLP = False     # one of them, e.g. in a benchmark

The choice of matrix-product library (``RL_TRAINERS_GEMM``, :mod:`rl_trainers.fast.gemm`,
which the fused nodes' products go through) is not among the switches: both libraries
compute the same products.
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
PACKED_STORAGE = DEFAULT

#: Every switch, by name.
SWITCHES = (
    "FUSE_MLP",
    "NUMPY_TANH",
    "SAC_ONE_NODE",
    "LEAN_ACTING",
    "ARRAY_ROLLOUT",
    "VECNORM_ON_HOST",
    "LEAN_ADAM",
    "PACKED_STORAGE",
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
