"""Lean action distributions for actors and losses.

These avoid ``torch.distributions`` (argument validation, transform stacks) in the hot paths
of acting and of the losses. Each distribution treats the last dimension as the event:
``log_prob`` and ``entropy`` return ``[*B]``; ``log_prob`` also takes values with leading
sample dims (``log_prob(d.sample((n,)))`` is ``[n, *B]``), broadcasting them against the
batch shape as ``torch.distributions`` does.

Every class exposes ``sample()``, ``log_prob(value)``, ``entropy()``, ``mode``, ``mean`` and
``deterministic_sample``; the reparameterised ones also have ``rsample()`` and
``rsample_and_log_prob()``.

The layout is torchrl's (``torchrl.modules.distributions``):

- :mod:`~rl_trainers.modules.distributions.continuous`: ``IndependentNormal``,
  ``TanhNormal``, ``Delta``, ``TanhDelta`` (and ``TruncatedNormal``, as in torchrl);
- :mod:`~rl_trainers.modules.distributions.discrete`: ``Categorical``,
  ``OneHotCategorical``, ``MaskedCategorical``, ``MaskedOneHotCategorical``, ``Ordinal``,
  ``OneHotOrdinal`` and :func:`one_hot_index`;
- :mod:`~rl_trainers.modules.distributions.truncated_normal`: ``TruncatedNormal`` and its
  standard-normal tail functions;
- :mod:`~rl_trainers.modules.distributions.utils`: small shared helpers.

Everything listed in ``__all__`` (and ``one_hot_index``) is importable from this package.
"""

from __future__ import annotations

from rl_trainers.modules.distributions.continuous import (
    Delta,
    IndependentNormal,
    TanhDelta,
    TanhNormal,
)
from rl_trainers.modules.distributions.discrete import (
    Categorical,
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    OneHotOrdinal,
    Ordinal,
    one_hot_index,  # noqa: F401 (not in __all__, as before; the losses import it from here)
)
from rl_trainers.modules.distributions.truncated_normal import TruncatedNormal

__all__ = [
    "TanhNormal",
    "TruncatedNormal",
    "IndependentNormal",
    "Categorical",
    "OneHotCategorical",
    "Delta",
    "TanhDelta",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "Ordinal",
    "OneHotOrdinal",
]
