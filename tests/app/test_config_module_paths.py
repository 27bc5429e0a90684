"""Config nodes importable from the module paths torchrl's documentation gives."""

from __future__ import annotations

from hydra.utils import instantiate
from omegaconf import OmegaConf

from rl_trainers.trainers.algorithms.configs.envs_libs import GymEnvConfig
from rl_trainers.trainers.algorithms.configs.utils import AdamConfig, AdamWConfig


def test_optimizer_nodes_from_torchrl_path_build_optimizers():
    import torch

    params = [torch.nn.Parameter(torch.zeros(3))]
    adam = instantiate(OmegaConf.structured(AdamConfig(lr=0.01)), params)
    adamw = instantiate(OmegaConf.structured(AdamWConfig(lr=0.02)), params)
    assert type(adam) is torch.optim.Adam and adam.param_groups[0]["lr"] == 0.01
    assert type(adamw) is torch.optim.AdamW and adamw.param_groups[0]["lr"] == 0.02


def test_gym_env_node_from_torchrl_path_builds_the_env():
    cfg = OmegaConf.structured(GymEnvConfig(env_name="Pendulum-v1", num_envs=2))
    env = instantiate(cfg)
    try:
        td = env.reset()
        assert td["observation"].shape == (2, 3)
    finally:
        env.close()
