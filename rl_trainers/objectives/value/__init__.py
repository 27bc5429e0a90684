"""Value estimators: TD(0), TD(lambda), GAE and V-trace, functional and as tensordict
callables.

All functions take tensors shaped ``[*B, T, 1]`` (time on ``time_dim``, default -2) and are
vectorised over the batch. Conventions (per step ``t``):

* ``terminated[t]``: ``s_{t+1}`` is terminal, so its value is zero (no bootstrap);
* ``done[t]`` (terminated or truncated): the episode ends at ``t``, so the recursion stops
  there; a truncated step still bootstraps from ``next_state_value[t]``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_trainers._returns import _discounted_cumsum, reward2go
from rl_trainers.objectives.common import (
    ValueEstimators,
    batch_entry,
    current_and_next,
    discount,
    estimator_type,
    is_plain_module,
    next_key,
)

__all__ = [
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "vec_td_lambda_return_estimate",
    "td0_return_estimate",
    "vtrace_advantage_estimate",
    "reward2go",
    "GAE",
    "TDLambdaEstimator",
    "TD1Estimator",
    "TD0Estimator",
    "VTrace",
    "ValueEstimatorBase",
    "make_estimator",
    "default_value_kwargs",
]


def _check(*tensors: torch.Tensor) -> None:
    shape = tensors[0].shape
    for t in tensors[1:]:
        if t.shape != shape:
            raise ValueError(
                f"value estimator inputs must share one shape [*B, T, 1]; got {shape} and {t.shape}"
            )
    if len(shape) < 2 or shape[-1] != 1:
        raise ValueError(f"value estimator inputs must be shaped [*B, T, 1], got {tuple(shape)}")


def generalized_advantage_estimate(
    gamma: float | torch.Tensor,
    lmbda: float,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    *,
    time_dim: int = -2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation (Schulman et al. 2016), torchrl's signature.

    ``delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)`` and
    ``A_t = delta_t + gamma * lmbda * (1 - done_t) * A_{t+1}``.

    Args:
        gamma: discount (a float, or a tensor like ``reward`` for per-step discounts).
        lmbda: GAE lambda.
        state_value: ``V(s_t)``, ``[*B, T, 1]``.
        next_state_value: ``V(s_{t+1})``, ``[*B, T, 1]``.
        reward: ``r_t``, ``[*B, T, 1]``.
        done: bool ``[*B, T, 1]``, end of a trajectory (terminated or truncated).
        terminated: bool ``[*B, T, 1]``, end of an episode (defaults to ``done``).
        time_dim: the time dimension.

    Returns:
        ``(advantage, value_target)`` with ``value_target = advantage + state_value``.
    """
    if terminated is None:
        terminated = done
    if time_dim not in (-2, state_value.dim() - 2):
        state_value, next_state_value, reward, terminated, done = (
            x.transpose(time_dim, -2)
            for x in (state_value, next_state_value, reward, terminated, done)
        )
        adv, target = generalized_advantage_estimate(
            gamma, lmbda, state_value, next_state_value, reward, done, terminated
        )
        return adv.transpose(time_dim, -2), target.transpose(time_dim, -2)
    _check(state_value, next_state_value, reward)
    terminated = terminated.bool().reshape(reward.shape)
    done = done.bool().reshape(reward.shape) | terminated
    not_term = (~terminated).to(reward.dtype)
    delta = reward + gamma * not_term * next_state_value - state_value
    advantage = _discounted_cumsum(delta, gamma * lmbda, done)
    return advantage, advantage + state_value


def td_lambda_return_estimate(
    gamma: float | torch.Tensor,
    lmbda: float,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
) -> torch.Tensor:
    """TD(lambda) returns ``[*B, T, 1]``, torchrl's signature.

    ``G_t = r_t + gamma * (1 - terminated_t) * ((1 - lmbda) * V(s_{t+1}) + lmbda * G_{t+1})``,
    where ``G_{t+1}`` is replaced by ``V(s_{t+1})`` at the end of an episode or of the batch.
    ``terminated`` defaults to ``done``. A per-step ``gamma`` tensor discounts its own step
    (torchrl's ``rolling_gamma=True``, the default; ``False`` is not supported).
    """
    if rolling_gamma is False:
        raise NotImplementedError("rolling_gamma=False: per-step gammas discount their step")
    if terminated is None:
        terminated = done
    if time_dim not in (-2, next_state_value.dim() - 2):
        moved = (
            x.transpose(time_dim, -2) if isinstance(x, torch.Tensor) and x.dim() > 1 else x
            for x in (gamma, next_state_value, reward, done, terminated)
        )
        gamma_t, next_t, reward_t, done_t, term_t = moved
        out = td_lambda_return_estimate(gamma_t, lmbda, next_t, reward_t, done_t, term_t)
        return out.transpose(time_dim, -2)
    _check(next_state_value, reward)
    terminated = terminated.bool().reshape(reward.shape)
    done = done.bool().reshape(reward.shape) | terminated
    not_term = (~terminated).to(reward.dtype)
    # G_t - V'_t-ish decomposition: G_t = r_t + g (1-term) V_{t+1} + g lmbda (1 - done_t) (G_{t+1} - V_{t+1})
    base = reward + gamma * not_term * next_state_value
    # define H_t = G_t - V_{t}^{next-shifted}; solved through the same discounted cumsum:
    # G_t = base_t + g*lmbda*(1-done_t) * (G_{t+1} - V(s_{t+1}))
    # let X_t = G_t - c_t where c_t = V(s_{t}) taken from next_state_value shifted by one step.
    shifted = torch.cat([next_state_value[..., :1, :] * 0, next_state_value[..., :-1, :]], dim=-2)
    # X_t = base_t - shifted_t + g lmbda (1 - done_t) X_{t+1}, since shifted_{t+1} = V(s_{t+1})
    # (valid because the recursion is cut wherever done_t, where shifted would be wrong).
    x = _discounted_cumsum(base - shifted, gamma * lmbda, done)
    return x + shifted


#: torchrl's vectorised TD(lambda): the same computation here, as
#: :func:`td_lambda_return_estimate` already runs over the whole time dim at once (one
#: discounted cumulative sum cut at episode ends).
vec_td_lambda_return_estimate = td_lambda_return_estimate


def td0_return_estimate(
    gamma: float | torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    terminated: torch.Tensor | None = None,
    *,
    done: torch.Tensor | None = None,
) -> torch.Tensor:
    """One-step targets ``r_t + gamma * (1 - terminated_t) * V(s_{t+1})``, torchrl's
    signature (``done``: deprecated there, used when ``terminated`` is not given)."""
    if terminated is None:
        if done is None:
            raise TypeError("td0_return_estimate needs terminated (or done)")
        terminated = done
    not_term = (~terminated.bool().reshape(reward.shape)).to(reward.dtype)
    return reward + gamma * not_term * next_state_value


def vtrace_advantage_estimate(
    gamma: float | torch.Tensor,
    log_pi: torch.Tensor,
    log_mu: torch.Tensor,
    state_value: torch.Tensor,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None = None,
    rho_thresh: float | torch.Tensor = 1.0,
    c_thresh: float | torch.Tensor = 1.0,
    *,
    time_dim: int = -2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace targets and advantages (Espeholt et al. 2018, IMPALA), torchrl's signature.

    With the importance ratio ``w_t = pi(a_t|s_t) / mu(a_t|s_t)`` of the learner's policy
    ``pi`` over the behaviour policy ``mu`` that collected the data, ``rho_t = min(rho_thresh,
    w_t)`` and ``c_t = min(c_thresh, w_t)``:

    * ``delta_t = rho_t * (r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t))``;
    * ``v_t = V(s_t) + delta_t + gamma * c_t * (1 - done_t) * (v_{t+1} - V(s_{t+1}))``, with
      ``v_{t+1} - V(s_{t+1}) = 0`` after the batch's last step;
    * ``advantage_t = rho_t * (r_t + gamma * (1 - terminated_t) * v'_{t+1} - V(s_t))``, where
      ``v'_{t+1}`` is ``v_{t+1}``, or ``V(s_{t+1})`` where the trajectory ends at ``t`` (done)
      or the batch does. (torchrl reads ``v_{t+1}`` of the next row there, which after a
      truncation belongs to the next episode.)

    On-policy (``log_pi == log_mu``) with both thresholds at least 1, ``v_t`` is the TD(1)
    return.

    Args:
        gamma: discount (a float, or a tensor like ``reward`` for per-step discounts).
        log_pi: log-probabilities of the actions under the policy being trained, ``[*B, T, 1]``.
        log_mu: log-probabilities under the policy that collected them, ``[*B, T, 1]``.
        state_value: ``V(s_t)``, ``[*B, T, 1]``.
        next_state_value: ``V(s_{t+1})``, ``[*B, T, 1]``.
        reward: ``r_t``, ``[*B, T, 1]``.
        done: bool ``[*B, T, 1]``, end of a trajectory (terminated or truncated).
        terminated: bool ``[*B, T, 1]``, end of an episode (defaults to ``done``).
        rho_thresh: clip of the importance weights of the temporal differences.
        c_thresh: clip of the importance weights of the trace.
        time_dim: the time dimension.

    Returns:
        ``(advantage, value_target)``, both ``[*B, T, 1]``.
    """
    if terminated is None:
        terminated = done
    if time_dim not in (-2, state_value.dim() - 2):
        moved = (
            x.transpose(time_dim, -2) if isinstance(x, torch.Tensor) and x.dim() > 1 else x
            for x in (
                gamma,
                log_pi,
                log_mu,
                state_value,
                next_state_value,
                reward,
                done,
                terminated,
            )
        )
        adv, target = vtrace_advantage_estimate(*moved, rho_thresh=rho_thresh, c_thresh=c_thresh)
        return adv.transpose(time_dim, -2), target.transpose(time_dim, -2)
    _check(log_pi, log_mu, state_value, next_state_value, reward)
    terminated = terminated.bool().reshape(reward.shape)
    done = done.bool().reshape(reward.shape) | terminated
    not_term = (~terminated).to(reward.dtype)
    ratio = (log_pi - log_mu).exp()
    rho = ratio.clamp_max(rho_thresh)
    delta = rho * (reward + gamma * not_term * next_state_value - state_value)
    target = _discounted_cumsum(delta, gamma * ratio.clamp_max(c_thresh), done) + state_value
    # v'_{t+1}: the next step's target within a trajectory, V(s_{t+1}) where it ends
    following = torch.cat([target[..., 1:, :], next_state_value[..., -1:, :]], dim=-2)
    following = torch.where(done, next_state_value, following)
    advantage = rho * (reward + gamma * not_term * following - state_value)
    return advantage, target


class ValueEstimatorBase(nn.Module):
    """Reads a trajectory batch, runs the critic on ``s`` and ``s'``, writes the targets.

    Input batches are ``[*B, T]`` with time last (the collectors' layout) or ``[T]``.

    Args:
        gamma: discount.
        value_network: the critic (a tensordict module writing ``value_key``).
        differentiable: keep the graph through the critic (default: no grad).
        advantage_key: where to write the advantage.
        value_target_key: where to write the value target.
        value_key: the critic's output key.
        skip_existing: use the values already in the batch (``value_key`` and
            ``("next", value_key)``) instead of running the critic.
        average_rewards: standardise the rewards over the batch first.
        shifted, vectorized, deactivate_vmap: torchrl's implementation choices; the
            results do not depend on them here.
        time_dim: the time dimension, the batch's last (the only one supported).
        device: CPU only.
        auto_reset_env: torchrl's option, accepted at False.
    """

    def __init__(
        self,
        *,
        gamma: float,
        value_network: nn.Module | None,
        differentiable: bool = False,
        advantage_key: str | None = "advantage",
        value_target_key: str | None = "value_target",
        value_key: str | None = "state_value",
        skip_existing: bool | None = None,
        average_rewards: bool = False,
        shifted: bool = False,
        vectorized: bool | None = None,
        deactivate_vmap: bool = False,
        time_dim: int | None = None,
        device: torch.device | str | None = None,
        auto_reset_env: bool = False,
    ) -> None:
        super().__init__()
        if device is not None and torch.device(device).type != "cpu":
            raise NotImplementedError(f"device={device!r}: the value estimators run on CPU")
        if time_dim not in (None, -1):
            raise NotImplementedError(
                f"time_dim={time_dim}: the time dimension is the batch's last one"
            )
        if auto_reset_env:
            raise NotImplementedError("auto_reset_env=True is not supported")
        self.gamma = float(gamma)
        # not registered as a submodule: the loss owns the critic, we only call it
        self.__dict__["value_network"] = value_network
        self.differentiable = differentiable
        self.advantage_key = advantage_key or "advantage"
        # read under "next" (torchrl's set_keys(done="end-of-life", terminated="end-of-life"))
        self.reward_key, self.done_key, self.terminated_key = "reward", "done", "terminated"
        self.value_target_key = value_target_key or "value_target"
        self.value_key = value_key or "state_value"
        self.skip_existing = bool(skip_existing)
        self.average_rewards = average_rewards

    _key_attrs = {
        "advantage": "advantage_key",
        "value_target": "value_target_key",
        "value": "value_key",
        "reward": "reward_key",
        "done": "done_key",
        "terminated": "terminated_key",
    }

    def set_keys(self, **kwargs) -> ValueEstimatorBase:
        """Renames the entries read/written, with torchrl's names (``advantage``,
        ``value_target``, ``value``; ``reward``, ``done``, ``terminated``, read under
        ``"next"``)."""
        for name, key in kwargs.items():
            if name not in self._key_attrs:
                raise ValueError(f"unknown key {name!r}; accepted: {sorted(self._key_attrs)}")
            setattr(self, self._key_attrs[name], key)
        return self

    def _values(self, td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """Runs the critic on current and next observations in one call; writes both values."""
        net = self.value_network
        existing = self.skip_existing and (
            self.value_key in td.keys(True) and ("next", self.value_key) in td.keys(True)
        )
        if net is None or existing:
            return td.get(self.value_key), td.get(("next", self.value_key))
        keys = list(net.in_keys)
        if is_plain_module(net):

            def call(both):
                return net.module(*(both.get(k) for k in keys))
        else:

            def call(both):
                return net(both).get(self.value_key)

        with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
            value, next_value = current_and_next(call, td, keys, net)
        td.set(self.value_key, value)
        td.set(("next", self.value_key), next_value)
        return value, next_value

    @staticmethod
    def _check_params(params, target_params) -> None:
        if params is not None or target_params is not None:
            raise NotImplementedError(
                "params/target_params: the estimators call the critic with its own parameters"
            )

    def _read(self, td: TensorDictBase):
        if td.batch_dims == 0:
            raise ValueError(
                "value estimators need a batch with a time dimension, got batch_size=[]"
            )
        value, next_value = self._values(td)
        reward = batch_entry(td, next_key(self.reward_key))
        terminated = td.get(next_key(self.terminated_key), None)
        done = td.get(next_key(self.done_key), None)
        if terminated is None and done is None:
            raise KeyError(
                f"the batch has neither ('next', {self.terminated_key!r}) nor "
                f"('next', {self.done_key!r})"
            )
        if terminated is None:
            terminated = done
        if done is None:
            done = terminated
        shape = reward.shape
        if self.average_rewards:
            reward = (reward - reward.mean()) / reward.std().clamp_min(1e-5)
        return (
            value,
            next_value.reshape(shape),
            reward,
            terminated.reshape(shape),
            done.reshape(shape),
        )

    def value_estimate(
        self, tensordict: TensorDictBase, target_params: TensorDictBase | None = None
    ) -> torch.Tensor:
        """Returns the value target without writing it.

        Args:
            tensordict: the batch.
            target_params: parameters for the value network (``TensorDict.from_module``
                layout of ``value_network``, e.g. a loss's target copies): the target is
                computed with them swapped in (torchrl's older API; ``with
                target_params.to_module(value_network):`` does the same).
        """
        if target_params is None:
            return self(tensordict.clone(False)).get(self.value_target_key)
        if isinstance(self, GAE):
            raise NotImplementedError(
                "GAE.value_estimate(target_params=...): GAE's target adds the current value, "
                "which target parameters would change too; use TD0/TD1/TDLambda estimators"
            )
        with target_params.to_module(self.value_network):
            return self(tensordict.clone(False)).get(self.value_target_key)


class GAE(ValueEstimatorBase):
    """Generalized advantage estimation writing ``advantage`` and ``value_target``.

    Args:
        gamma: discount.
        lmbda: GAE lambda.
        value_network: the critic.
        average_gae: standardise the advantage over the batch.
        differentiable: keep the graph through the critic.
    """

    def __init__(
        self,
        *,
        gamma: float,
        lmbda: float,
        value_network: nn.Module | None,
        average_gae: bool = False,
        differentiable: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(
            gamma=gamma, value_network=value_network, differentiable=differentiable, **kwargs
        )
        self.lmbda = float(lmbda)
        self.average_gae = average_gae

    def forward(
        self, tensordict: TensorDictBase, *, params=None, target_params=None
    ) -> TensorDictBase:
        self._check_params(params, target_params)
        value, next_value, reward, terminated, done = self._read(tensordict)
        gamma = discount(tensordict, self.gamma, reward)
        adv, target = generalized_advantage_estimate(
            gamma, self.lmbda, value, next_value, reward, done=done, terminated=terminated
        )
        if self.average_gae:
            adv = (adv - adv.mean()) / adv.std().clamp_min(1e-6)
        tensordict.set(self.advantage_key, adv)
        tensordict.set(self.value_target_key, target)
        return tensordict


class TDLambdaEstimator(ValueEstimatorBase):
    """TD(lambda) targets; ``advantage = value_target - state_value``.

    Args:
        gamma: discount.
        lmbda: lambda.
        value_network: the critic.
        average_rewards: unused, kept for signature compatibility.
        differentiable: keep the graph through the critic.
    """

    def __init__(
        self,
        *,
        gamma: float,
        lmbda: float,
        value_network: nn.Module | None,
        differentiable: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(
            gamma=gamma, value_network=value_network, differentiable=differentiable, **kwargs
        )
        self.lmbda = float(lmbda)

    def forward(
        self, tensordict: TensorDictBase, *, params=None, target_params=None
    ) -> TensorDictBase:
        self._check_params(params, target_params)
        value, next_value, reward, terminated, done = self._read(tensordict)
        gamma = discount(tensordict, self.gamma, reward)
        target = td_lambda_return_estimate(
            gamma, self.lmbda, next_value, reward, done=done, terminated=terminated
        )
        tensordict.set(self.advantage_key, target - value)
        tensordict.set(self.value_target_key, target)
        return tensordict


class TD1Estimator(TDLambdaEstimator):
    """Monte-Carlo-like TD(1) targets (bootstrapped at truncation and at the batch end)."""

    def __init__(self, *, gamma: float, value_network: nn.Module | None, **kwargs) -> None:
        kwargs.pop("lmbda", None)
        super().__init__(gamma=gamma, lmbda=1.0, value_network=value_network, **kwargs)


class TD0Estimator(ValueEstimatorBase):
    """One-step TD targets ``r + gamma * (1 - terminated) * V(s')``."""

    def forward(
        self, tensordict: TensorDictBase, *, params=None, target_params=None
    ) -> TensorDictBase:
        self._check_params(params, target_params)
        value, next_value, reward, terminated, _ = self._read(tensordict)
        gamma = discount(tensordict, self.gamma, reward)
        target = td0_return_estimate(gamma, next_value, reward, terminated)
        tensordict.set(self.advantage_key, target - value)
        tensordict.set(self.value_target_key, target)
        return tensordict


class VTrace(ValueEstimatorBase):
    """V-trace targets and advantages for data collected by an older policy (IMPALA):
    writes ``advantage`` and ``value_target`` (see :func:`vtrace_advantage_estimate`).

    The behaviour policy's log-probabilities are read from the batch (``sample_log_prob``,
    what the collecting actor wrote); the learner's are computed by ``actor_network`` on the
    batch's observations and actions.

    Args:
        gamma: discount.
        actor_network: the probabilistic actor being trained (``get_dist``).
        value_network: the critic.
        rho_thresh: clip of the importance weights of the temporal differences (default 1).
        c_thresh: clip of the importance weights of the trace (default 1).
        average_adv: standardise the advantage over the batch.
        differentiable: keep the graph through the critic and the actor.
        **kwargs: as :class:`ValueEstimatorBase` (keys, ``skip_existing``...).
    """

    _key_attrs = {
        **ValueEstimatorBase._key_attrs,
        "sample_log_prob": "sample_log_prob_key",
        "action": "action_key",
    }

    def __init__(
        self,
        *,
        gamma: float,
        actor_network: nn.Module,
        value_network: nn.Module | None,
        rho_thresh: float | torch.Tensor = 1.0,
        c_thresh: float | torch.Tensor = 1.0,
        average_adv: bool = False,
        differentiable: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(
            gamma=gamma, value_network=value_network, differentiable=differentiable, **kwargs
        )
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                "VTrace needs a probabilistic actor (with get_dist) to compute the learner's "
                f"log-probabilities, got {type(actor_network).__name__}"
            )
        self.__dict__["actor_network"] = actor_network  # owned by the loss, as the critic
        self.rho_thresh = float(rho_thresh)
        self.c_thresh = float(c_thresh)
        self.average_adv = average_adv
        self.sample_log_prob_key = "sample_log_prob"
        self.action_key = "action"

    def _log_pi(self, tensordict: TensorDictBase, like: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
            dist = self.actor_network.get_dist(tensordict)
            log_pi = dist.log_prob(tensordict.get(self.action_key))
        if log_pi.numel() != like.numel():  # torch.distributions keep the action's dims
            log_pi = log_pi.sum(-1)
        return log_pi.reshape(like.shape)

    def forward(
        self, tensordict: TensorDictBase, *, params=None, target_params=None
    ) -> TensorDictBase:
        self._check_params(params, target_params)
        value, next_value, reward, terminated, done = self._read(tensordict)
        log_mu = tensordict.get(self.sample_log_prob_key, None)
        if log_mu is None:
            raise KeyError(
                f"VTrace reads the collecting policy's log-probabilities at "
                f"{self.sample_log_prob_key!r}, absent from the batch: collect with an actor "
                "built with return_log_prob=True"
            )
        log_pi = self._log_pi(tensordict, reward)
        gamma = discount(tensordict, self.gamma, reward)
        adv, target = vtrace_advantage_estimate(
            gamma,
            log_pi,
            log_mu.reshape(reward.shape),
            value,
            next_value,
            reward,
            done=done,
            terminated=terminated,
            rho_thresh=self.rho_thresh,
            c_thresh=self.c_thresh,
        )
        if self.average_adv:
            adv = (adv - adv.mean()) / adv.std().clamp_min(1e-5)
        tensordict.set(self.advantage_key, adv)
        tensordict.set(self.value_target_key, target)
        return tensordict


_ESTIMATORS = {
    ValueEstimators.TD0: TD0Estimator,
    ValueEstimators.TD1: TD1Estimator,
    ValueEstimators.TDLambda: TDLambdaEstimator,
    ValueEstimators.GAE: GAE,
    ValueEstimators.VTrace: VTrace,
}


def default_value_kwargs(value_type: ValueEstimators | str) -> dict:
    """torchrl's default hyperparameters of an estimator type: ``gamma`` 0.99, ``lmbda``
    0.95 for GAE and TD(lambda), ``differentiable=True`` (hand-written losses build their
    estimators from these; rl_trainers' own losses call the estimators without gradients)."""
    if isinstance(value_type, str):
        value_type = estimator_type(value_type)
    kwargs = {"gamma": 0.99, "differentiable": True}
    if value_type in (ValueEstimators.GAE, ValueEstimators.TDLambda):
        kwargs["lmbda"] = 0.95
    return kwargs


def make_estimator(value_type: ValueEstimators | str, **kwargs) -> ValueEstimatorBase:
    """Builds the estimator named by ``value_type`` (enum member or its string value)."""
    if isinstance(value_type, str):
        value_type = estimator_type(value_type)
    default_lmbda = default_value_kwargs(value_type).get("lmbda")
    if default_lmbda is not None:
        kwargs.setdefault("lmbda", default_lmbda)
    if value_type in (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.VTrace):
        kwargs.pop("lmbda", None)
    return _ESTIMATORS[value_type](**kwargs)
