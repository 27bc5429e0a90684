"""Discrete action distributions: ``Categorical``, ``OneHotCategorical``, the masked ones,
``Ordinal`` and ``OneHotOrdinal`` (torchrl's ``torchrl.modules.distributions.discrete``).

Logits are ``[*B, n]``; ``log_prob`` and ``entropy`` return ``[*B]``. ``log_prob`` broadcasts
the value (indices ``[*S, *B]``, or one-hot vectors ``[*S, *B, n]``) against the batch shape
as ``torch.distributions.Categorical`` does, so samples with leading sample dims
(``log_prob(d.sample((n,)))``) give ``[n, *B]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "Categorical",
    "OneHotCategorical",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "Ordinal",
    "OneHotOrdinal",
    "one_hot_index",
]


class Categorical:
    """Categorical over the last dim of ``logits``; samples are int64 indices ``[*B]``.

    Args:
        logits: unnormalised log-probabilities ``[*B, n]``.
        probs: probabilities instead of logits.
    """

    has_rsample = False

    def __init__(
        self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None
    ) -> None:
        if (logits is None) == (probs is None):
            raise ValueError("Categorical needs exactly one of logits or probs")
        if logits is None:
            logits = probs.clamp_min(torch.finfo(probs.dtype).tiny).log()
        self.logits = logits
        self._logp: torch.Tensor | None = None

    @property
    def batch_shape(self) -> torch.Size:
        return self.logits.shape[:-1]

    @property
    def log_probs(self) -> torch.Tensor:
        """Normalised log-probabilities ``[*B, n]``."""
        if self._logp is None:
            self._logp = torch.log_softmax(self.logits, -1)
        return self._logp

    @property
    def probs(self) -> torch.Tensor:
        return self.log_probs.exp()

    def _sample_index(
        self, sample_shape: torch.Size = torch.Size(), keepdim: bool = False
    ) -> torch.Tensor:
        """Gumbel-max sampling, with the Gumbel noise drawn as ``-log(E)``, ``E ~ Exp(1)``
        (four small ops; ``-log(-log(U))`` from uniforms takes six). ``keepdim`` keeps the
        sampled dim as size 1 (what ``gather`` and ``scatter_`` take)."""
        if torch.is_grad_enabled():  # acting runs without grad: skip the context there
            with torch.no_grad():
                return self._sample_index(sample_shape, keepdim)
        logits = self.logits
        shape = torch.Size(sample_shape) + logits.shape
        exp_noise = torch.empty(shape, dtype=logits.dtype, device=logits.device)
        # E == 0 would give an infinite Gumbel draw, and nan against a -inf logit
        exp_noise.exponential_().clamp_min_(torch.finfo(logits.dtype).tiny)
        return (logits - exp_noise.log_()).argmax(-1, keepdim=keepdim)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self._sample_index(sample_shape)

    def _index_log_prob(self, index: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        """Log-probabilities at ``index``: ``[*B]``, or ``[*B, 1]`` with ``keepdim``; without
        it, an index of another shape (e.g. ``[*S, *B]`` with sample dims) is broadcast
        against ``[*B]`` as ``torch.distributions.Categorical`` does."""
        logp = self.log_probs
        if not keepdim:
            if index.shape != logp.shape[:-1]:
                return self._broadcast_index_log_prob(index)
            index = index.unsqueeze(-1)
        return logp.gather(-1, index).squeeze(-1)

    def _broadcast_index_log_prob(self, index: torch.Tensor) -> torch.Tensor:
        """``_index_log_prob`` for an ``index`` not shaped ``[*B]``: both sides are expanded
        (views, no copies) to ``broadcast(index.shape, [*B])`` before the ``gather``."""
        logp = self.log_probs
        shape = torch.broadcast_shapes(index.shape, logp.shape[:-1])
        index = index.expand(shape).unsqueeze(-1)
        return logp.expand(*shape, logp.shape[-1]).gather(-1, index).squeeze(-1)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A sample and its log-probability, read from the index (no one-hot round trip)."""
        index = self._sample_index(keepdim=True)
        return index.squeeze(-1), self._index_log_prob(index, keepdim=True)

    @property
    def mode(self) -> torch.Tensor:
        return self.logits.argmax(-1)

    deterministic_sample = mode

    @property
    def mean(self) -> torch.Tensor:
        raise NotImplementedError("a categorical distribution has no mean; use mode")

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return self._index_log_prob(value.long())

    def entropy(self) -> torch.Tensor:
        logp = self.log_probs
        return -(logp.exp() * logp).sum(-1)


class OneHotCategorical(Categorical):
    """Categorical whose samples are one-hot vectors ``[*B, n]`` (float unless ``dtype`` is set)."""

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(logits=logits, probs=probs)
        self.dtype = dtype or self.logits.dtype

    def _one_hot(self, index: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        """One-hot vectors of ``index`` (``[*B]``, or ``[*B, 1]`` with ``keepdim``)."""
        index = index if keepdim else index.unsqueeze(-1)
        shape = (*index.shape[:-1], self.logits.shape[-1])
        hot = torch.zeros(shape, dtype=self.dtype, device=index.device)
        return hot.scatter_(-1, index, 1)

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        return self._one_hot(self._sample_index(sample_shape, keepdim=True), keepdim=True)

    def sample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A one-hot sample and its log-probability, read from the sampled index."""
        index = self._sample_index(keepdim=True)
        return self._one_hot(index, keepdim=True), self._index_log_prob(index, keepdim=True)

    @property
    def mode(self) -> torch.Tensor:
        return self._one_hot(self.logits.argmax(-1))

    deterministic_sample = mode

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        # the hot index, not a product with the one-hot vector: a masked action (-inf logit)
        # would turn that product into nan
        return self._index_log_prob(one_hot_index(value))


class _Masked:
    """Masking shared by the masked categoricals: disallowed actions get ``neg_inf`` logits
    (probability 0, never sampled, log-probability ``-inf``)."""

    def _masked_logits(self, logits, probs, mask, indices, neg_inf, padding_value):
        if mask is None:
            raise ValueError("a masked categorical needs mask= (True for allowed actions)")
        if indices is not None or padding_value is not None:
            raise NotImplementedError("indices= / padding_value= (sparse masks) are not supported")
        if (logits is None) == (probs is None):
            raise ValueError("a masked categorical needs exactly one of logits or probs")
        if logits is None:
            logits = probs.clamp_min(torch.finfo(probs.dtype).tiny).log()
        self.mask = mask.bool()
        return logits.masked_fill(~self.mask, neg_inf)

    def entropy(self) -> torch.Tensor:
        logp = self.log_probs
        return -torch.where(self.mask, logp.exp() * logp, 0.0).sum(-1)


class MaskedCategorical(_Masked, Categorical):
    """Categorical over the allowed actions only (torchrl's ``MaskedCategorical``), e.g.
    ``ProbabilisticActor(..., in_keys={"logits": "logits", "mask": "action_mask"},
    distribution_class=MaskedCategorical)``.

    Args:
        logits: unnormalised log-probabilities ``[*B, n]``.
        probs: probabilities instead of logits.
        mask: bool ``[*B, n]``, True for the allowed actions.
        neg_inf: logit given to the masked actions.
        indices, padding_value, use_cross_entropy, padding_side: torchrl's sparse-mask
            options (not supported, or no effect).
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        use_cross_entropy: bool = True,
        padding_side: str = "left",
    ) -> None:
        logits = self._masked_logits(logits, probs, mask, indices, neg_inf, padding_value)
        Categorical.__init__(self, logits=logits)


class MaskedOneHotCategorical(_Masked, OneHotCategorical):
    """:class:`MaskedCategorical` with one-hot samples (torchrl's ``MaskedOneHotCategorical``).

    Args: as :class:`MaskedCategorical`, plus ``dtype`` of the samples.
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        use_cross_entropy: bool = True,
        padding_side: str = "left",
        dtype: torch.dtype | None = None,
    ) -> None:
        logits = self._masked_logits(logits, probs, mask, indices, neg_inf, padding_value)
        OneHotCategorical.__init__(self, logits=logits, dtype=dtype)


def one_hot_index(value: torch.Tensor) -> torch.Tensor:
    """The index of the hot entry of one-hot vectors ``[*B, n]`` (bool, int or float)."""
    if value.dtype == torch.bool:
        value = value.to(torch.uint8)  # argmax has no bool kernel
    return value.argmax(-1)


def _ordinal_logits(scores: torch.Tensor) -> torch.Tensor:
    """Logits of an ordinal distribution over ``n`` ordered classes from ``scores [*B, n]``
    (Tang & Agrawal 2020, eq. 4): class ``k`` gets ``sum_{j <= k} log sigmoid(s_j) +
    sum_{j > k} log(1 - sigmoid(s_j))``, so neighbouring classes share most of their terms."""
    log_up_to = F.logsigmoid(scores).cumsum(-1)
    log_not = F.logsigmoid(-scores)  # log(1 - sigmoid(s))
    log_after = log_not.flip(-1).cumsum(-1).flip(-1) - log_not
    return log_up_to + log_after


class Ordinal(Categorical):
    """A categorical over ordered classes (torchrl's ``Ordinal``): its logits are
    built from ``scores`` by :func:`_ordinal_logits`, samples are int64 indices ``[*B]``.

    Args:
        scores: ``[*B, n]``, typically a network's output.
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=_ordinal_logits(scores))


class OneHotOrdinal(OneHotCategorical):
    """:class:`Ordinal` with one-hot samples ``[*B, n]`` (torchrl's ``OneHotOrdinal``).

    Args:
        scores: ``[*B, n]``, typically a network's output.
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=_ordinal_logits(scores))
