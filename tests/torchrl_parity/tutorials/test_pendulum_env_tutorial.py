"""The "Pendulum: Writing your environment and transforms with TorchRL" tutorial, ported.

The tutorial's user code is kept (functions, class, transforms and calls), with ``torchrl``
replaced by ``rl_trainers`` and the training loop shortened (a few iterations over short
rollouts instead of 625 iterations of 100 steps). The module-level script of the tutorial is
split into tests that check what it prints: the specs, the reset and step TensorDicts, the
batched rollout and the training loop's finite, moving return.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_trainers.data import BoundedTensorSpec, CompositeSpec, UnboundedContinuousTensorSpec
from rl_trainers.envs import (
    CatTensors,
    EnvBase,
    Transform,
    TransformedEnv,
    UnsqueezeTransform,
)
from rl_trainers.envs.transforms.transforms import _apply_to_composite
from rl_trainers.envs.utils import check_env_specs, step_mdp

DEFAULT_X = np.pi
DEFAULT_Y = 1.0


# --- the tutorial's environment ---------------------------------------------------------------
def _step(tensordict):
    th, thdot = tensordict["th"], tensordict["thdot"]  # th := theta

    g_force = tensordict["params", "g"]
    mass = tensordict["params", "m"]
    length = tensordict["params", "l"]
    dt = tensordict["params", "dt"]
    u = tensordict["action"].squeeze(-1)
    u = u.clamp(-tensordict["params", "max_torque"], tensordict["params", "max_torque"])
    costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)

    new_thdot = thdot + (3 * g_force / (2 * length) * th.sin() + 3.0 / (mass * length**2) * u) * dt
    new_thdot = new_thdot.clamp(
        -tensordict["params", "max_speed"], tensordict["params", "max_speed"]
    )
    new_th = th + new_thdot * dt
    reward = -costs.view(*tensordict.shape, 1)
    done = torch.zeros_like(reward, dtype=torch.bool)
    out = TensorDict(
        {
            "th": new_th,
            "thdot": new_thdot,
            "params": tensordict["params"],
            "reward": reward,
            "done": done,
        },
        tensordict.shape,
    )
    return out


def angle_normalize(x):
    return ((x + torch.pi) % (2 * torch.pi)) - torch.pi


def _reset(self, tensordict):
    if tensordict is None or tensordict.is_empty():
        # if no ``tensordict`` is passed, we generate a single set of hyperparameters
        # Otherwise, we assume that the input ``tensordict`` contains all the relevant
        # parameters to get started.
        tensordict = self.gen_params(batch_size=self.batch_size)

    high_th = torch.tensor(DEFAULT_X, device=self.device)
    high_thdot = torch.tensor(DEFAULT_Y, device=self.device)
    low_th = -high_th
    low_thdot = -high_thdot

    # for non batch-locked environments, the input ``tensordict`` shape dictates the number
    # of simulators run simultaneously. In other contexts, the initial
    # random state's shape will depend upon the environment batch-size instead.
    th = (
        torch.rand(tensordict.shape, generator=self.rng, device=self.device) * (high_th - low_th)
        + low_th
    )
    thdot = (
        torch.rand(tensordict.shape, generator=self.rng, device=self.device)
        * (high_thdot - low_thdot)
        + low_thdot
    )
    out = TensorDict(
        {
            "th": th,
            "thdot": thdot,
            "params": tensordict["params"],
        },
        batch_size=tensordict.shape,
    )
    return out


def _make_spec(self, td_params):
    # Under the hood, this will populate self.output_spec["observation"]
    self.observation_spec = CompositeSpec(
        th=BoundedTensorSpec(
            low=-torch.pi,
            high=torch.pi,
            shape=(),
            dtype=torch.float32,
        ),
        thdot=BoundedTensorSpec(
            low=-td_params["params", "max_speed"],
            high=td_params["params", "max_speed"],
            shape=(),
            dtype=torch.float32,
        ),
        # we need to add the ``params`` to the observation specs, as we want
        # to pass it at each step during a rollout
        params=make_composite_from_td(td_params["params"]),
        shape=(),
    )
    # since the environment is stateless, we expect the previous output as input.
    # For this, ``EnvBase`` expects some state_spec to be available
    self.state_spec = self.observation_spec.clone()
    # action-spec will be automatically wrapped in input_spec when
    # `self.action_spec = spec` will be called supported
    self.action_spec = BoundedTensorSpec(
        low=-td_params["params", "max_torque"],
        high=td_params["params", "max_torque"],
        shape=(1,),
        dtype=torch.float32,
    )
    self.reward_spec = UnboundedContinuousTensorSpec(shape=(*td_params.shape, 1))


def make_composite_from_td(td):
    # custom function to convert a ``tensordict`` in a similar spec structure
    # of unbounded values.
    composite = CompositeSpec(
        {
            key: make_composite_from_td(tensor)
            if isinstance(tensor, TensorDictBase)
            else UnboundedContinuousTensorSpec(
                dtype=tensor.dtype, device=tensor.device, shape=tensor.shape
            )
            for key, tensor in td.items()
        },
        shape=td.shape,
    )
    return composite


def _set_seed(self, seed: int | None):
    rng = torch.manual_seed(seed)
    self.rng = rng


def gen_params(g=10.0, batch_size=None) -> TensorDictBase:
    """Returns a ``tensordict`` containing the physical parameters such as gravitational force and torque or speed limits."""  # noqa: E501
    if batch_size is None:
        batch_size = []
    td = TensorDict(
        {
            "params": TensorDict(
                {
                    "max_speed": 8,
                    "max_torque": 2.0,
                    "dt": 0.05,
                    "g": g,
                    "m": 1.0,
                    "l": 1.0,
                },
                [],
            )
        },
        [],
    )
    if batch_size:
        td = td.expand(batch_size).contiguous()
    return td


class PendulumEnv(EnvBase):
    metadata = {
        "render_modes": ["human", "rgb_array"],
        "render_fps": 30,
    }
    batch_locked = False

    def __init__(self, td_params=None, seed=None, device="cpu"):
        if td_params is None:
            td_params = self.gen_params()

        super().__init__(device=device, batch_size=[])
        self._make_spec(td_params)
        if seed is None:
            seed = torch.empty((), dtype=torch.int64).random_().item()
        self.set_seed(seed)

    # Helpers: _make_step and gen_params
    gen_params = staticmethod(gen_params)
    _make_spec = _make_spec

    # Mandatory methods: _step, _reset and _set_seed
    _reset = _reset
    _step = staticmethod(_step)
    _set_seed = _set_seed


# --- the tutorial's transforms ----------------------------------------------------------------
class SinTransform(Transform):
    def _apply_transform(self, obs: torch.Tensor) -> None:
        return obs.sin()

    # The transform must also modify the data at reset time
    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    # _apply_to_composite will execute the observation spec transform across all
    # in_keys/out_keys pairs and write the result in the observation_spec which
    # is of type ``Composite``
    @_apply_to_composite
    def transform_observation_spec(self, observation_spec):
        return BoundedTensorSpec(
            low=-1,
            high=1,
            shape=observation_spec.shape,
            dtype=observation_spec.dtype,
            device=observation_spec.device,
        )


class CosTransform(Transform):
    def _apply_transform(self, obs: torch.Tensor) -> None:
        return obs.cos()

    # The transform must also modify the data at reset time
    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    @_apply_to_composite
    def transform_observation_spec(self, observation_spec):
        return BoundedTensorSpec(
            low=-1,
            high=1,
            shape=observation_spec.shape,
            dtype=observation_spec.dtype,
            device=observation_spec.device,
        )


def make_transformed_env(env):
    """The tutorial's chain: unsqueeze (with its inverse), sin/cos, concatenation."""
    env = TransformedEnv(
        env,
        # ``Unsqueeze`` the observations that we will concatenate
        UnsqueezeTransform(
            unsqueeze_dim=-1,
            in_keys=["th", "thdot"],
            in_keys_inv=["th", "thdot"],
        ),
    )
    t_sin = SinTransform(in_keys=["th"], out_keys=["sin"])
    t_cos = CosTransform(in_keys=["th"], out_keys=["cos"])
    env.append_transform(t_sin)
    env.append_transform(t_cos)
    cat_transform = CatTensors(
        in_keys=["sin", "cos", "thdot"], dim=-1, out_key="observation", del_keys=False
    )
    env.append_transform(cat_transform)
    return env


# --- tests ------------------------------------------------------------------------------------
def test_env_specs_reset_and_random_step():
    # the env draws its seed from torch's generator: fixed here, since the tutorial's "th"
    # spec is bounded to [-pi, pi] and a start near pi can leave it within the 3 checked steps
    torch.manual_seed(0)
    env = PendulumEnv()
    check_env_specs(env)

    # the printed specs
    assert set(env.observation_spec.keys()) == {"th", "thdot", "params"}
    assert env.observation_spec["thdot"].high == 8
    assert set(env.observation_spec["params"].keys()) == {
        "max_speed",
        "max_torque",
        "dt",
        "g",
        "m",
        "l",
    }
    assert set(env.state_spec.keys()) == {"th", "thdot", "params"}
    assert env.reward_spec.shape == (1,)
    assert env.action_spec.shape == (1,)
    assert env.action_spec.high == 2.0

    td = env.reset()
    assert set(td.keys()) >= {"th", "thdot", "params", "done", "terminated"}
    assert td["th"].shape == () and -np.pi <= td["th"] <= np.pi
    assert td["params", "g"] == 10.0

    td = env.rand_step(td)
    assert -2.0 <= td["action"].item() <= 2.0
    assert td["next", "reward"].shape == (1,)
    assert td["next", "reward"].item() <= 0
    assert not td["next", "done"].any()
    # the dynamics: th' = th + dt * thdot', with thdot' = thdot + (15 sin th + 3 u) dt
    u = td["action"].squeeze(-1)
    want_thdot = td["thdot"] + (15.0 * td["th"].sin() + 3.0 * u) * 0.05
    torch.testing.assert_close(td["next", "thdot"], want_thdot)
    torch.testing.assert_close(td["next", "th"], td["th"] + want_thdot * 0.05)


def test_seed_repeats_the_reset():
    env = PendulumEnv(seed=3)
    first = env.reset()
    env.set_seed(3)
    again = env.reset()
    torch.testing.assert_close(first["th"], again["th"])
    torch.testing.assert_close(first["thdot"], again["thdot"])


def test_transformed_env_specs_and_simple_rollout():
    torch.manual_seed(0)
    env = make_transformed_env(PendulumEnv())
    check_env_specs(env)
    obs_spec = env.observation_spec
    assert obs_spec["observation"].shape == (3,)
    assert obs_spec["sin"].shape == (1,) and obs_spec["th"].shape == (1,)
    assert float(obs_spec["cos"].low) == -1 and float(obs_spec["cos"].high) == 1

    def simple_rollout(steps=100):
        # preallocate:
        data = TensorDict({}, [steps])
        # reset
        _data = env.reset()
        for i in range(steps):
            _data["action"] = env.action_spec.rand()
            _data = env.step(_data)
            data[i] = _data
            _data = step_mdp(_data, keep_other=True)
        return data

    data = simple_rollout(10)
    assert data.batch_size == (10,)
    assert data["observation"].shape == (10, 3)
    assert data["next", "observation"].shape == (10, 3)
    # CatTensors sorts its in_keys (torchrl's default): the observation is (cos, sin, thdot)
    torch.testing.assert_close(data["observation"][:, 0], data["th"].squeeze(-1).cos())
    torch.testing.assert_close(data["observation"][:, 1], data["th"].squeeze(-1).sin())
    torch.testing.assert_close(data["observation"][:, 2], data["thdot"].squeeze(-1))
    torch.testing.assert_close(data["observation"][1:], data["next", "observation"][:-1])


def test_batched_reset_step_and_rollout():
    env = make_transformed_env(PendulumEnv())
    batch_size = 10  # number of environments to be executed in batch
    td = env.reset(env.gen_params(batch_size=[batch_size]))
    assert td.batch_size == (batch_size,)
    assert td["observation"].shape == (batch_size, 3)
    assert td["params", "g"].shape == (batch_size,)
    td = env.rand_step(td)
    assert td["action"].shape == (batch_size, 1)
    assert td["next", "reward"].shape == (batch_size, 1)

    rollout = env.rollout(
        3,
        auto_reset=False,  # we're executing the reset out of the ``rollout`` call
        tensordict=env.reset(env.gen_params(batch_size=[batch_size])),
    )
    assert rollout.batch_size == (batch_size, 3)
    assert rollout["next", "observation"].shape == (batch_size, 3, 3)
    torch.testing.assert_close(
        rollout["observation"][:, 1:], rollout["next", "observation"][:, :-1]
    )


def test_training_a_simple_policy_through_the_simulator():
    env = make_transformed_env(PendulumEnv())
    torch.manual_seed(0)
    env.set_seed(0)

    net = nn.Sequential(
        nn.LazyLinear(64),
        nn.Tanh(),
        nn.LazyLinear(64),
        nn.Tanh(),
        nn.LazyLinear(64),
        nn.Tanh(),
        nn.LazyLinear(1),
    )
    policy = TensorDictModule(
        net,
        in_keys=["observation"],
        out_keys=["action"],
    )
    policy(env.reset())  # materialise the lazy layers before building the optimizer
    optim = torch.optim.Adam(policy.parameters(), lr=2e-3)

    batch_size = 8  # 32
    n_iter = 5  # 20_000 // batch_size
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optim, 20_000)
    logs = defaultdict(list)
    before = [p.detach().clone() for p in net.parameters()]
    for _ in range(n_iter):
        init_td = env.reset(env.gen_params(batch_size=[batch_size]))
        rollout = env.rollout(20, policy, tensordict=init_td, auto_reset=False)  # 100 steps
        traj_return = rollout["next", "reward"].mean()
        (-traj_return).backward()
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optim.step()
        optim.zero_grad()
        logs["return"].append(traj_return.item())
        logs["last_reward"].append(rollout[..., -1]["next", "reward"].mean().item())
        scheduler.step()

    assert rollout.batch_size == (batch_size, 20)
    # the reward is differentiable through the simulated trajectory
    assert gn > 0 and torch.isfinite(gn)
    assert all(np.isfinite(logs["return"])) and all(r <= 0 for r in logs["return"])
    assert len(logs["last_reward"]) == n_iter
    assert any(not torch.equal(b, p) for b, p in zip(before, net.parameters(), strict=True))


@pytest.mark.parametrize("batch_size", [(), (4,)])
def test_rollout_is_differentiable_in_the_action(batch_size):
    """The tutorial's premise: gradients flow from the rewards back to the actions."""
    env = make_transformed_env(PendulumEnv(seed=0))
    action = torch.zeros(*batch_size, 1, requires_grad=True)

    def policy(td):
        td["action"] = action.expand(*td.batch_size, 1)
        return td

    init_td = env.reset(env.gen_params(batch_size=list(batch_size)))
    rollout = env.rollout(5, policy, tensordict=init_td, auto_reset=False)
    rollout["next", "reward"].sum().backward()
    assert action.grad is not None and action.grad.abs().sum() > 0
