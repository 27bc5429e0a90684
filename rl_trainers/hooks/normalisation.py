"""Reward normalisation with running statistics."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_trainers.core.loop import Trainer, TrainerHookBase

__all__ = ["RewardNormalizer"]


class RewardNormalizer(TrainerHookBase):
    """Normalise rewards of optimisation sub-batches with decayed running statistics.

    ``update_reward_stats`` (at ``batch_process``) updates decayed sums over collected
    batches: ``S = decay * S + sum(r)``, ``Q = decay * Q + sum(r**2)``, ``N = decay * N + n``;
    then ``mean = S / N`` and ``std = sqrt(max(Q / N - mean**2, eps))``.
    ``normalize_reward`` (at ``process_optim_batch``) writes ``scale * (r - mean) / std``
    into a shallow copy of the sub-batch, so the collected batch itself is left unchanged.

    Args:
        decay: decay of the running sums.
        scale: factor applied after normalisation.
        eps: lower bound of the variance; ``None`` (the default, as in torchrl) means
            ``torch.finfo(torch.get_default_dtype()).eps``.
        log_pbar: show the running mean and std on the progress bar.
        reward_key: the reward entry (default ``("next", "reward")``).
    """

    def __init__(
        self,
        decay: float = 0.999,
        scale: float = 1.0,
        eps: float | None = None,
        log_pbar: bool = False,
        reward_key: NestedKey | None = None,
    ) -> None:
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {decay}.")
        self.decay = decay
        self.scale = scale
        if eps is None:
            eps = torch.finfo(torch.get_default_dtype()).eps
        if eps < 0:
            raise ValueError(f"eps must be >= 0, got {eps}.")
        self.eps = float(eps)
        self.log_pbar = log_pbar
        self.reward_key = ("next", "reward") if reward_key is None else reward_key
        self._sum = torch.zeros(())
        self._ssq = torch.zeros(())
        self._count = torch.zeros(())

    @torch.no_grad()
    def update_reward_stats(self, batch: TensorDictBase) -> None:
        """Fold the batch's rewards into the running statistics."""
        reward = batch.get(self.reward_key)
        mask = batch.get(("collector", "mask"), None)
        if mask is not None:
            reward = reward[mask]
        reward = reward.double()
        if self._sum.device != reward.device:
            self._sum, self._ssq, self._count = (
                t.to(reward.device) for t in (self._sum, self._ssq, self._count)
            )
        d = self.decay
        self._sum = d * self._sum + reward.sum()
        self._ssq = d * self._ssq + reward.pow(2).sum()
        self._count = d * self._count + reward.numel()

    def stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Current running ``(mean, std)``."""
        count = self._count.clamp_min(1e-12)
        mean = self._sum / count
        var = (self._ssq / count - mean.pow(2)).clamp_min(self.eps)
        return mean, var.sqrt()

    def normalize_reward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Return a shallow copy of ``tensordict`` with the normalised reward."""
        if not self._count > 0:
            raise RuntimeError(
                "RewardNormalizer.normalize_reward called before any reward statistics were "
                "gathered; register update_reward_stats at 'batch_process' (register() does)."
            )
        reward = tensordict.get(self.reward_key)
        mean, std = self.stats()
        out = tensordict.copy()
        out.set(self.reward_key, ((reward - mean) * (self.scale / std)).to(reward.dtype))
        return out

    __call__ = normalize_reward

    def log_stats(self, batch: Any = None) -> dict[str, Any]:
        """The running mean and std as a logging dict."""
        mean, std = self.stats()
        return {"reward_norm_mean": mean, "reward_norm_std": std, "log_pbar": self.log_pbar}

    def register(self, trainer: Trainer, name: str = "reward_normalizer") -> None:
        """Register statistics (``batch_process``), normalisation (``process_optim_batch``),
        logging (``pre_steps_log``) and the checkpointed statistics."""
        trainer.register_op("batch_process", self.update_reward_stats)
        trainer.register_op("process_optim_batch", self.normalize_reward)
        trainer.register_op("pre_steps_log", self.log_stats)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The running sums."""
        return {"sum": self._sum.clone(), "ssq": self._ssq.clone(), "count": self._count.clone()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the running sums."""
        self._sum = state_dict["sum"].clone()
        self._ssq = state_dict["ssq"].clone()
        self._count = state_dict["count"].clone()
