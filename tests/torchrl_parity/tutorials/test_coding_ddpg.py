"""The "TorchRL objectives: Coding a DDPG loss" tutorial, ported by replacing ``torchrl``
with ``rl_trainers``.

The tutorial writes its own ``DDPGLoss(LossModule)`` with ``convert_to_functional``, calls
the networks through ``params.to_module(network)`` and computes TD(lambda) targets over an
``ActorCriticWrapper`` run with the target parameters; it builds the networks with
``DdpgMlpActor``/``DdpgMlpQNet``, explores with ``OrnsteinUhlenbeckProcessModule`` and
stores ``[env, time]`` trajectories that a ``RandomCropTensorDict`` cuts into windows. Its
sections are tests below, with the tutorial's code kept and its sizes shrunk (HalfCheetah, a
few hundred frames).
"""

from __future__ import annotations

import importlib.util
import tempfile

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.data import Composite, CompositeSpec
from rl_trainers.data.replay_buffers import (
    LazyMemmapStorage,
    PrioritizedSampler,
    RandomSampler,
    TensorDictReplayBuffer,
)
from rl_trainers.envs import (
    CatTensors,
    DoubleToFloat,
    EnvCreator,
    ExplorationType,
    InitTracker,
    ObservationNorm,
    ParallelEnv,
    RandomCropTensorDict,
    RewardScaling,
    StepCounter,
    TransformedEnv,
)
from rl_trainers.envs.libs.gym import GymEnv
from rl_trainers.envs.utils import check_env_specs
from rl_trainers.modules import (
    DdpgMlpActor,
    DdpgMlpQNet,
    OrnsteinUhlenbeckProcessModule,
    ProbabilisticActor,
    TanhDelta,
    ValueOperator,
)
from rl_trainers.objectives import LossModule
from rl_trainers.objectives.utils import SoftUpdate, ValueEstimators, distance_loss
from rl_trainers.trainers import Recorder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None, reason="HalfCheetah needs mujoco"
)

device = torch.device("cpu")
backend = "gym"
env_library = None
env_name = None
reward_scaling = 5.0
max_frames_per_traj = 500
init_env_steps = 50  # 5000
env_per_collector = 2  # 4
traj_len = 20  # 200
frames_per_batch = env_per_collector * traj_len
total_frames = 3 * frames_per_batch  # 10_000
init_random_frames = frames_per_batch  # 5000
random_crop_len = 5  # 25
update_to_data = 4  # 64
gamma = 0.99
lmbda = 0.9
tau = 0.001
annealing_frames = 1_000_000


# --- environment (the tutorial's helpers) ----------------------------------------------------
def make_env(from_pixels=False):
    """Create a base ``env``."""
    global env_library
    global env_name

    if backend == "gym":
        env_name = "HalfCheetah-v4"
        env_args = (env_name,)
        env_library = GymEnv
    else:
        raise NotImplementedError

    env_kwargs = {
        "device": device,
        "from_pixels": from_pixels,
        "pixels_only": from_pixels,
        "frame_skip": 2,
    }
    env = env_library(*env_args, **env_kwargs)
    return env


def make_transformed_env(env):
    """Apply transforms to the ``env`` (such as reward scaling and state normalization)."""
    env = TransformedEnv(env)
    env.append_transform(RewardScaling(loc=0.0, scale=reward_scaling))
    selected_keys = list(env.observation_spec.keys())
    out_key = "observation_vector"
    env.append_transform(CatTensors(in_keys=selected_keys, out_key=out_key))
    env.append_transform(ObservationNorm(in_keys=[out_key], standard_normal=True))
    env.append_transform(DoubleToFloat())
    env.append_transform(StepCounter(max_frames_per_traj))
    env.append_transform(InitTracker())
    return env


def parallel_env_constructor(env_per_collector, transform_state_dict):
    if env_per_collector == 1:

        def make_t_env():
            env = make_transformed_env(make_env())
            env.transform[2].init_stats(3)
            env.transform[2].loc.copy_(transform_state_dict["loc"])
            env.transform[2].scale.copy_(transform_state_dict["scale"])
            return env

        env_creator = EnvCreator(make_t_env)
        return env_creator

    parallel_env = ParallelEnv(
        num_workers=env_per_collector,
        create_env_fn=EnvCreator(lambda: make_env()),
        create_env_kwargs=None,
        pin_memory=False,
    )
    env = make_transformed_env(parallel_env)
    # we call `init_stats` for a limited number of steps, just to instantiate
    # the lazy buffers.
    env.transform[2].init_stats(3, cat_dim=1, reduce_dim=[0, 1])
    env.transform[2].load_state_dict(transform_state_dict)
    return env


def get_env_stats():
    """Gets the stats of an environment."""
    proof_env = make_transformed_env(make_env())
    t = proof_env.transform[2]
    t.init_stats(init_env_steps)
    transform_state_dict = t.state_dict()
    proof_env.close()
    return transform_state_dict


def make_replay_buffer(buffer_size, batch_size, random_crop_len, prefetch=3, prb=False):
    if prb:
        sampler = PrioritizedSampler(
            max_capacity=buffer_size,
            alpha=0.7,
            beta=0.5,
        )
    else:
        sampler = RandomSampler()
    replay_buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(
            buffer_size,
            scratch_dir=buffer_scratch_dir,
        ),
        batch_size=batch_size,
        sampler=sampler,
        pin_memory=False,
        prefetch=prefetch,
        transform=RandomCropTensorDict(random_crop_len, sample_dim=1),
    )
    return replay_buffer


tmpdir = tempfile.TemporaryDirectory()
buffer_scratch_dir = tmpdir.name


def ceil_div(x, y):
    return -x // (-y)


@pytest.fixture(scope="module")
def transform_state_dict():
    torch.manual_seed(0)
    return get_env_stats()


# --- the tutorial's loss ------------------------------------------------------------------
def _init(self, actor_network, value_network) -> None:
    from rl_trainers.modules import ActorCriticWrapper

    super(type(self), self).__init__()
    self.convert_to_functional(actor_network, "actor_network", create_target_params=True)
    self.convert_to_functional(
        value_network,
        "value_network",
        create_target_params=True,
        compare_against=list(actor_network.parameters()),
    )
    self.actor_in_keys = actor_network.in_keys
    actor_critic = ActorCriticWrapper(actor_network, value_network)
    self.actor_critic = actor_critic
    self.loss_function = "l2"


default_value_estimator = ValueEstimators.TD0


def make_value_estimator(self, value_type: ValueEstimators, **hyperparams):
    from rl_trainers.objectives.utils import default_value_kwargs
    from rl_trainers.objectives.value import TD0Estimator, TD1Estimator, TDLambdaEstimator

    hp = dict(default_value_kwargs(value_type))
    if hasattr(self, "gamma"):
        hp["gamma"] = self.gamma
    hp.update(hyperparams)
    value_key = "state_action_value"
    if value_type == ValueEstimators.TD1:
        self._value_estimator = TD1Estimator(value_network=self.actor_critic, **hp)
    elif value_type == ValueEstimators.TD0:
        self._value_estimator = TD0Estimator(value_network=self.actor_critic, **hp)
    elif value_type == ValueEstimators.GAE:
        raise NotImplementedError(
            f"Value type {value_type} it not implemented for loss {type(self)}."
        )
    elif value_type == ValueEstimators.TDLambda:
        self._value_estimator = TDLambdaEstimator(value_network=self.actor_critic, **hp)
    else:
        raise NotImplementedError(f"Unknown value type {value_type}")
    self._value_estimator.set_keys(value=value_key)


def _loss_actor(self, tensordict) -> torch.Tensor:
    td_copy = tensordict.select(*self.actor_in_keys)
    # Get an action from the actor network: since we made it functional, we need to pass the params
    with self.actor_network_params.to_module(self.actor_network):
        td_copy = self.actor_network(td_copy)
    # get the value associated with that action
    with self.value_network_params.detach().to_module(self.value_network):
        td_copy = self.value_network(td_copy)
    return -td_copy.get("state_action_value")


def _loss_value(self, tensordict):
    td_copy = tensordict.clone()
    # V(s, a)
    with self.value_network_params.to_module(self.value_network):
        self.value_network(td_copy)
    pred_val = td_copy.get("state_action_value").squeeze(-1)
    # we manually reconstruct the parameters of the actor-critic, where the first
    # set of parameters belongs to the actor and the second to the value function.
    target_params = TensorDict(
        {
            "module": {
                "0": self.target_actor_network_params,
                "1": self.target_value_network_params,
            }
        },
        batch_size=self.target_actor_network_params.batch_size,
        device=self.target_actor_network_params.device,
    )
    with target_params.to_module(self.actor_critic):
        target_value = self.value_estimator.value_estimate(tensordict).squeeze(-1)
    loss_value = distance_loss(pred_val, target_value, loss_function=self.loss_function)
    td_error = (pred_val - target_value).pow(2)
    return loss_value, td_error, pred_val, target_value


def _forward(self, input_tensordict: TensorDictBase) -> TensorDict:
    loss_value, td_error, pred_val, target_value = self.loss_value(input_tensordict)
    td_error = td_error.detach()
    td_error = td_error.unsqueeze(input_tensordict.ndimension())
    if input_tensordict.device is not None:
        td_error = td_error.to(input_tensordict.device)
    input_tensordict.set("td_error", td_error, inplace=True)
    loss_actor = self.loss_actor(input_tensordict)
    return TensorDict(
        source={
            "loss_actor": loss_actor.mean(),
            "loss_value": loss_value.mean(),
            "pred_value": pred_val.mean().detach(),
            "target_value": target_value.mean().detach(),
            "pred_value_max": pred_val.max().detach(),
            "target_value_max": target_value.max().detach(),
        },
        batch_size=[],
    )


class DDPGLoss(LossModule):
    default_value_estimator = default_value_estimator
    make_value_estimator = make_value_estimator

    __init__ = _init
    forward = _forward
    loss_value = _loss_value
    loss_actor = _loss_actor


def make_ddpg_actor(transform_state_dict, device="cpu"):
    proof_environment = make_transformed_env(make_env())
    proof_environment.transform[2].init_stats(3)
    proof_environment.transform[2].load_state_dict(transform_state_dict)
    out_features = proof_environment.action_spec.shape[-1]
    actor_net = DdpgMlpActor(action_dim=out_features)
    in_keys = ["observation_vector"]
    out_keys = ["param"]
    actor = TensorDictModule(actor_net, in_keys=in_keys, out_keys=out_keys)
    actor = ProbabilisticActor(
        actor,
        distribution_class=TanhDelta,
        in_keys=["param"],
        spec=Composite(action=proof_environment.action_spec),
    ).to(device)
    q_net = DdpgMlpQNet()
    in_keys = in_keys + ["action"]
    qnet = ValueOperator(in_keys=in_keys, module=q_net).to(device)
    # initialize lazy modules
    qnet(actor(proof_environment.reset().to(device)))
    return actor, qnet


# --- tests ----------------------------------------------------------------------------------
def test_environment_transforms_and_normalisation_stats(transform_state_dict):
    assert set(transform_state_dict.keys()) >= {"loc", "scale"}
    assert transform_state_dict["loc"].shape == (17,)
    assert (transform_state_dict["scale"] > 0).all()

    env = make_transformed_env(make_env())
    env.transform[2].init_stats(3)
    env.transform[2].load_state_dict(transform_state_dict)
    check_env_specs(env)
    td = env.rollout(10)
    assert td["observation_vector"].shape == (10, 17)
    assert td["observation_vector"].dtype == torch.float32
    assert td["next", "step_count"][-1].item() == 10
    assert td["is_init"][0].item() and not td["is_init"][1:].any()
    raw = make_env()
    env.set_seed(3)
    raw.set_seed(3)
    obs, raw_obs = env.reset()["observation_vector"], raw.reset()["observation"]
    # ObservationNorm(standard_normal=True): (x - loc) / scale with the measured stats
    want = (raw_obs - transform_state_dict["loc"]) / transform_state_dict["scale"]
    torch.testing.assert_close(obs, want.float())
    env.close()
    raw.close()


def test_parallel_env_constructor(transform_state_dict):
    parallel_env = parallel_env_constructor(
        env_per_collector=env_per_collector, transform_state_dict=transform_state_dict
    )
    try:
        norm = parallel_env.transform[2]
        torch.testing.assert_close(norm.loc, transform_state_dict["loc"])
        td = parallel_env.rollout(4)
        assert td.batch_size == (env_per_collector, 4)
        assert td["next", "observation_vector"].shape == (env_per_collector, 4, 17)
        r = td["next", "reward"]
        assert torch.isfinite(r).all()
    finally:
        parallel_env.close()
    creator = parallel_env_constructor(1, transform_state_dict)
    env = creator()
    torch.testing.assert_close(env.transform[2].scale, transform_state_dict["scale"])
    env.close()


def test_random_crop_tensordict_cuts_windows_of_each_trajectory():
    data = TensorDict(
        {"obs": torch.arange(4 * 200).view(4, 200).float(), ("next", "r"): torch.ones(4, 200, 1)},
        [4, 200],
    )
    crop = RandomCropTensorDict(25, sample_dim=1)
    out = crop(data)
    assert out.batch_size == (4, 25)
    assert out["next", "r"].shape == (4, 25, 1)
    steps = out["obs"] - torch.arange(4).view(4, 1) * 200
    # each window: 25 consecutive steps of its own trajectory
    assert ((steps[:, 1:] - steps[:, :-1]) == 1).all()
    assert ((steps >= 0) & (steps < 200)).all()
    starts = {int(s) for _ in range(20) for s in crop(data)["obs"][:, 0] % 200}
    assert len(starts) > 4  # random starts
    with pytest.raises(RuntimeError, match="Cannot crop windows of 25 steps"):
        crop(data[:, :10])


def test_tutorial_ddpg_networks_and_ou_exploration(transform_state_dict):
    from rl_trainers.modules import OrnsteinUhlenbeckProcessWrapper

    proof_environment = make_transformed_env(make_env())
    proof_environment.transform[2].init_stats(3)
    proof_environment.transform[2].load_state_dict(transform_state_dict)
    out_features = proof_environment.action_spec.shape[-1]
    actor = TensorDictModule(
        DdpgMlpActor(action_dim=out_features),
        in_keys=["observation_vector"],
        out_keys=["param"],
    )
    actor = ProbabilisticActor(
        actor,
        distribution_class=TanhDelta,
        in_keys=["param"],
        spec=CompositeSpec(action=proof_environment.action_spec),
    )
    qnet = ValueOperator(in_keys=["observation_vector", "action"], module=DdpgMlpQNet())
    td = qnet(actor(proof_environment.reset()))
    assert td["state_action_value"].shape == (1,)
    explore = OrnsteinUhlenbeckProcessWrapper(actor, annealing_num_steps=1000)
    out = explore(proof_environment.reset())
    assert proof_environment.action_spec.is_in(out["action"])


def test_tutorial_ddpg_loss_class(transform_state_dict):
    actor, qnet = make_ddpg_actor(transform_state_dict)
    loss_module = DDPGLoss(actor, qnet)
    loss_module.make_value_estimator(ValueEstimators.TDLambda, gamma=gamma, lmbda=lmbda)
    env = make_transformed_env(make_env())
    env.transform[2].init_stats(3)
    env.transform[2].load_state_dict(transform_state_dict)
    with torch.no_grad():
        batch = env.rollout(8, actor).unsqueeze(0)  # one [1, 8] window, as the crops are
    loss_dict = loss_module(batch)
    assert torch.isfinite(loss_dict["loss_actor"]) and torch.isfinite(loss_dict["loss_value"])
    assert batch["td_error"].shape == (1, 8, 1)
    # the actor loss reaches the actor only (the critic's parameters enter detached) ...
    loss_dict["loss_actor"].backward()
    assert all(p.grad is not None for p in actor.parameters())
    assert all(p.grad is None for p in qnet.parameters())
    actor.zero_grad(set_to_none=True)
    # ... and the value loss the critic only (its targets come from the target copies)
    loss_dict["loss_value"].backward()
    assert all(p.grad is None for p in actor.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in qnet.parameters())
    # the optimisers of the tutorial train the networks passed in
    optimizer_value = torch.optim.Adam(loss_module.value_network_params.values(True, True))
    before = [p.detach().clone() for p in qnet.parameters()]
    optimizer_value.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, qnet.parameters(), strict=True))
    # the targets stayed where they were until the updater moves them
    target = loss_dict["target_value"]
    assert torch.equal(loss_module(batch.clone())["target_value"], target)
    SoftUpdate(loss_module, eps=1 - tau).step()
    assert not torch.equal(loss_module(batch.clone())["target_value"], target)


def test_replay_buffer_stores_trajectories(transform_state_dict, tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "buffer_scratch_dir", str(tmp_path))  # the loop's is fresh
    replay_buffer = make_replay_buffer(
        buffer_size=ceil_div(1000, traj_len), batch_size=3, random_crop_len=random_crop_len
    )
    steps = torch.arange(env_per_collector * traj_len, dtype=torch.float32)
    batch = TensorDict(
        {"step": steps.view(env_per_collector, traj_len)}, [env_per_collector, traj_len]
    )
    replay_buffer.extend(batch)
    assert len(replay_buffer) == env_per_collector  # one item per trajectory
    sample = replay_buffer.sample()
    assert sample.batch_size == (3, random_crop_len)
    assert (sample["step"].diff(dim=1) == 1).all()  # windows of consecutive steps


def test_training_loop(transform_state_dict):
    """The tutorial's loop as written (sizes shrunk): its own DDPGLoss, OU exploration,
    windows cropped from stored trajectories, TD(lambda) targets."""
    torch.manual_seed(0)
    parallel_env = parallel_env_constructor(env_per_collector, transform_state_dict)
    actor, qnet = make_ddpg_actor(transform_state_dict, device=device)
    actor_model_explore = TensorDictSequential(
        actor,
        OrnsteinUhlenbeckProcessModule(
            spec=actor.spec.clone(), annealing_num_steps=annealing_frames
        ).to(device),
    )
    actor_model_explore.share_memory()
    collector = SyncDataCollector(
        parallel_env,
        policy=actor_model_explore,
        total_frames=total_frames,
        frames_per_batch=frames_per_batch,
        init_random_frames=init_random_frames,
        reset_at_each_iter=False,
        split_trajs=False,
        device=device,
        exploration_type=ExplorationType.RANDOM,
    )
    record_env = make_transformed_env(make_env())
    record_env.transform[2].init_stats(3)
    record_env.transform[2].load_state_dict(transform_state_dict)
    recorder = Recorder(
        record_frames=20,  # 1000
        policy_exploration=actor_model_explore,
        environment=record_env,
        exploration_type=ExplorationType.MEAN,
        record_interval=2,  # 10
    )
    batch_size = ceil_div(64 * frames_per_batch, update_to_data * random_crop_len)
    replay_buffer = make_replay_buffer(
        buffer_size=ceil_div(1000, traj_len),
        batch_size=batch_size,
        random_crop_len=random_crop_len,
        prefetch=3,
        prb=False,
    )
    loss_module = DDPGLoss(actor, qnet)
    loss_module.make_value_estimator(ValueEstimators.TDLambda, gamma=gamma, lmbda=lmbda)
    target_net_updater = SoftUpdate(loss_module, eps=1 - tau)
    optimizer_actor = torch.optim.Adam(
        loss_module.actor_network_params.values(True, True), lr=1e-4, weight_decay=0.0
    )
    optimizer_value = torch.optim.Adam(
        loss_module.value_network_params.values(True, True), lr=1e-3, weight_decay=1e-2
    )
    actor_before = [p.detach().clone() for p in actor.parameters()]
    target_before = loss_module.target_value_network_params.clone()

    rewards, rewards_eval, losses = [], [], []
    collected_frames = 0
    for i, tensordict in enumerate(collector):
        collector.update_policy_weights_()
        current_frames = tensordict.numel()
        collected_frames += current_frames
        replay_buffer.extend(tensordict.cpu())
        if collected_frames >= init_random_frames:
            for _ in range(update_to_data):
                sampled_tensordict = replay_buffer.sample().to(device)
                assert sampled_tensordict.batch_size == (batch_size, random_crop_len)
                loss_dict = loss_module(sampled_tensordict)
                loss_dict["loss_actor"].backward()
                gn1 = torch.nn.utils.clip_grad_norm_(
                    loss_module.actor_network_params.values(True, True), 10.0
                )
                optimizer_actor.step()
                optimizer_actor.zero_grad()
                loss_dict["loss_value"].backward()
                gn2 = torch.nn.utils.clip_grad_norm_(
                    loss_module.value_network_params.values(True, True), 10.0
                )
                optimizer_value.step()
                optimizer_value.zero_grad()
                gn = (gn1**2 + gn2**2) ** 0.5
                target_net_updater.step()
                losses.append((loss_dict["loss_actor"].item(), loss_dict["loss_value"].item()))
        rewards.append((i, tensordict["next", "reward"].mean().item()))
        td_record = recorder(None)
        if td_record is not None:
            rewards_eval.append((i, td_record["r_evaluation"].item()))
        actor_model_explore[1].step(current_frames)
    collector.shutdown()

    assert collected_frames == total_frames
    assert len(rewards) == total_frames // frames_per_batch
    assert tensordict.batch_size == (env_per_collector, traj_len)
    assert len(replay_buffer) == len(rewards) * env_per_collector  # trajectories
    assert len(losses) == update_to_data * len(rewards)  # collected_frames >= init_random_frames
    assert all(torch.isfinite(torch.tensor(v)).all() for v in losses)
    assert torch.isfinite(gn)
    assert rewards_eval and all(torch.isfinite(torch.tensor(r)) for _, r in rewards_eval)
    assert any(not torch.equal(b, p) for b, p in zip(actor_before, actor.parameters(), strict=True))
    moved = loss_module.target_value_network_params.clone() - target_before
    assert any(v.abs().sum() > 0 for v in moved.values(True, True))


def test_recorder_output_has_item(transform_state_dict):
    env = make_transformed_env(make_env())
    env.transform[2].init_stats(3)
    env.transform[2].load_state_dict(transform_state_dict)
    actor, _ = make_ddpg_actor(transform_state_dict)
    recorder = Recorder(
        record_frames=5,
        policy_exploration=actor,
        environment=env,
        exploration_type=ExplorationType.MEAN,
        record_interval=1,
    )
    out = recorder(None)
    # torchrl's Recorder gives 0-d tensors; the tutorial calls td_record["r_evaluation"].item()
    assert out["r_evaluation"].shape == () and out["total_r_evaluation"].shape == ()
    assert isinstance(out["r_evaluation"].item(), float)
