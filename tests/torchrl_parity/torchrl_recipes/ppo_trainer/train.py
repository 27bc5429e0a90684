"""A torchrl-style entry point: the composed ``trainer`` node builds the whole trainer."""

import hydra

from rl_trainers.trainers.algorithms.configs import PPOTrainerConfig  # noqa: F401  (registers the nodes)


@hydra.main(config_path="config", config_name="config", version_base="1.3")
def main(cfg):
    hydra.utils.instantiate(cfg.trainer).train()


if __name__ == "__main__":
    main()
