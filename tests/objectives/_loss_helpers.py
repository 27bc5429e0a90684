"""Small networks, batches and a Pendulum training loop shared by the gaps_losses tests."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torch import nn

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.envs import DoubleToFloat, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.modules import MLP, ProbabilisticActor, ValueOperator
from rl_trainers.modules.distributions import TanhNormal

OBS_DIM, ACT_DIM = 3, 2


class FixedDist:
    """A deterministic stand-in for TanhNormal: ``rsample_and_log_prob`` gives
    ``(2 tanh(loc), -sum(loc^2))`` (differentiable in ``loc``), ``log_prob(a)`` is
    ``-sum((a - 2 tanh(loc))^2)``."""

    def __init__(self, loc):
        self.loc = loc

    def rsample_and_log_prob(self):
        return 2 * torch.tanh(self.loc), -self.loc.pow(2).sum(-1)

    def log_prob(self, value):
        return -(value - 2 * torch.tanh(self.loc)).pow(2).sum(-1)


class StubActor(nn.Module):
    """A probabilistic actor without randomness (for hand-computed loss values)."""

    in_keys = ["observation"]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(OBS_DIM, ACT_DIM)

    def get_dist(self, td):
        return FixedDist(self.lin(td["observation"]))

    def sample(self, obs):
        return FixedDist(self.lin(obs)).rsample_and_log_prob()


def qvalue(action_key: str = "action", hidden: int = 8) -> ValueOperator:
    return ValueOperator(
        MLP(in_features=OBS_DIM + ACT_DIM, out_features=1, num_cells=[hidden]),
        in_keys=["observation", action_key],
    )


def batch(n: int = 6, terminated=None, action_key: str = "action") -> TensorDict:
    terminated = torch.zeros(n, 1, dtype=torch.bool) if terminated is None else terminated
    return TensorDict(
        {
            "observation": torch.randn(n, OBS_DIM),
            action_key: torch.rand(n, ACT_DIM) * 4 - 2,
            "next": {
                "observation": torch.randn(n, OBS_DIM),
                "reward": torch.randn(n, 1),
                "terminated": terminated,
                "done": terminated.clone(),
            },
        },
        batch_size=[n],
    )


def critic_q(ensemble, obs, act):
    """``Q_i(s, a)`` of every critic of ``ensemble``, ``[n_q, B]``."""
    return ensemble(obs, act).squeeze(-1)


def grads_of(module: nn.Module) -> list:
    return [p.grad for p in module.parameters()]


def stub_loss(loss_cls, make_critic=qvalue, **kwargs):
    """``(actor, loss)``: a seeded :class:`StubActor` and ``loss_cls(actor, make_critic(),
    gamma=0.9, loss_function="l2", **kwargs)`` with ``alpha = 0.5``, so that the entropy
    terms show in every formula."""
    torch.manual_seed(0)
    actor = StubActor()
    kwargs.setdefault("loss_function", "l2")
    loss = loss_cls(actor, make_critic(), gamma=0.9, **kwargs)
    with torch.no_grad():
        loss.log_alpha.fill_(math.log(0.5))
    return actor, loss


def trained_parts(actor, loss, nonzero_actor: bool = False) -> set:
    """Which of ``"actor"``, ``"critics"``, ``"log_alpha"`` got a gradient (for the actor,
    with ``nonzero_actor``, only a non-zero one)."""
    got = set()
    if any(g is not None and (not nonzero_actor or g.abs().sum() > 0) for g in grads_of(actor)):
        got.add("actor")
    if any(g is not None for g in grads_of(loss.qvalue_network_params)):
        got.add("critics")
    if loss.log_alpha.grad is not None:
        got.add("log_alpha")
    return got


def assert_finite_history(history: list[dict], length: int) -> None:
    """``length`` logged updates, every value finite."""
    assert len(history) == length
    for out in history:
        assert all(torch.isfinite(v).all() for v in out.values())


def pendulum_actor_critic(env):
    """torchrl's SAC recipe networks (TanhNormal actor, MLP critic) for ``env``."""
    spec = env.action_spec_unbatched
    actor_net = nn.Sequential(
        MLP(num_cells=[32, 32], out_features=2 * spec.shape[-1], activation_class=nn.ReLU),
        NormalParamExtractor(scale_mapping="biased_softplus_1.0", scale_lb=0.1),
    )
    actor = ProbabilisticActor(
        spec=spec,
        in_keys=["loc", "scale"],
        module=TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high},
        default_interaction_type=InteractionType.RANDOM,
    )
    critic = ValueOperator(
        in_keys=["action", "observation"],
        module=MLP(num_cells=[32, 32], out_features=1, activation_class=nn.ReLU),
    )
    with torch.no_grad():
        td = env.fake_tensordict()
        actor(td)
        critic(td)
    return actor, critic


def train_on_pendulum(make_loss, frames: int = 400, updates_per_batch: int = 4) -> list[dict]:
    """A few hundred frames of Pendulum through a collector and a replay buffer, one Adam
    over the loss's parameters, summing its ``loss_*`` entries; returns the logged losses."""
    torch.manual_seed(0)
    env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
    env.set_seed(0)
    actor, critic = pendulum_actor_critic(env)
    loss, updater = make_loss(actor, critic, env)
    optim = torch.optim.Adam(loss.parameters(), lr=3e-4)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(1000), batch_size=32)
    collector = SyncDataCollector(env, actor, frames_per_batch=100, total_frames=frames)
    history = []
    for data in collector:
        buffer.extend(data.reshape(-1))
        for _ in range(updates_per_batch):
            out = loss(buffer.sample())
            total = sum(v for k, v in out.items() if k.startswith("loss_"))
            optim.zero_grad()
            total.backward()
            optim.step()
            if updater is not None:
                updater.step()
            history.append({k: v.detach() for k, v in out.items()})
    collector.shutdown()
    return history
