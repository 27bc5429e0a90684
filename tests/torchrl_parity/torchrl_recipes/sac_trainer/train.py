"""A torchrl-style entry point that stops cleanly on Ctrl-C (after the current batch)."""

import hydra

from rl_trainers.trainers.algorithms.configs import *  # noqa: F401, F403  (registers the nodes)
from rl_trainers.trainers.algorithms.configs import instantiate_trainer


@hydra.main(config_path="config", config_name="config", version_base="1.3")
def main(cfg):
    trainer = instantiate_trainer(cfg)
    with trainer.stop_on_signal():
        trainer.train()


if __name__ == "__main__":
    main()
