"""torchrl's sota-implementations/dqn/dqn_cartpole.py and utils_cartpole.py, ported by
renaming the imports.

CartPole-v1 with a thousand frames: the action spec read from
``env.specs["input_spec", "full_action_spec", "action"]``, a QValueActor with a Composite
spec, EGreedyModule annealed per batch, DQNLoss + HardUpdate, ``test_env.apply(dump_video)``
in the evaluation, and ``data["action_value"]`` read on every batch after the random
warm-up, including the last random one.
"""

from __future__ import annotations

import math

import torch
from tensordict.nn import TensorDictSequential

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import Composite, LazyTensorStorage, TensorDictReplayBuffer
from rl_trainers.envs import (
    ExplorationType,
    RewardSum,
    StepCounter,
    TransformedEnv,
    set_exploration_type,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.modules import MLP, EGreedyModule, QValueActor
from rl_trainers.objectives import DQNLoss, HardUpdate
from rl_trainers.record import VideoRecorder
from rl_trainers.record.loggers import generate_exp_name, get_logger


def make_env(env_name="CartPole-v1", device="cpu", from_pixels=False):
    env = GymEnv(env_name, device=device, from_pixels=from_pixels, pixels_only=False)
    env = TransformedEnv(env)
    env.append_transform(RewardSum())
    env.append_transform(StepCounter())
    return env


def make_dqn_model(env_name):
    proof_environment = make_env(env_name)
    input_shape = proof_environment.observation_spec["observation"].shape
    env_specs = proof_environment.specs
    num_outputs = env_specs["input_spec", "full_action_spec", "action"].space.n
    action_spec = env_specs["input_spec", "full_action_spec", "action"]
    mlp = MLP(
        in_features=input_shape[-1],
        activation_class=torch.nn.ReLU,
        out_features=num_outputs,
        num_cells=[32, 32],
    )
    return QValueActor(module=mlp, spec=Composite(action=action_spec), in_keys=["observation"])


dumped = []


def dump_video(module):
    dumped.append(type(module).__name__)
    if isinstance(module, VideoRecorder):
        module.dump()


def eval_model(actor, test_env, num_episodes=2):
    test_rewards = torch.zeros(num_episodes, dtype=torch.float32)
    for i in range(num_episodes):
        td_test = test_env.rollout(
            policy=actor,
            auto_reset=True,
            auto_cast_to_device=True,
            break_when_any_done=True,
            max_steps=10_000_000,
        )
        test_env.apply(dump_video)
        reward = td_test["next", "episode_reward"][td_test["next", "done"]]
        test_rewards[i] = reward.sum()
    return test_rewards.mean()


def run(log_dir, total_frames=1000, frames_per_batch=50, init_random_frames=500):
    torch.manual_seed(0)
    model = make_dqn_model("CartPole-v1")
    greedy_module = EGreedyModule(
        annealing_num_steps=1000, eps_init=1.0, eps_end=0.05, spec=model.spec
    )
    model_explore = TensorDictSequential(model, greedy_module)
    collector = SyncDataCollector(
        create_env_fn=make_env("CartPole-v1", "cpu"),
        policy=model_explore,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        device="cpu",
        storing_device="cpu",
        max_frames_per_traj=-1,
        init_random_frames=init_random_frames,
    )
    replay_buffer = TensorDictReplayBuffer(
        prefetch=10, batch_size=64, storage=LazyTensorStorage(max_size=10_000, device="cpu")
    )
    loss_module = DQNLoss(value_network=model, loss_function="l2", delay_value=True)
    loss_module.make_value_estimator(gamma=0.99)
    target_net_updater = HardUpdate(loss_module, value_network_update_interval=50)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=2.5e-4)
    exp_name = generate_exp_name("DQN", "CartPole_CartPole-v1")
    logger = get_logger("csv", logger_name=str(log_dir), experiment_name=exp_name)
    test_env = make_env("CartPole-v1", "cpu")
    collected_frames = 0
    q_losses = torch.zeros(2)
    for i, data in enumerate(collector):
        log_info = {}
        data = data.reshape(-1)
        current_frames = data.numel()
        replay_buffer.extend(data)
        collected_frames += current_frames
        greedy_module.step(current_frames)
        if collected_frames < init_random_frames:
            continue
        for j in range(2):
            loss_td = loss_module(replay_buffer.sample(64))
            q_loss = loss_td["loss"]
            optimizer.zero_grad()
            q_loss.backward()
            optimizer.step()
            target_net_updater.step()
            q_losses[j].copy_(q_loss.detach())
        log_info.update(
            {
                "train/q_values": (data["action_value"] * data["action"]).sum().item()
                / frames_per_batch,
                "train/q_loss": q_losses.mean().item(),
                "train/epsilon": greedy_module.eps,
            }
        )
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            if i % 5 == 0:
                model.eval()
                log_info["eval/reward"] = eval_model(model, test_env)
                model.train()
        for key, value in log_info.items():
            logger.log_scalar(key, value, step=collected_frames)
        collector.update_policy_weights_()
    collector.shutdown()
    return log_dir / exp_name


def test_dqn_cartpole_port_trains_and_logs(tmp_path):
    scalars = run(tmp_path) / "scalars" / "train"
    q_values = [r.split(",") for r in (scalars / "q_values.csv").read_text().split()]
    # the first training batch is the last random one: its action values are zeros, as in
    # torchrl; the following ones come from the network
    assert int(q_values[0][0]) == 500 and float(q_values[0][1]) == 0.0
    assert all(float(v) != 0.0 for _, v in q_values[1:])
    eps = [float(r.split(",")[1]) for r in (scalars / "epsilon.csv").read_text().split()]
    assert math.isclose(eps[0], 1 - 0.95 * 0.5, rel_tol=1e-5) and eps[-1] < eps[0]
    losses = [float(r.split(",")[1]) for r in (scalars / "q_loss.csv").read_text().split()]
    assert len(losses) == 11 and all(math.isfinite(v) for v in losses)
    # env.apply reaches the transforms, the base env and the env itself
    assert {"RewardSum", "StepCounter", "GymEnv", "TransformedEnv"} <= set(dumped)


def test_random_warmup_batches_hold_the_policy_outputs():
    model = make_dqn_model("CartPole-v1")
    policy = TensorDictSequential(model, EGreedyModule(spec=model.spec))
    collector = SyncDataCollector(
        make_env(), policy, frames_per_batch=8, total_frames=16, init_random_frames=8
    )
    random_batch, policy_batch = list(collector)
    for key in ("action_value", "chosen_action_value"):
        assert random_batch[key].shape == policy_batch[key].shape
        assert (random_batch[key] == 0).all()
