"""torchrl's ``torchrl.objectives.deprecated``: the REDQ loss its REDQ recipe still builds.

:class:`REDQLoss_deprecated` is :class:`~rl_trainers.objectives.REDQLoss` with the earlier
temperature and priority terms. With ``a~, logp ~ pi(s)``:

* ``loss_alpha = -mean(alpha * (logp + target_entropy))`` and ``entropy = -mean(logp)``
  over the actions drawn at ``s`` only (REDQLoss averages those drawn at ``s`` and ``s'``);
* the priority written at ``priority_key`` is ``max_i |Q_i(s, a) - y|`` (REDQLoss: its
  square);
* ``out_keys`` are ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha``, ``entropy``.

``loss_actor``, ``loss_qvalue`` and the target are REDQLoss's.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_trainers.objectives.redq import REDQLoss

__all__ = ["DoubleREDQLoss_deprecated", "REDQLoss_deprecated"]

_OUT_KEYS = ("loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy")


class REDQLoss_deprecated(REDQLoss):  # noqa: N801 (torchrl's name)
    """torchrl's ``REDQLoss_deprecated`` (same signature as :class:`REDQLoss`).

    Example:
        >>> loss = REDQLoss_deprecated(actor, qvalue, num_qvalue_nets=10, delay_qvalue=True)
        >>> loss.make_value_estimator(gamma=0.99)
        >>> out = loss(batch)  # loss_actor, loss_qvalue, loss_alpha, alpha, entropy
    """

    def _default_out_keys(self) -> list[str]:
        return list(_OUT_KEYS)

    def _alpha_log_probs(self, logp_pi: torch.Tensor, logp_next: torch.Tensor) -> torch.Tensor:
        return logp_pi

    def _priority(self, errors: torch.Tensor) -> torch.Tensor:
        return errors.abs().max(0).values

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return super().forward(tensordict).select(*_OUT_KEYS)


class DoubleREDQLoss_deprecated(REDQLoss_deprecated):  # noqa: N801 (torchrl's name)
    """:class:`REDQLoss_deprecated` with target critics (its default already)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("delay_qvalue", True)
        super().__init__(*args, **kwargs)
