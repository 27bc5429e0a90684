"""Conservative Q-learning (Kumar et al. 2020), for continuous and discrete actions.

Continuous (:class:`CQLLoss`, the CQL(H) variant with importance sampling): SAC's actor and
temperature, critics regressed on ``y = r + gamma * (1 - terminated) * V(s')`` and a
conservative term pushing down the values of actions the data does not contain. With
``pi`` the actor, ``Q_1, Q_2`` the critics, ``Q'`` their targets, ``N = num_random``,
``T = temperature`` and ``w = min_q_weight``:

* ``V(s') = min_i Q'_i(s', a')`` with ``a' ~ pi(s')`` (``- alpha * log pi(a'|s')`` unless
  ``deterministic_backup``), or with ``max_q_backup`` ``min_i max_j Q'_i(s', a'_j)`` over
  ``N`` actions ``a'_j ~ pi(s')``;
* ``loss_qvalue = sum_i mean(d(Q_i(s, a), y))``;
* per state, ``3N`` importance-weighted values ``Q_i(s, u_j) - log p_unif``,
  ``Q_i(s, a~_j) - log pi(a~_j|s)`` and ``Q_i(s, a'_j) - log pi(a'_j|s')`` with ``u_j``
  uniform over the action box, ``a~_j ~ pi(s)``, ``a'_j ~ pi(s')`` (samples and
  log-densities without gradient);
  ``cql_i = w * (T * logsumexp(values_i / T) - Q_i(s, a))``;
  ``loss_cql = mean(sum_i cql_i)``, or with ``with_lagrange``
  ``alpha' * sum_i (mean(cql_i) - lagrange_thresh)`` (``alpha'`` not differentiated) and
  ``loss_alpha_prime = -0.5 * alpha' * sum_i (mean(cql_i) - lagrange_thresh)`` (``cql_i``
  not differentiated, so this term trains ``log_alpha_prime`` only);
* ``loss_actor = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))`` (critics detached),
  ``loss_actor_bc = mean(alpha * log pi(a~|s) - log pi(a|s))`` (behaviour cloning, for the
  first steps of offline training), ``loss_alpha`` as in SAC.

Discrete (:class:`DiscreteCQLLoss`): DQN's TD loss
``loss_qvalue = 0.5 * mean(d(Q(s, a), r + gamma * (1 - terminated) * max_a' Q'(s', a')))``
and ``loss_cql = mean(logsumexp_a Q(s, .) - Q(s, a))``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_trainers.objectives.common import (
    action_bounds,
    batch_entry,
    distance_loss,
    loss_action_spec,
    next_key,
    one_step_target,
)
from rl_trainers.objectives.dqn import DQNLoss
from rl_trainers.objectives.sac import SACLoss

__all__ = ["CQLLoss", "DiscreteCQLLoss"]


def _repeat(x: torch.Tensor, times: int) -> torch.Tensor:
    """Each row ``times`` times in a row (``[B, ...] -> [B * times, ...]``)."""
    return x.repeat_interleave(times, dim=0)


def _write(tensordict: TensorDictBase, key: str, value: torch.Tensor) -> None:
    """Writes the ``[B, ...]`` rows ``value`` of the flattened batch into ``tensordict``."""
    tensordict.set(key, value.reshape(*tensordict.batch_size, *value.shape[1:]))


class CQLLoss(SACLoss):
    """Continuous CQL loss (SAC with a conservative critic term), torchrl's signature.

    Optimise ``loss_actor`` (or ``loss_actor_bc`` during behaviour-cloning warm-up),
    ``loss_qvalue + loss_cql``, ``loss_alpha`` and, with ``with_lagrange``,
    ``loss_alpha_prime``; torchrl's CQL recipes sum the critic terms for one optimiser.

    Args:
        actor_network: a probabilistic actor with reparameterised samples (TanhNormal).
        qvalue_network: a ValueOperator reading ``[obs, "action"]`` (two critics are made).
        loss_function: critic distance ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init, min_alpha, max_alpha, fixed_alpha, target_entropy, action_spec: the
            temperature, as in :class:`~rl_trainers.objectives.SACLoss`. The action spec's
            bounds also bound the uniform actions of the conservative term (default
            ``[-1, 1]``, as torchrl).
        delay_actor: unused (the actor has no target network), as in torchrl.
        delay_qvalue: keep target critics (update them with SoftUpdate).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        temperature: ``T`` of the logsumexp.
        min_q_weight: ``w``, the weight of the conservative term.
        max_q_backup: back up ``max_j`` over ``num_random`` next actions.
        deterministic_backup: leave the entropy bonus out of the target.
        num_random: ``N``, the actions of each kind sampled per state.
        with_lagrange: tune the conservative weight ``alpha' = exp(log_alpha_prime)``
            towards a gap of ``lagrange_thresh`` (``loss_alpha_prime``, a constant 0
            without it).
        lagrange_thresh: the target gap.
        reduction: torchrl's option, accepted at ``"mean"`` (or None).
        priority_key: key of the per-sample squared TD errors written into the batch.
        deactivate_vmap: torchrl's option (no effect: the critics run as one batched call).
        scalar_output_mode: torchrl's option for ``reduction="none"``; with the mean
            reduction ``alpha`` and ``entropy`` are scalars whatever its value (None,
            ``"exclude"`` or ``"non_tensor"``).

    Example:
        >>> loss = CQLLoss(actor, qvalue, action_spec=env.action_spec, num_random=10)
        >>> out = loss(batch)
        >>> (out["loss_actor"] + out["loss_qvalue"] + out["loss_cql"] + out["loss_alpha"]).backward()
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        *,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec=None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        temperature: float = 1.0,
        min_q_weight: float = 1.0,
        max_q_backup: bool = False,
        deterministic_backup: bool = True,
        num_random: int = 10,
        with_lagrange: bool = False,
        lagrange_thresh: float = 0.0,
        reduction: str | None = None,
        priority_key: str | None = None,
        deactivate_vmap: bool = False,
        scalar_output_mode: str | None = None,
    ) -> None:
        if scalar_output_mode not in (None, "exclude", "non_tensor"):
            raise ValueError(
                "scalar_output_mode must be None, 'exclude' or 'non_tensor', got "
                f"{scalar_output_mode!r}"
            )
        super().__init__(
            actor_network,
            qvalue_network,
            num_qvalue_nets=2,
            loss_function=loss_function,
            alpha_init=alpha_init,
            min_alpha=min_alpha,
            max_alpha=max_alpha,
            action_spec=action_spec,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            delay_actor=delay_actor,
            delay_qvalue=delay_qvalue,
            gamma=gamma,
            reduction=reduction,
            priority_key=priority_key,
        )
        self.scalar_output_mode = scalar_output_mode
        if num_random < 1:
            raise ValueError(f"num_random must be >= 1, got {num_random}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)
        self.min_q_weight = float(min_q_weight)
        self.max_q_backup = max_q_backup
        self.deterministic_backup = deterministic_backup
        self.num_random = int(num_random)
        self.with_lagrange = with_lagrange
        self.target_action_gap = float(lagrange_thresh)
        if with_lagrange:
            self.log_alpha_prime = nn.Parameter(torch.zeros(()))
        spec = loss_action_spec(action_spec, actor_network)
        low, high = action_bounds(spec, default=(-1.0, 1.0))  # torchrl's default box
        self.register_buffer("_low", low, persistent=False)
        self.register_buffer("_high", high, persistent=False)

    def _default_out_keys(self) -> list[str]:
        keys = [
            "loss_actor",
            "loss_actor_bc",
            "loss_qvalue",
            "loss_cql",
            "loss_alpha",
            "alpha",
            "entropy",
            "loss_alpha_prime",
        ]
        return keys

    @property
    def alpha_prime(self) -> torch.Tensor:
        """The conservative weight ``exp(log_alpha_prime)`` (clamped to ``[0, 1e6]``)."""
        return self.log_alpha_prime.exp().clamp(0.0, 1e6)

    # -- sampling ---------------------------------------------------------------------------
    def _policy(self, td: TensorDictBase, next_: bool, repeat: int = 1):
        """The actor's distribution at ``s`` (or ``s'``), each state ``repeat`` times."""
        n = td.batch_size[0]
        obs = {
            k: _repeat(batch_entry(td, next_key(k) if next_ else k), repeat) for k in self._obs_keys
        }
        return self.actor_network.get_dist(TensorDict(obs, batch_size=[n * repeat]))

    def _critic_obs(self, td: TensorDictBase, next_: bool, repeat: int = 1) -> TensorDict:
        """The critics' non-action inputs, each state ``repeat`` times, at the top level."""
        n = td.batch_size[0]
        keys = [k for k in self._q_in_keys if k != self.action_key]
        data = {k: _repeat(batch_entry(td, next_key(k) if next_ else k), repeat) for k in keys}
        return TensorDict(data, batch_size=[n * repeat])

    @torch.no_grad()
    def _cql_samples(self, td: TensorDictBase) -> tuple[torch.Tensor, ...]:
        """``(uniform actions, a~ ~ pi(s), log pi(a~|s), a' ~ pi(s'), log pi(a'|s'))``, each
        ``num_random`` per state, rows ``[B * N]`` grouped by state; no gradient."""
        n, reps = td.batch_size[0], self.num_random
        action = td.get(self.action_key)
        u = torch.rand(n * reps, *action.shape[1:], dtype=action.dtype, device=action.device)
        uniform = self._low + (self._high - self._low) * u
        a_curr, logp_curr = self._policy(td, False, reps).rsample_and_log_prob()
        a_next, logp_next = self._policy(td, True, reps).rsample_and_log_prob()
        return uniform, a_curr, logp_curr, a_next, logp_next

    # -- the terms, as torchrl's methods: (loss, metadata) ----------------------------------
    @torch.no_grad()
    def _target(self, td: TensorDictBase) -> torch.Tensor:
        """``y`` ``[B, 1]`` (no gradient)."""
        n, critics = td.batch_size[0], self._target_net()
        if self.max_q_backup:
            a_next, _ = self._policy(td, True, self.num_random).rsample_and_log_prob()
            obs = self._critic_obs(td, True, self.num_random)
            q = critics(*self._q_inputs(obs, False, a_next))  # [n_q, B * N, 1]
            next_value = q.reshape(q.shape[0], n, self.num_random).max(-1).values.min(0).values
        else:
            a_next, logp_next = self._policy(td, True).rsample_and_log_prob()
            next_value = critics(*self._q_inputs(td, True, a_next)).min(0).values.squeeze(-1)
            if not self.deterministic_backup:
                next_value = next_value - self.alpha * logp_next
        return one_step_target(td, self.gamma, next_value.unsqueeze(-1), self).reshape(n, 1)

    def q_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The critics' TD loss; writes ``Q_1(s, a)``, ``Q_2(s, a)`` at ``"pred_q1"``,
        ``"pred_q2"`` (read by :meth:`cql_loss`). ``metadata["td_error"]``: squared errors
        ``[2, B]``."""
        td = self._flat(tensordict)
        target = self._target(td)
        q_data = self.qvalue_network_params(*self._q_inputs(td, False, td.get(self.action_key)))
        loss = distance_loss(q_data, target.unsqueeze(0), self.loss_function).mean((1, 2)).sum()
        _write(tensordict, "pred_q1", q_data[0])
        _write(tensordict, "pred_q2", q_data[1])
        td_error = (q_data.detach() - target).pow(2).squeeze(-1)
        return loss, {"td_error": td_error, "target_value": target.mean()}

    def _cql_per_critic(self, td: TensorDictBase) -> torch.Tensor:
        """``cql_i`` per critic and state, ``[2, B]`` (differentiable in the critics)."""
        q_data = td.get("pred_q1", None), td.get("pred_q2", None)
        if q_data[0] is None or q_data[1] is None:
            raise KeyError(
                "no predicted values at 'pred_q1'/'pred_q2': call q_loss before cql_loss"
            )
        q_data = torch.stack(q_data).squeeze(-1)  # [2, B]
        n, reps = td.batch_size[0], self.num_random
        uniform, a_curr, logp_curr, a_next, logp_next = self._cql_samples(td)
        obs = self._critic_obs(td, False, reps)
        obs3 = torch.cat([obs, obs, obs])
        actions = torch.cat([uniform, a_curr, a_next])
        q = self.qvalue_network_params(*self._q_inputs(obs3, False, actions))  # [2, 3BN, 1]
        q = q.reshape(q.shape[0], 3, n, reps)
        log_uniform = -torch.log(self._high - self._low).expand(uniform.shape[1:]).sum()
        densities = torch.stack(
            [
                log_uniform.expand(n, reps),
                logp_curr.reshape(n, reps),
                logp_next.reshape(n, reps),
            ]
        )  # [3, B, N]
        values = (q - densities).permute(0, 2, 1, 3).reshape(q.shape[0], n, 3 * reps)
        t = self.temperature
        return self.min_q_weight * (t * torch.logsumexp(values / t, dim=-1) - q_data)

    def cql_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The conservative term, from the ``Q_i(s, a)`` :meth:`q_loss` wrote; writes the
        per-critic terms at ``"cql_q1_loss"``, ``"cql_q2_loss"`` (for
        :meth:`alpha_prime_loss`)."""
        td = self._flat(tensordict)
        cql = self._cql_per_critic(td)
        _write(tensordict, "cql_q1_loss", cql[0])
        _write(tensordict, "cql_q2_loss", cql[1])
        if self.with_lagrange:
            loss = self.alpha_prime.detach() * (cql.mean(1) - self.target_action_gap).sum()
        else:
            loss = cql.sum(0).mean()
        return loss, {}

    def alpha_prime_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """``-0.5 * alpha' * sum_i (mean(cql_i) - lagrange_thresh)``, from the terms
        :meth:`cql_loss` wrote (not differentiated: only ``log_alpha_prime`` learns)."""
        if not self.with_lagrange:
            raise RuntimeError("alpha_prime_loss needs CQLLoss(with_lagrange=True)")
        td = self._flat(tensordict)
        cql = td.get("cql_q1_loss", None), td.get("cql_q2_loss", None)
        if cql[0] is None or cql[1] is None:
            raise KeyError(
                "no CQL terms at 'cql_q1_loss'/'cql_q2_loss': call cql_loss before alpha_prime_loss"
            )
        gap = (torch.stack(cql).detach().mean(1) - self.target_action_gap).sum()
        return -0.5 * self.alpha_prime * gap, {}

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """``mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))``, critics detached;
        ``metadata["log_prob"]`` (detached) feeds :meth:`alpha_loss`."""
        td = self._flat(tensordict)
        a_pi, logp = self._policy(td, False).rsample_and_log_prob()
        q_pi = self.qvalue_network_params(*self._q_inputs(td, False, a_pi), detach=True)
        loss = (self.alpha * logp - q_pi.min(0).values.squeeze(-1)).mean()
        return loss, {"log_prob": logp.detach()}

    def actor_bc_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """``mean(alpha * log pi(a~|s) - log pi(a|s))``: behaviour cloning of the batch's
        actions with SAC's entropy bonus; ``metadata["bc_log_prob"]``."""
        td = self._flat(tensordict)
        dist = self._policy(td, False)
        _, logp = dist.rsample_and_log_prob()
        bc_log_prob = dist.log_prob(td.get(self.action_key))
        loss = (self.alpha * logp - bc_log_prob).mean()
        return loss, {"bc_log_prob": bc_log_prob.detach().mean()}

    def alpha_loss(self, metadata: dict) -> tuple[torch.Tensor, dict]:
        """``-mean(log_alpha * (log pi + target_entropy))`` from :meth:`actor_loss`'s
        metadata."""
        log_prob = metadata["log_prob"]
        if self._target_entropy is None:
            raise RuntimeError(
                "cannot infer the target entropy: give CQLLoss an action_spec (or a number "
                "as target_entropy), or call the loss once on a batch"
            )
        return self._alpha_term(log_prob), {}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        flat = self._flat(tensordict)
        self._infer_target_entropy(flat.get(self.action_key))
        work = flat.clone(False)  # holds pred_q*, cql_q*_loss without touching the batch
        loss_qvalue, metadata = self.q_loss(work)
        loss_cql, _ = self.cql_loss(work)
        loss_actor_bc, _ = self.actor_bc_loss(work)
        loss_actor, actor_metadata = self.actor_loss(work)
        loss_alpha, _ = self.alpha_loss(actor_metadata)
        self._write_priority(tensordict, metadata["td_error"].max(0).values)
        out = {
            "loss_actor": loss_actor,
            "loss_actor_bc": loss_actor_bc,
            "loss_qvalue": loss_qvalue,
            "loss_cql": loss_cql,
            "loss_alpha": loss_alpha,
            "alpha": self.alpha,
            "entropy": -actor_metadata["log_prob"].mean(),
        }
        if self.with_lagrange:
            out["loss_alpha_prime"], _ = self.alpha_prime_loss(work)
        else:  # torchrl's cql_online.py reads it whatever with_lagrange
            out["loss_alpha_prime"] = torch.zeros((), dtype=loss_cql.dtype)
        return TensorDict(out, batch_size=[])


class DiscreteCQLLoss(DQNLoss):
    """Discrete CQL loss over a :class:`~rl_trainers.modules.QValueActor`.

    Optimise ``loss_qvalue + loss_cql`` (torchrl's sota script sums the two).

    Args:
        value_network: the Q-value actor (or an exploration wrapper around one), as for
            :class:`~rl_trainers.objectives.DQNLoss`.
        loss_function: ``"l2"``, ``"smooth_l1"`` or ``"l1"``.
        delay_value: keep a target network (update it with SoftUpdate/HardUpdate).
        gamma: discount (also settable with ``make_value_estimator(gamma=...)``).
        action_space: ``"one_hot"``, ``"categorical"`` or the action spec.
        priority_key: key of the per-sample TD errors written into the batch.
        reduction: torchrl's option, accepted at ``"mean"`` (or None).

    Example:
        >>> loss = DiscreteCQLLoss(qvalue_actor, delay_value=True)
        >>> out = loss(batch)  # loss_qvalue, loss_cql, td_error, pred_value, target_value
        >>> (out["loss_qvalue"] + out["loss_cql"]).backward()
    """

    #: where :meth:`value_loss` writes ``Q(s, .)`` for :meth:`cql_loss` (torchrl's key)
    pred_val_key = "pred_val"
    _dispatch_exclude = ("td_error", "pred_value", "target_value")

    def __init__(
        self,
        value_network: nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        gamma: float | None = None,
        action_space=None,
        priority_key: str | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            value_network,
            loss_function=loss_function,
            delay_value=delay_value,
            gamma=gamma,
            action_space=action_space,
            priority_key=priority_key,
            reduction=reduction,
        )

    def _default_out_keys(self) -> list[str]:
        return ["loss_qvalue", "loss_cql", "td_error", "pred_value", "target_value"]

    def value_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The TD loss alone: ``(loss, metadata)``; writes ``Q(s, .)`` at ``"pred_val"``
        (read by :meth:`cql_loss`) and the per-sample errors at ``priority_key``."""
        values, chosen, target, td_error = self._q_terms(tensordict)
        if not tensordict.is_locked:
            tensordict.set(self.pred_val_key, values)
        loss = 0.5 * distance_loss(chosen, target, self.loss_function).mean()
        metadata = {
            "td_error": td_error.mean(),
            "pred_value": values.detach().mean(),
            "target_value": target.mean(),
        }
        return loss, metadata

    def cql_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        """The conservative term alone, from the ``Q(s, .)`` :meth:`value_loss` wrote."""
        values = tensordict.get(self.pred_val_key, None)
        if values is None:
            raise KeyError(
                f"no predicted action values at {self.pred_val_key!r}: call value_loss "
                "before cql_loss"
            )
        chosen = self._chosen(values, tensordict.get(self.action_key))
        return (torch.logsumexp(values, dim=-1, keepdim=True) - chosen).mean(), {}

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        loss_qvalue, metadata = self.value_loss(tensordict)
        if tensordict.is_locked:  # cql_loss reads the values from the batch
            tensordict = tensordict.clone(False)
            tensordict.set(self.pred_val_key, self.value_network.action_values(tensordict))
        loss_cql, _ = self.cql_loss(tensordict)
        return TensorDict(
            {"loss_qvalue": loss_qvalue, "loss_cql": loss_cql, **metadata}, batch_size=[]
        )
