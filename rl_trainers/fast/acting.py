"""Lean acting paths for the common actors: MLP -> logits -> categorical sample, and
network -> (loc, scale) -> Gaussian or TanhNormal sample.

They replace the policy's forward on a TensorDict per step in a collector's array rollout,
under the switch ``LEAN_ACTING``. The collector decides where they apply (an exact
``ProbabilisticActor`` of the right shape: ``rl_trainers.collectors.utils.lean_acting``) and
builds them; the env's array rollout (``GymWrapper.rollout_batch``) runs them.

A collector's policy call on a small network is mostly per-op and per-call overhead (the
TensorDict reads and writes, the distribution object, the one-hot action and its cast, the
log-probability), measured at ~95 us per call for PPO's 64x64 CartPole actor against ~20 us
for the network alone. :class:`CategoricalActing` splits that call in two:

* per step, only what the next action needs: the network's logits and a sampled index,
  with the same ops and random draws as ``ProbabilisticActor.forward``;
* per batch, the rest on all steps at once: the one-hot (or index) actions and their
  log-probabilities, from the stacked logits and indices.

:class:`GaussianActing` serves continuous actors (``IndependentNormal`` or ``TanhNormal``
over a network's ``loc`` and ``scale``): per step it makes the same calls as the policy's
forward (the network on the observation tensor, the distribution, its sample and
log-probability) without the TensorDict reads and writes; the entries of all steps are
stacked once per batch.

The values are those of the general path, bit for bit (the tests compare them).

An acting object gives the env's array rollout (``GymWrapper.rollout_batch``) what it needs:
``obs_key`` and ``out_keys``, ``step(obs)`` (one step's record), ``env_action(record,
convert)`` (what the env takes), ``batch_outputs(records)`` (the policy's entries for
stacked steps, in its write order), and ``n_actions`` (the number of categories a
categorical path samples from, None for a continuous one) with ``one_hot``, for the env to
check that what it samples is what it takes.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, interaction_type

from rl_trainers.fast.mlp import has_hooks, mlp_forward

__all__ = ["CategoricalActing", "GaussianActing", "sampling_input"]


def sampling_input(
    tensordict: TensorDictBase, policy: Any, module: Any, *networks: torch.nn.Module
) -> torch.Tensor | None:
    """The ``[B, in]`` observation a lean path acts on, or None where the policy's own
    forward must run: a hook on the policy, its module or ``networks``, gradients on, an
    interaction other than sampling, or another input."""
    if any(has_hooks(m) for m in (policy, module, *networks)):
        return None
    if torch.is_grad_enabled() or interaction_type() != InteractionType.RANDOM:
        return None
    obs = tensordict.get(module.in_keys[0], None)
    if not isinstance(obs, torch.Tensor) or obs.dim() != 2:
        return None
    return obs


class CategoricalActing:
    """The acting maths of a ``ProbabilisticActor`` over an ``MLP``'s categorical logits.

    ``plan`` is the MLP's ``(acts, biases, params)`` for the fused maths
    (:func:`~rl_trainers.fast.mlp.fused_mlp_parts`); ``one_hot``: the distribution is a
    ``OneHotCategorical`` (else a ``Categorical``). One instance serves one batch (it holds
    the network's parameters as they are when it is built).
    """

    def __init__(self, policy: Any, plan: tuple, one_hot: bool) -> None:
        module = policy.module
        self.obs_key = module.in_keys[0]
        self.logits_key = module.out_keys[0]
        self.action_key = policy.action_key
        self.log_prob_key = policy.log_prob_key if policy.return_log_prob else None
        self.out_keys = [self.logits_key, self.action_key]
        if self.log_prob_key is not None:
            self.out_keys.append(self.log_prob_key)
        self.one_hot = one_hot
        # a one-hot sample's own dtype (OneHotCategorical's ``dtype``), then the spec's
        self.one_hot_dtype = policy.distribution_kwargs.get("dtype")
        self.action_dtype = policy._action_dtype
        self._plan = plan
        acts, biases, params = plan
        # the last layer's weight: [n_actions, hidden]
        self.n_actions = params[-2 if biases[-1] else -1].shape[0]
        self._noise: torch.Tensor | None = None

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """The network's output on one step's ``[B, in]`` observation."""
        acts, biases, params = self._plan
        return mlp_forward(obs, acts, biases, params, None)

    def sample(self, logits: torch.Tensor) -> torch.Tensor:
        """``[B, 1]`` sampled indices: ``Categorical._sample_index``'s ops and draws, with
        the exponential noise drawn into a reused buffer."""
        noise = self._noise
        if noise is None or noise.shape != logits.shape:
            noise = self._noise = torch.empty_like(logits)
        noise.exponential_().clamp_min_(torch.finfo(logits.dtype).tiny)
        return (logits - noise.log_()).argmax(-1, keepdim=True)

    def outputs(self, logits: torch.Tensor, index: torch.Tensor) -> dict[str, torch.Tensor]:
        """The policy's entries for stacked steps, in the order it writes them: ``logits``,
        the action (one-hot or index, cast to the spec's dtype) and its log-probability.

        Args:
            logits: ``[*B, T, n]`` stacked logits.
            index: ``[*B, T, 1]`` stacked sampled indices.
        """
        if self.one_hot:  # 0/1 values: built in the final dtype, no cast needed
            dtype = self.action_dtype or self.one_hot_dtype or logits.dtype
            action = torch.zeros(logits.shape, dtype=dtype).scatter_(-1, index, 1)
        else:
            action = index.squeeze(-1)
            if self.action_dtype is not None and action.dtype != self.action_dtype:
                action = action.to(self.action_dtype)
        out = {self.logits_key: logits, self.action_key: action}
        if self.log_prob_key is not None:
            log_prob = torch.log_softmax(logits, -1).gather(-1, index).squeeze(-1)
            out[self.log_prob_key] = log_prob
        return out

    # --- the array rollout's interface ----------------------------------------------------
    def step(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: the logits and the ``[B, 1]`` sampled indices."""
        logits = self.logits(obs)
        return logits, self.sample(logits)

    def env_action(self, record: tuple[torch.Tensor, torch.Tensor], convert: Any) -> Any:
        """The env takes the sampled index itself (its own array)."""
        return record[1].numpy().reshape(-1).copy()

    def batch_outputs(self, records: list[tuple[torch.Tensor, torch.Tensor]], time_dim: int):
        logits, index = zip(*records)
        return self.outputs(torch.stack(logits, time_dim), torch.stack(index, time_dim))


class GaussianActing:
    """The acting calls of a ``ProbabilisticActor`` whose network writes ``loc`` and
    ``scale`` for an ``IndependentNormal`` or a ``TanhNormal``, on tensors.

    One instance serves one batch.

    ``split``, where the network is an MLP that runs fused followed by a state-independent
    scale (SB3's Gaussian policy: ``loc`` from the MLP, ``scale`` from a parameter, e.g.
    tensordict's ``AddStateIndependentNormalScale``), is ``(plan, head, scale_param)``: the
    MLP's ``(acts, biases, params)`` for :func:`~rl_trainers.fast.mlp.mlp_forward`, the
    module mapping ``loc`` to ``(loc, scale)``, and the parameter the scale is made from. Per
    step the MLP's maths then run without the module calls, and the scale, the same for every
    step of the batch, is made once and remade only when ``scale_param`` changes in place
    (``_version``) or ``loc`` changes shape.
    """

    one_hot = False
    n_actions = None  # continuous actions: the env converts them

    def __init__(self, policy: Any, split: tuple | None = None) -> None:
        module = policy.module
        self.obs_key = module.in_keys[0]
        self.net = module.module
        self.split = split
        self._scale: torch.Tensor | None = None
        self._scale_key: tuple = ()
        self.param_keys = list(module.out_keys)
        self.param_names = list(policy._dist_keys)
        self.dist_class = policy.distribution_class
        self.dist_kwargs = policy._dist_kwargs()
        self.action_key = policy.action_key
        self.log_prob_key = policy.log_prob_key if policy.return_log_prob else None
        self.action_dtype = policy._action_dtype
        self.out_keys = [*self.param_keys, self.action_key]
        if self.log_prob_key is not None:
            self.out_keys.append(self.log_prob_key)
        # without a joint sample-and-log-prob, the log-probability is the distribution's
        # elementwise density summed over the action: computed once for the stacked batch
        # (``batch_outputs``), the same values as step by step
        self.batch_log_prob = self.log_prob_key is not None and not hasattr(
            self.dist_class, "sample_and_log_prob"
        )

    def step(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One step: the network's parameters, the sampled action and its log-probability,
        by the calls ``ProbabilisticActor.forward`` makes."""
        if self.split is None:
            params = self.net(obs)
            if not isinstance(params, tuple):
                params = (params,)
        else:
            params = self._split_params(obs)
        dist = self.dist_class(**dict(zip(self.param_names, params)), **self.dist_kwargs)
        # gradients are off (:func:`sampling_input`): the sampling without its no_grad context
        if self.log_prob_key is not None and not self.batch_log_prob:
            action, log_prob = dist.rsample_and_log_prob()
        else:
            action, log_prob = dist.rsample(), None
        if self.action_dtype is not None and action.dtype != self.action_dtype:
            action = action.to(self.action_dtype)
        return (*params, action) if log_prob is None else (*params, action, log_prob)

    def _split_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loc, scale)`` as ``self.net(obs)`` computes them, from the MLP's maths and the
        batch's scale (made by the scale module itself, so the values are its own)."""
        (acts, biases, weights), head, scale_param = self.split
        loc = mlp_forward(obs, acts, biases, weights, None)
        key = (scale_param._version, loc.shape)
        if key != self._scale_key:
            self._scale = head(loc)[1]
            self._scale_key = key
        return loc, self._scale

    def env_action(self, record: tuple[torch.Tensor, ...], convert: Any) -> Any:
        """The action through the env's own conversion (clipped to a Box's bounds)."""
        return convert(record[len(self.param_keys)])

    def batch_outputs(self, records: list[tuple[torch.Tensor, ...]], time_dim: int):
        """The policy's entries for stacked steps, in the order it writes them."""
        columns = zip(*records)
        out = {key: torch.stack(column, time_dim) for key, column in zip(self.out_keys, columns)}
        if self.batch_log_prob:
            params = {name: out[key] for name, key in zip(self.param_names, self.param_keys)}
            dist = self.dist_class(**params, **self.dist_kwargs)
            action = out[self.action_key]
            out[self.log_prob_key] = dist.log_prob(action)
        return out
