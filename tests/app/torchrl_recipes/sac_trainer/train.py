# Copyright (c) Meta Platforms, Inc. and affiliates.
# This source code is licensed under the MIT license found in the
# LICENSE file in the root directory of this source tree.

import hydra
from rl_trainers.trainers.algorithms.configs import *  # noqa: F401, F403
from rl_trainers.trainers.algorithms.configs import instantiate_trainer


@hydra.main(config_path="config", config_name="config", version_base="1.3")
def main(cfg):
    trainer = instantiate_trainer(cfg)
    with trainer.stop_on_signal():
        trainer.train()


if __name__ == "__main__":
    main()
