"""torchrl's "Reinforcement Learning (PPO) with TorchRL Tutorial" (coding_ppo), ported.

The tutorial's script with ``torchrl`` replaced by ``rl_trainers`` and smaller sizes. It
trains on ``InvertedDoublePendulum-v5`` when mujoco is installed (the tutorial's v4 is
deprecated in gymnasium 1.x), on ``Pendulum-v1`` otherwise. The asserts check what the
tutorial prints: the normalisation constants, the specs, the rollout and module outputs, the
GAE entries, finite losses, trained parameters and the logs of the training loop.
"""

from __future__ import annotations

import importlib.util
import math
from collections import defaultdict

import pytest
import torch
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torch import multiprocessing, nn
from tqdm import tqdm

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data.replay_buffers import ReplayBuffer
from rl_trainers.data.replay_buffers.samplers import SamplerWithoutReplacement
from rl_trainers.data.replay_buffers.storages import LazyTensorStorage
from rl_trainers.envs import Compose, DoubleToFloat, ObservationNorm, StepCounter, TransformedEnv
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import ExplorationType, check_env_specs, set_exploration_type
from rl_trainers.modules import ProbabilisticActor, TanhNormal, ValueOperator
from rl_trainers.objectives import ClipPPOLoss
from rl_trainers.objectives.value import GAE

HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None
ENV_NAME = "InvertedDoublePendulum-v5" if HAS_MUJOCO else "Pendulum-v1"
OBS_DIM = 9 if HAS_MUJOCO else 3

is_fork = multiprocessing.get_start_method() == "fork"
device = torch.device(0) if torch.cuda.is_available() and not is_fork else torch.device("cpu")
num_cells = 64  # 256: number of cells in each layer
lr = 3e-4
max_grad_norm = 1.0
frames_per_batch = 200  # 1000
total_frames = 400  # 50_000
sub_batch_size = 64
num_epochs = 2  # 10
clip_epsilon = 0.2
gamma = 0.99
lmbda = 0.95
entropy_eps = 1e-4


def make_env():
    base_env = GymEnv(ENV_NAME, device=device)
    env = TransformedEnv(
        base_env,
        Compose(
            # normalize observations
            ObservationNorm(in_keys=["observation"]),
            DoubleToFloat(),
            StepCounter(),
        ),
    )
    env.transform[0].init_stats(num_iter=100, reduce_dim=0, cat_dim=0)  # 1000
    return env


def make_modules(env, distribution_kwargs=None):
    actor_net = nn.Sequential(
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(2 * env.action_spec.shape[-1], device=device),
        NormalParamExtractor(),
    )
    policy_module = TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"])
    if distribution_kwargs is None:
        distribution_kwargs = {
            "low": env.action_spec_unbatched.space.low,
            "high": env.action_spec_unbatched.space.high,
        }
    policy_module = ProbabilisticActor(
        module=policy_module,
        spec=env.action_spec,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs=distribution_kwargs,
        return_log_prob=True,
        # we'll need the log-prob for the numerator of the importance weights
    )
    value_net = nn.Sequential(
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(num_cells, device=device),
        nn.Tanh(),
        nn.LazyLinear(1, device=device),
    )
    value_module = ValueOperator(
        module=value_net,
        in_keys=["observation"],
    )
    return policy_module, value_module


def test_coding_ppo_tutorial_trains():
    torch.manual_seed(0)
    env = make_env()
    print("normalization constant shape:", env.transform[0].loc.shape)
    assert env.transform[0].loc.shape == (OBS_DIM,) == env.transform[0].scale.shape
    assert (env.transform[0].scale > 0).all()

    print("observation_spec:", env.observation_spec)
    print("reward_spec:", env.reward_spec)
    print("input_spec:", env.input_spec)
    print("action_spec (as defined by input_spec):", env.action_spec)
    assert env.observation_spec["observation"].dtype == torch.float32  # DoubleToFloat
    assert env.observation_spec["observation"].shape == (OBS_DIM,)
    assert "step_count" in env.observation_spec.keys()
    assert env.input_spec["full_action_spec", "action"].shape == env.action_spec.shape

    check_env_specs(env)

    rollout = env.rollout(3)
    print("rollout of three steps:", rollout)
    print("Shape of the rollout TensorDict:", rollout.batch_size)
    assert rollout.batch_size == (3,)
    assert rollout["observation"].dtype == torch.float32
    assert rollout["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3]

    policy_module, value_module = make_modules(env)
    print("Running policy:", policy_module(env.reset()))
    print("Running value:", value_module(env.reset()))
    out = policy_module(env.reset())
    assert {"loc", "scale", "action", "sample_log_prob"} <= set(out.keys())
    assert env.action_spec.is_in(out["action"].detach())
    assert value_module(env.reset())["state_value"].shape == (1,)

    collector = SyncDataCollector(
        env,
        policy_module,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        split_trajs=False,
        device=device,
    )
    replay_buffer = ReplayBuffer(
        storage=LazyTensorStorage(max_size=frames_per_batch),
        sampler=SamplerWithoutReplacement(),
    )
    advantage_module = GAE(
        gamma=gamma, lmbda=lmbda, value_network=value_module, average_gae=True, device=device
    )
    loss_module = ClipPPOLoss(
        actor_network=policy_module,
        critic_network=value_module,
        clip_epsilon=clip_epsilon,
        entropy_bonus=bool(entropy_eps),
        entropy_coef=entropy_eps,
        # these keys match by default but we set this for completeness
        critic_coef=1.0,
        loss_critic_type="smooth_l1",
    )
    optim = torch.optim.Adam(loss_module.parameters(), lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optim, total_frames // frames_per_batch, 0.0
    )

    actor_before = [p.detach().clone() for p in policy_module.parameters()]
    value_before = [p.detach().clone() for p in value_module.parameters()]
    n_optim = 0

    logs = defaultdict(list)
    pbar = tqdm(total=total_frames)
    eval_str = ""

    # We iterate over the collector until it reaches the total number of frames it was
    # designed to collect:
    for i, tensordict_data in enumerate(collector):
        assert tensordict_data.batch_size == (frames_per_batch,)
        # we now have a batch of data to work with. Let's learn something from it.
        for _ in range(num_epochs):
            # We'll need an "advantage" signal to make PPO work.
            # We re-compute it at each epoch as its value depends on the value
            # network which is updated in the inner loop.
            advantage_module(tensordict_data)
            assert tensordict_data["advantage"].shape == (frames_per_batch, 1)
            assert tensordict_data["value_target"].shape == (frames_per_batch, 1)
            advantage = tensordict_data["advantage"]  # average_gae: standardised
            assert abs(advantage.mean().item()) < 1e-4 and advantage.std().item() == pytest.approx(
                1, abs=1e-3
            )
            data_view = tensordict_data.reshape(-1)
            replay_buffer.extend(data_view.cpu())
            for _ in range(frames_per_batch // sub_batch_size):
                subdata = replay_buffer.sample(sub_batch_size)
                loss_vals = loss_module(subdata.to(device))
                loss_value = (
                    loss_vals["loss_objective"]
                    + loss_vals["loss_critic"]
                    + loss_vals["loss_entropy"]
                )
                assert math.isfinite(loss_value.item())
                # the entropy bonus is weighted by entropy_coef
                torch.testing.assert_close(
                    loss_vals["loss_entropy"], -entropy_eps * loss_vals["entropy"].detach()
                )

                # Optimization: backward, grad clipping and optimization step
                loss_value.backward()
                # this is not strictly mandatory but it's good practice to keep
                # your gradient norm bounded
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), max_grad_norm)
                optim.step()
                optim.zero_grad()
                n_optim += 1

        logs["reward"].append(tensordict_data["next", "reward"].mean().item())
        pbar.update(tensordict_data.numel())
        cum_reward_str = (
            f"average reward={logs['reward'][-1]: 4.4f} (init={logs['reward'][0]: 4.4f})"
        )
        logs["step_count"].append(tensordict_data["step_count"].max().item())
        stepcount_str = f"step count (max): {logs['step_count'][-1]}"
        logs["lr"].append(optim.param_groups[0]["lr"])
        lr_str = f"lr policy: {logs['lr'][-1]: 4.4f}"
        if i % 10 == 0:
            # We evaluate the policy once every 10 batches of data.
            # Evaluation is rather simple: execute the policy without exploration
            # (take the expected value of the action distribution) for a given
            # number of steps (1000, which is our ``env`` horizon).
            # The ``rollout`` method of the ``env`` can take a policy as argument:
            # it will then execute this policy at each step.
            with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
                # execute a rollout with the trained policy
                eval_rollout = env.rollout(1000, policy_module)
                logs["eval reward"].append(eval_rollout["next", "reward"].mean().item())
                logs["eval reward (sum)"].append(eval_rollout["next", "reward"].sum().item())
                logs["eval step_count"].append(eval_rollout["step_count"].max().item())
                eval_str = (
                    f"eval cumulative reward: {logs['eval reward (sum)'][-1]: 4.4f} "
                    f"(init: {logs['eval reward (sum)'][0]: 4.4f}), "
                    f"eval step-count: {logs['eval step_count'][-1]}"
                )
                # deterministic: the actions are the TanhNormal's mode, no sampling
                again = policy_module(eval_rollout[:5].exclude("action", "loc", "scale"))
                torch.testing.assert_close(again["action"], eval_rollout[:5]["action"])
                del eval_rollout
        pbar.set_description(", ".join([eval_str, cum_reward_str, stepcount_str, lr_str]))

        # We're also using a learning rate scheduler. Like the gradient clipping,
        # this is a nice-to-have but nothing necessary for PPO to work.
        scheduler.step()
    pbar.close()

    n_batches = total_frames // frames_per_batch
    assert n_optim == n_batches * num_epochs * (frames_per_batch // sub_batch_size)
    assert len(logs["reward"]) == len(logs["step_count"]) == n_batches
    assert all(math.isfinite(r) for r in logs["reward"])
    assert len(logs["eval reward"]) == 1 and logs["eval step_count"][0] >= 1
    assert logs["lr"] == pytest.approx([lr, lr / 2])  # cosine annealing over 2 batches
    assert all(not torch.equal(a, b) for a, b in zip(actor_before, policy_module.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(value_before, value_module.parameters()))


@pytest.mark.parametrize(
    "bounds", ["min/max", "low/high"], ids=["older-min-max-kwargs", "low-high-kwargs"]
)
def test_coding_ppo_earlier_spellings(bounds):
    """Earlier versions of the tutorial: ``"min"``/``"max"`` TanhNormal bounds from
    ``action_spec.space``, and the ``entropy_coeff``/``critic_coeff`` names of torchrl >= 0.8."""
    torch.manual_seed(0)
    env = make_env()
    space = env.action_spec.space
    low, high = ("min", "max") if bounds == "min/max" else ("low", "high")
    policy_module, value_module = make_modules(env, {low: space.low, high: space.high})
    data = env.rollout(20, policy_module, break_when_any_done=False)
    assert ((data["action"] >= space.low) & (data["action"] <= space.high)).all()
    loss_module = ClipPPOLoss(
        actor_network=policy_module,
        critic_network=value_module,
        clip_epsilon=clip_epsilon,
        entropy_bonus=True,
        entropy_coeff=0.5,
        critic_coeff=2.0,
        loss_critic_type="l2",
    )
    GAE(gamma=gamma, lmbda=lmbda, value_network=value_module)(data)
    loss_vals = loss_module(data.detach())
    torch.testing.assert_close(loss_vals["loss_entropy"], -0.5 * loss_vals["entropy"])
    value = value_module(data.clone())["state_value"]
    want = 2.0 * (value - data["value_target"]).pow(2).mean()
    torch.testing.assert_close(loss_vals["loss_critic"], want)
