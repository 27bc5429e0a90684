"""torchrl's config node names for envs, replay buffers and transforms build rl_trainers'
objects: batched and transformed envs a collector rolls out, buffers that store and sample
as their storage, sampler and writer say, and a trainer run built from them."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_trainers.collectors import SyncDataCollector
from rl_trainers.envs import RandomPolicy
from rl_trainers.modules import (
    MLP,
    NormalParamExtractor,
    ProbabilisticActor,
    TanhNormal,
    ValueOperator,
)
from rl_trainers.objectives import SACLoss, SoftUpdate
from rl_trainers.trainers.algorithms import SACTrainer
from rl_trainers.trainers.algorithms.configs import (
    AdamConfig,
    BatchedEnvConfig,
    ComposeConfig,
    DoubleToFloatConfig,
    GymEnvConfig,
    LazyMemmapStorageConfig,
    LazyTensorStorageConfig,
    ListStorageConfig,
    PrioritizedSamplerConfig,
    RandomSamplerConfig,
    RewardScalingConfig,
    RoundRobinWriterConfig,
    SamplerWithoutReplacementConfig,
    SliceSamplerConfig,
    StepCounterConfig,
    SyncDataCollectorConfig,
    TensorDictMaxValueWriterConfig,
    TensorDictReplayBufferConfig,
    TensorDictRoundRobinWriterConfig,
    TensorStorageConfig,
    TransformedEnvConfig,
)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("envs", "BatchedEnvConfig"),
        ("envs", "TransformedEnvConfig"),
        ("data", "TensorDictReplayBufferConfig"),
        ("data", "LazyMemmapStorageConfig"),
        ("data", "PrioritizedSamplerConfig"),
        ("data", "TensorDictRoundRobinWriterConfig"),
        ("transforms", "ComposeConfig"),
        ("transforms", "StepCounterConfig"),
        ("transforms", "VecNormConfig"),
    ],
)
def test_nodes_import_from_torchrls_module_paths(module, name):
    path = f"rl_trainers.trainers.algorithms.configs.{module}"
    node = getattr(importlib.import_module(path), name)
    configs = importlib.import_module("rl_trainers.trainers.algorithms.configs")
    assert getattr(configs, name) is node and name in configs.__all__


def _torchrl_named_nodes() -> list[type]:
    modules = [
        importlib.import_module(f"rl_trainers.trainers.algorithms.configs.{name}")
        for name in ("envs", "data", "transforms")
    ]
    return [
        node
        for module in modules
        for name, node in vars(module).items()
        if name.endswith("Config")
        # defined in that module of the schema (rl_trainers.configs.<name>), not imported
        and node.__module__ == module.__name__.replace(".trainers.algorithms.configs.", ".configs.")
        and name not in ("GymEnvConfig", "ReplayBufferConfig")  # the root nodes, built elsewhere
        and name not in ("BatchedEnvConfig", "TransformedEnvConfig")  # need an env, below
    ]


#: the fields a node needs set (its class raises, naming them, otherwise)
CHOICES = {
    "ClipTransformConfig": {"low": -1.0},
    "RewardClippingConfig": {"clamp_max": 1.0},
    "SliceSamplerConfig": {"slice_len": 4},
    "SliceSamplerWithoutReplacementConfig": {"slice_len": 4},
    "PrioritizedSliceSamplerConfig": {"slice_len": 4},
}


@pytest.mark.parametrize("node", _torchrl_named_nodes(), ids=lambda n: n.__name__)
def test_each_node_builds_the_class_it_is_named_after(node, tmp_path):
    kwargs = CHOICES.get(node.__name__, {})
    if "scratch_dir" in {f.name for f in dataclasses.fields(node)}:
        kwargs["scratch_dir"] = str(tmp_path)
    built = instantiate(node(**kwargs))
    assert type(built).__name__ == node.__name__.removesuffix("Config")


def _collect(env, frames: int = 300, frames_per_batch: int = 100):
    collector = SyncDataCollector(
        env, RandomPolicy(env.action_spec), frames_per_batch=frames_per_batch, total_frames=frames
    )
    try:
        return [batch for batch in collector]
    finally:
        collector.shutdown()


@pytest.mark.parametrize("batched_env_type", ["serial", "parallel"])
def test_batched_gym_env_node_is_one_env_per_worker(batched_env_type):
    # written as in torchrl: the gym node describes one env, num_workers of them are batched
    node = BatchedEnvConfig(
        create_env_fn=GymEnvConfig(env_name="CartPole-v1"),
        num_workers=4,
        batched_env_type=batched_env_type,
    )
    env = instantiate(node)
    try:
        assert env.batch_size == torch.Size([4])
        batches = _collect(env)
        assert sum(b.numel() for b in batches) == 300
        assert all(b.batch_size == torch.Size([4, 25]) for b in batches)
        # four independent sub-envs, and the node's own transforms (the episode return) ran
        first = batches[0]["observation"][:, 0]
        assert len({tuple(row.tolist()) for row in first}) == 4
        assert ("next", "episode_reward") in batches[0].keys(True)
    finally:
        env.close()


def test_torchrl_training_env_form_with_a_composed_transform():
    # torchrl's training_env: create_env_fn.base_env (the gym env) and create_env_fn.transform
    node = OmegaConf.structured(
        BatchedEnvConfig(
            create_env_fn=TransformedEnvConfig(
                base_env=GymEnvConfig(env_name="CartPole-v1"),
                transform=ComposeConfig(
                    transforms=[
                        StepCounterConfig(max_steps=1000),
                        RewardScalingConfig(scale=0.5),
                        DoubleToFloatConfig(),
                    ]
                ),
            ),
            num_workers=3,
            batched_env_type="serial",
        )
    )
    # overrides at torchrl's paths (training_env.create_env_fn.base_env.env_name=...)
    OmegaConf.update(node, "create_env_fn.base_env.env_name", "Pendulum-v1")
    OmegaConf.update(node, "create_env_fn.transform.transforms[0].max_steps", 40)
    env = instantiate(node)
    try:
        assert env.batch_size == torch.Size([3])
        batches = _collect(env, frames=300, frames_per_batch=150)
        batch = torch.cat(batches, dim=1)
        assert batch.batch_size == torch.Size([3, 100])
        steps = batch["next", "step_count"].squeeze(-1)
        truncated = batch["next", "truncated"].squeeze(-1)
        assert steps.max() == 40 and bool(truncated[steps == 40].all())
        assert int(truncated.sum()) == 3 * 2  # every sub-env cut at steps 40 and 80
        rewards = batch["next", "reward"]
        assert rewards.min() >= -16.3 * 0.5 - 1e-4 and rewards.max() <= 0  # scaled Pendulum
    finally:
        env.close()


def test_batched_env_of_a_plain_env_node_instantiates_it_in_each_worker():
    node = BatchedEnvConfig(
        create_env_fn={"_target_": "rl_trainers.envs.GymEnv", "env_name": "CartPole-v1"},
        num_workers=2,
    )
    env = instantiate(OmegaConf.structured(node))
    try:
        assert env.batch_size == torch.Size([2])
        assert _collect(env, frames=200, frames_per_batch=100)[0].batch_size == (2, 50)
    finally:
        env.close()


def test_batched_env_takes_a_callable_and_torchrls_partial_gym_node():
    from rl_trainers.envs import GymEnv
    from rl_trainers.trainers.helpers.torchrl_nodes import make_batched_env

    env = make_batched_env(lambda: GymEnv("CartPole-v1"), num_workers=2, batched_env_type="serial")
    assert env.batch_size == torch.Size([2])
    env.close()
    # torchrl's BatchedEnvConfig marks create_env_fn partial; a ported YAML keeps the flag
    node = OmegaConf.structured(BatchedEnvConfig(num_workers=3, batched_env_type="serial"))
    node.create_env_fn = {**OmegaConf.structured(GymEnvConfig()), "_partial_": True}
    env = instantiate(node)
    assert env.batch_size == torch.Size([3])
    env.close()


def test_bad_batched_env_type_names_the_field():
    node = BatchedEnvConfig(create_env_fn=GymEnvConfig(), num_workers=2, batched_env_type="async")
    with pytest.raises(InstantiationException) as info:
        instantiate(node)
    assert "batched_env_type='async' is invalid: one of ['parallel', 'serial']" in str(info.value)


def test_root_env_node_takes_transform_nodes():
    node = GymEnvConfig(
        env_name="CartPole-v1", num_envs=2, transforms=[StepCounterConfig(max_steps=7)]
    )
    env = instantiate(node)
    try:
        rollout = env.rollout(20, break_when_any_done=False)
        steps = rollout["next", "step_count"].squeeze(-1)
        assert steps.max() <= 7 and bool(rollout["next", "truncated"][steps == 7].all())
    finally:
        env.close()


def _transitions(n: int, start: int = 0) -> TensorDict:
    values = torch.arange(start, start + n, dtype=torch.float32)
    return TensorDict({"obs": values.unsqueeze(-1), "id": values.long()}, batch_size=[n])


STORAGES = {
    "lazy_tensor": lambda tmp: LazyTensorStorageConfig(max_size=20),
    "lazy_memmap": lambda tmp: LazyMemmapStorageConfig(max_size=20, scratch_dir=str(tmp)),
    "list": lambda tmp: ListStorageConfig(max_size=20),
    "tensor": lambda tmp: TensorStorageConfig(max_size=20),
}
WRITERS = {
    "round_robin": RoundRobinWriterConfig,
    "td_round_robin": TensorDictRoundRobinWriterConfig,
}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("storage", STORAGES)
def test_buffer_node_keeps_the_newest_items_and_samples_them(storage, writer, tmp_path):
    node = TensorDictReplayBufferConfig(
        storage=STORAGES[storage](tmp_path),
        sampler=RandomSamplerConfig(),
        writer=WRITERS[writer](),
        batch_size=8,
    )
    buffer = instantiate(node)
    buffer.extend(_transitions(50))
    assert len(buffer) == 20  # round robin: the oldest 30 overwritten
    sample = buffer.sample()
    assert sample.batch_size == torch.Size([8])
    assert bool((sample["id"] >= 30).all()) and torch.equal(
        sample["obs"][:, 0], sample["id"].float()
    )


def test_buffer_node_without_replacement_draws_every_item_once_per_pass():
    node = TensorDictReplayBufferConfig(
        storage=LazyTensorStorageConfig(max_size=40),
        sampler=SamplerWithoutReplacementConfig(),
        batch_size=10,
    )
    buffer = instantiate(node)
    buffer.extend(_transitions(40))
    ids = torch.cat([buffer.sample()["id"] for _ in range(4)])
    assert sorted(ids.tolist()) == list(range(40))


def test_prioritized_sampler_node_draws_by_priority():
    torch.manual_seed(0)
    node = TensorDictReplayBufferConfig(
        storage=LazyTensorStorageConfig(max_size=10),
        sampler=PrioritizedSamplerConfig(max_capacity=10, alpha=1.0, beta=1.0),
        batch_size=200,
    )
    buffer = instantiate(node)
    buffer.extend(_transitions(10))
    priorities = torch.full((10,), 1e-3)
    priorities[3] = 100.0
    buffer.update_priority(torch.arange(10), priorities)
    sample = buffer.sample()
    assert (sample["id"] == 3).float().mean() > 0.9
    # importance weights correct for it: the favoured item's are far below the others'
    assert bool((sample["_weight"][sample["id"] == 3] < 0.01).all())


def test_max_value_writer_node_keeps_the_best_items():
    node = TensorDictReplayBufferConfig(
        storage=LazyTensorStorageConfig(max_size=5),
        writer=TensorDictMaxValueWriterConfig(rank_key="obs"),
        batch_size=5,
    )
    buffer = instantiate(node)
    for start in (0, 10, 5):
        buffer.extend(_transitions(5, start))
    assert sorted(buffer[:]["id"].tolist()) == [10, 11, 12, 13, 14]


def test_slice_sampler_node_samples_whole_slices_of_one_trajectory():
    node = TensorDictReplayBufferConfig(
        storage=LazyTensorStorageConfig(max_size=100),
        sampler=SliceSamplerConfig(slice_len=5, traj_key="traj"),
        batch_size=20,
    )
    buffer = instantiate(node)
    data = _transitions(40)
    data["traj"] = torch.arange(40) // 10  # four trajectories of ten steps
    buffer.extend(data)
    slices = buffer.sample()["id"].view(4, 5)
    assert bool((slices.diff(dim=1) == 1).all())  # contiguous steps
    assert bool((slices[:, 0] // 10 == slices[:, -1] // 10).all())  # within one trajectory


def _tanh_normal_actor(env):
    spec = env.action_spec_unbatched  # torchrl's examples size batched envs' actors so
    net = torch.nn.Sequential(
        MLP(
            in_features=env.observation_spec["observation"].shape[-1],
            out_features=2 * spec.shape[-1],
            num_cells=[32],
        ),
        NormalParamExtractor(),
    )
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        spec=spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high},
        return_log_prob=True,
    )


def test_sac_trainer_in_torchrls_form_built_from_instantiated_nodes():
    torch.manual_seed(0)
    env = instantiate(
        BatchedEnvConfig(
            create_env_fn=GymEnvConfig(env_name="Pendulum-v1"),
            num_workers=2,
            batched_env_type="serial",
        )
    )
    env.set_seed(0)
    actor = _tanh_normal_actor(env)
    size = env.observation_spec["observation"].shape[-1] + env.action_spec.shape[-1]
    qvalue = ValueOperator(
        MLP(in_features=size, out_features=1, num_cells=[32]), in_keys=["observation", "action"]
    )
    loss = SACLoss(actor, qvalue, action_spec=env.action_spec_unbatched)
    buffer = instantiate(
        TensorDictReplayBufferConfig(
            storage=LazyTensorStorageConfig(max_size=1000),
            sampler=RandomSamplerConfig(),
            batch_size=32,
        )
    )
    collector = instantiate(
        SyncDataCollectorConfig(frames_per_batch=64),
        create_env_fn=env,
        policy=actor,
        total_frames=256,
    )
    before = [p.detach().clone() for p in actor.parameters()]
    trainer = SACTrainer(
        collector=collector,
        total_frames=256,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=instantiate(AdamConfig(lr=1e-3), loss.parameters()),
        replay_buffer=buffer,
        target_net_updater=SoftUpdate(loss, tau=0.05),
        episode_reward_key="episode_reward",
        progress_bar=False,
    )
    try:
        trainer.train()
    finally:
        collector.shutdown()
        env.close()
    assert trainer.collected_frames == 256
    assert len(buffer) == 256  # every collected frame written, as batches of [2, 32]
    assert trainer._optim_count == 4 * 2
    assert any(not torch.equal(a, b) for a, b in zip(before, actor.parameters()))
